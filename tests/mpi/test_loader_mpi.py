"""NodeLoader over a distributed sampler: every rank yields the same number
of steps, the ranks' minibatches cover the seeds once per epoch, and each
minibatch is the one the single-process sampler gives for its (seed, epoch,
batch id).  Expectations are computed from the communicator, so the module
runs under any number of ranks."""

import numpy as np
import pytest

import spla
from sampling import GraphSAGE, LADIES, FeatureStore, NodeLoader
from sampling.datasets import load

torch = pytest.importorskip("torch")


def grids(p):
    return [("1d", 1)] + [("1.5d", c) for c in range(2, p + 1) if p % c == 0]


@pytest.fixture(scope="module")
def cora():
    return load("cora")


@pytest.fixture(scope="module")
def features(cora):
    return np.random.default_rng(1).random((cora.num_nodes, 5)).astype(np.float32)


SAMPLERS = {
    "sage": lambda G: GraphSAGE(G, [4, 3]),
    "sage_all": lambda G: GraphSAGE(G, [-1, 2]),
    "ladies": lambda G: LADIES(G, [30, 20]),
}


def check_epoch(comm, cora, loader, local_sampler, epoch, batch_size, *, drop_last=False,
                features=None):
    mbs = list(loader)
    steps = comm.allgather(len(mbs))
    assert len(set(steps)) == 1 and steps[0] == len(loader), steps
    seeds = np.concatenate([np.asarray(mb.seeds) for mb in mbs])
    everyone = np.concatenate(comm.allgather(seeds))
    ids = sorted(i for r in comm.allgather([mb.index for mb in mbs]) for i in r)
    p, N = comm.size, cora.train_idx.size
    m = p * (N // (p * batch_size)) if drop_last else p * -(-N // (p * batch_size))
    assert ids == list(range(m))
    # Step s of rank r is minibatch s * p + r, whatever the bulk size.
    assert [mb.index for mb in mbs] == [s * p + comm.rank for s in range(len(mbs))]
    assert np.unique(everyone).size == everyone.size          # each seed once
    if drop_last:
        assert everyone.size == m * batch_size
        assert all(mb.batch_size == batch_size for mb in mbs)
        assert set(everyone.tolist()) <= set(cora.train_idx.tolist())
    else:
        assert np.array_equal(np.sort(everyone), np.sort(cora.train_idx))
        sizes = [s for r in comm.allgather([mb.batch_size for mb in mbs]) for s in r]
        assert max(sizes) <= batch_size
        if p > 1:                      # near-equal minibatches; one rank: epoch_batches' cut
            assert max(sizes) - min(sizes) <= 1
    for mb in mbs:
        assert mb.meta["epoch"] == epoch
        ref, = local_sampler.sample([np.asarray(mb.seeds)], seed=loader.seed, epoch=epoch,
                                    batch_ids=[mb.index])
        assert mb == ref, (mb.index, epoch)
        if features is not None:
            assert np.array_equal(mb.x.numpy(), features[np.asarray(mb.input_nodes)])
            assert np.array_equal(mb.y.numpy(), cora.y[np.asarray(mb.seeds)])
    return mbs


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("replicate", [False, True])
def test_every_rank_same_steps_and_single_process_minibatches(comm, cora, features, name,
                                                              replicate):
    local = SAMPLERS[name](cora.A)
    for layout, c in grids(comm.size):
        D = spla.distribute(cora.A, comm, layout=layout, replication=c,
                            replicate_graph=replicate)
        loader = NodeLoader(SAMPLERS[name](D), cora.train_idx, 16, features=features,
                            labels=cora.y, bulk=2, seed=3)
        e0 = check_epoch(comm, cora, loader, local, 0, 16, features=features)
        e1 = check_epoch(comm, cora, loader, local, 1, 16, features=features)
        assert [mb.index for mb in e0] == [mb.index for mb in e1]
        assert any(a != b for a, b in zip(e0, e1))


@pytest.mark.parametrize("batch_size", [7, 16, 50])
def test_drop_last_and_batch_sizes(comm, cora, batch_size):
    local = GraphSAGE(cora.A, [3])
    D = spla.distribute(cora.A, comm)
    for drop_last in (False, True):
        make = lambda: NodeLoader(GraphSAGE(D, [3]), cora.train_idx, batch_size,  # noqa: E731
                                  drop_last=drop_last, bulk=3, seed=1)
        if drop_last and cora.train_idx.size < comm.size * batch_size:
            _raises_everywhere(comm, spla.InvalidValue, "argument 'batch_size'", make)
            continue
        loader = make()
        check_epoch(comm, cora, loader, local, 0, batch_size, drop_last=drop_last)


def test_bulk_and_budget_give_the_same_minibatches(comm, cora):
    D = spla.distribute(cora.A, comm)
    sampler = GraphSAGE(D, [4, 3])
    ref = list(NodeLoader(sampler, cora.train_idx, 10, bulk=1, seed=5))
    assert list(NodeLoader(sampler, cora.train_idx, 10, bulk=5, seed=5)) == ref
    # The same budget on every rank (the estimates read each rank's block).
    budget = 2 * max(comm.allgather(sampler.estimate_bytes(10))) + 100
    assert list(NodeLoader(sampler, cora.train_idx, 10, memory_budget=budget, seed=5)) == ref
    shuffled_off = list(NodeLoader(sampler, cora.train_idx, 10, bulk=2, shuffle=False))
    everyone = [i for r in comm.allgather([(mb.index, np.asarray(mb.seeds).tolist())
                                           for mb in shuffled_off]) for i in r]
    order = [v for _, s in sorted(everyone) for v in s]
    assert order == cora.train_idx.tolist()                   # the given order, cut


def test_partitioned_feature_store(comm, cora, features):
    D = spla.distribute(cora.A, comm)
    store = FeatureStore(features, mode="partitioned", comm=comm)
    loader = NodeLoader(GraphSAGE(D, [3, 2]), cora.train_idx, 12, features=store,
                        labels=cora.y, bulk=2, seed=9)
    check_epoch(comm, cora, loader, GraphSAGE(cora.A, [3, 2]), 0, 12, features=features)


def test_local_sampler_data_parallel_over_comm(comm, cora, features):
    """comm= with a sampler on a local graph: each rank samples only its own minibatches,
    the same as the single-process ones (draws keyed by batch id), in the same steps."""
    local = GraphSAGE(cora.A, [4, 3])
    for bulk in (1, 3):
        loader = NodeLoader(local, cora.train_idx, 16, features=features, labels=cora.y,
                            bulk=bulk, seed=3, comm=comm)
        check_epoch(comm, cora, loader, local, 0, 16, features=features)
        it = iter(loader)
        mbs = list(it)
        assert it.stats.bulks == -(-len(mbs) // bulk)
        assert it.stats.sampled_edges == sum(mb.num_sampled_edges for mb in mbs)


def test_partition_gives_each_rank_its_part_first(comm, cora):
    """partition=: rank r trains exactly its seeds_by_part share each epoch, in as many
    steps as every other rank, each minibatch the single-process one of its batch id."""
    from sampling.samplers.batches import seeds_by_part
    local = GraphSAGE(cora.A, [3])
    for layout, c in grids(comm.size):
        P = spla.partition.block(cora.A, comm.size // c)
        D = spla.distribute(cora.A, comm, layout=layout, replication=c, partition=P)
        loader = NodeLoader(GraphSAGE(D, [3]), cora.train_idx, 16, bulk=2, seed=4,
                            partition=P)
        share = seeds_by_part(cora.train_idx, P, comm.size, c)[comm.rank]
        mbs = list(loader)
        assert len(set(comm.allgather(len(mbs)))) == 1 and len(mbs) == len(loader)
        got = np.concatenate([np.asarray(mb.seeds) for mb in mbs])
        assert np.array_equal(np.sort(got), share)
        assert [mb.index for mb in mbs] == [s * comm.size + comm.rank for s in range(len(mbs))]
        for mb in mbs[:3]:
            ref, = local.sample([np.asarray(mb.seeds)], seed=4, epoch=0, batch_ids=[mb.index])
            assert mb == ref


# -- errors: raised on every rank ---------------------------------------------

def _raises_everywhere(comm, cls, match, call):
    with pytest.raises(cls, match=match):
        call()
    assert comm.allreduce(1) == comm.size                      # still in step


def test_too_few_seeds(comm, cora):
    if comm.size < 2:
        pytest.skip("needs two ranks")
    D = spla.distribute(cora.A, comm)
    sampler = GraphSAGE(D, [2])
    _raises_everywhere(comm, spla.InvalidValue, "argument 'seeds'.*one seed per rank",
                       lambda: NodeLoader(sampler, np.arange(comm.size - 1), 4))
    _raises_everywhere(comm, spla.InvalidValue, "argument 'batch_size'",
                       lambda: NodeLoader(sampler, np.arange(comm.size), 4, drop_last=True))
    if comm.size == 3:  # 5 seeds, batch 1: 6 minibatches would be needed
        _raises_everywhere(comm, spla.InvalidValue, "argument 'batch_size'.*at least 2",
                           lambda: NodeLoader(sampler, np.arange(5), 1))


def _same_epoch(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x == y, x.index
        assert torch.equal(x.x, y.x) and torch.equal(x.y, y.y), x.index


@pytest.mark.parametrize("prefetch", [1, 3])
def test_prefetch_distributed_gives_the_same_minibatches(comm, cora, features, prefetch):
    """Sampling and fetching in the background on duplicated communicators while
    the main thread runs its own collectives on ``comm`` (as a training loop's
    Allreduce would): the same minibatches, features and labels as prefetch=0."""
    for layout, c in grids(comm.size)[:2]:
        D = spla.distribute(cora.A, comm, layout=layout, replication=c)
        store = FeatureStore(features, mode="partitioned", comm=comm, replication=c)
        make = lambda k: NodeLoader(GraphSAGE(D, [4, 3]), cora.train_idx, 12,  # noqa: E731
                                    features=store, labels=cora.y, bulk=2, seed=7,
                                    prefetch=k)
        ref = list(make(0))
        loader = make(prefetch)
        got = []
        with spla.comm.counting() as moved:
            for mb in loader:
                got.append(mb)
                assert comm.allreduce(mb.batch_size) > 0      # the main thread's collective
        _same_epoch(got, ref)
        check_epoch(comm, cora, make(prefetch), GraphSAGE(cora.A, [4, 3]), 0, 12,
                    features=features)
        if c < comm.size:                          # the background fetches were handed back
            assert sum(moved.values()) > 0, dict(moved)


def test_prefetch_background_collective_error_is_raised_on_every_rank(comm, cora):
    """A collective argument check failing on one rank's background thread: every
    rank raises it at the same step and the ranks stay in step."""
    class BadOnRank1(GraphSAGE):
        def sample(self, batches, **kw):
            with spla.comm.collective_checks(self.D.comm):
                if kw["batch_ids"][0] >= 2 * comm.size and comm.rank == comm.size - 1:
                    raise spla.InvalidValue("BadOnRank1: a deliberate bad argument")
            return super().sample(batches, **kw)

    D = spla.distribute(cora.A, comm)
    loader = NodeLoader(BadOnRank1(D, [2]), cora.train_idx, 10, bulk=2, prefetch=2)
    seen = 0
    with pytest.raises(spla.InvalidValue, match="deliberate"):
        for _ in loader:
            seen += 1
    assert seen == 2                                   # the first bulk, then the error
    assert comm.allreduce(1) == comm.size              # still in step


def test_arguments_that_differ_between_ranks(comm, cora):
    if comm.size < 2:
        pytest.skip("needs two ranks")
    D = spla.distribute(cora.A, comm)
    sampler = GraphSAGE(D, [2])
    one = comm.rank == 1
    _raises_everywhere(comm, spla.LayoutError, "must be the same on every rank",
                       lambda: NodeLoader(sampler, cora.train_idx, 11 if one else 10))
    seeds = cora.train_idx[::-1].copy() if one else cora.train_idx
    _raises_everywhere(comm, spla.LayoutError, "fingerprint",
                       lambda: NodeLoader(sampler, seeds, 10))
    _raises_everywhere(comm, spla.InvalidValue, "argument 'bulk'",
                       lambda: NodeLoader(sampler, cora.train_idx, 10, bulk=0 if one else 2))
    loader = NodeLoader(sampler, cora.train_idx, 10)
    loader.set_epoch(3 if one else 2)
    _raises_everywhere(comm, spla.LayoutError, "epoch", lambda: next(iter(loader)))
