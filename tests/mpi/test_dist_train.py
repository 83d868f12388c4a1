"""Feature fetching and data-parallel training under mpiexec (any number of ranks).

* a partitioned FeatureStore (1D and every 1.5D c dividing p) returns
  exactly the global rows, moving bytes only when rows live elsewhere; a
  replicated one moves nothing;
* two epochs of training on Cora, graph replicated and partitioned, leave
  identical parameters on every rank and a decreasing loss.
"""

import numpy as np
import pytest

from spla import comm as C
from spla.layout import chunk
from sampling.loading.features import FeatureStore


def grids(p):
    return [c for c in range(1, p + 1) if p % c == 0]


@pytest.fixture(scope="module")
def x():
    rng = np.random.default_rng(5)
    return rng.standard_normal((43, 6)).astype(np.float32)


def test_partitioned_fetch_equals_global_rows(comm, x):
    p, r = comm.size, comm.rank
    rng = np.random.default_rng(200 + r)  # different requests per rank
    for c in grids(p):
        store = FeatureStore(x, mode="partitioned", comm=comm, replication=c)
        s, e = chunk(43, p // c, r // c)
        assert (store.row_start, store.row_stop) == (s, e)
        assert np.array_equal(store.local, x[s:e])
        # every row once (reversed), then random repeats; rank 1 asks for nothing
        ids = np.concatenate([np.arange(43)[::-1], rng.integers(0, 43, 30)])
        if r == 1:
            ids = ids[:0]
        with C.counting() as moved:
            got = store.fetch(ids)
        assert np.array_equal(got, x[ids]), c
        sent = C.allgather_int(comm, [sum(moved.values())])[:, 0]
        if p // c > 1:
            assert sent.sum() > 0
            # requests are deduplicated: at most one id and one row per distinct id
            assert moved["features.request"] <= 43 * 8
        else:
            assert sent.sum() == 0


def test_replicated_store_moves_nothing(comm, x):
    store = FeatureStore(x)
    with C.counting() as moved:
        got = store.fetch(np.array([42, 0, 42]))
    assert np.array_equal(got, x[[42, 0, 42]])
    assert sum(moved.values()) == 0


@pytest.mark.parametrize("graph", ["replicated", "partitioned"])
def test_two_epochs_identical_parameters_on_every_rank(comm, graph):
    pytest.importorskip("torch")
    from sampling.train import TrainOptions, Trainer
    c = 2 if graph == "partitioned" and comm.size % 2 == 0 else 1
    opts = TrainOptions(epochs=2, graph=graph, replication=c, threads=1)
    trainer = Trainer(opts, comm)
    with C.counting() as moved:
        stats = [trainer.train_epoch(e) for e in range(2)]
    assert stats[1].loss < stats[0].loss, [s.loss for s in stats]
    sums = comm.allgather(trainer.parameter_checksum())
    assert all(s == sums[0] for s in sums), sums
    # the optimizer state too
    state = trainer.optimizer.state_dict()["state"]
    moments = float(sum(v["exp_avg_sq"].double().sum() for v in state.values()))
    assert len(set(comm.allgather(moments))) == 1
    acc = trainer.evaluate("val")
    assert len(set(comm.allgather(acc))) == 1 and 0 <= acc <= 1
    # every rank trained its share, and sampling moved bytes only when partitioned
    sampled = comm.allgather(moved.get("fetch_rows.request", 0))
    if graph == "replicated":
        assert sum(sampled) == 0
        assert moved.get("features.request", 0) == 0


@pytest.mark.parametrize("graph", ["replicated", "partitioned"])
def test_parameters_and_losses_do_not_depend_on_the_bulk(comm, graph):
    """Step s of rank r trains the same minibatch whatever --bulk, the budget or
    --prefetch say: the trainer iterates the NodeLoader's one epoch loop."""
    pytest.importorskip("torch")
    from sampling.train import TrainOptions, Trainer
    runs = []
    for kw in (dict(bulk=comm.size), dict(bulk=3 * comm.size), {},
               dict(memory_budget=2 ** 21, prefetch=2)):
        opts = TrainOptions(epochs=1, graph=graph, threads=1, batch_size=32, **kw)
        trainer = Trainer(opts, comm)
        stats = trainer.train_epoch(0)
        runs.append((trainer.parameter_checksum(), stats.loss, stats.steps,
                     trainer.evaluate("val")))
    assert runs[0] == runs[1] == runs[2] == runs[3], runs


@pytest.mark.parametrize("graph", ["replicated", "partitioned"])
def test_rgcn_on_a_heterogeneous_graph_same_on_every_rank_for_any_bulk(comm, graph):
    """--dataset mag:SCALE under mpiexec: the relations distributed, one epoch loop, the
    parameters identical on every rank and independent of the bulk."""
    pytest.importorskip("torch")
    from sampling.train import TrainOptions, Trainer
    runs = []
    for bulk in (comm.size, 3 * comm.size):
        opts = TrainOptions(dataset="mag:7", epochs=1, graph=graph, threads=1, hidden=8,
                            bulk=bulk, batch_size=32)
        trainer = Trainer(opts, comm)
        stats = trainer.train_epoch(0)
        runs.append((trainer.parameter_checksum(), stats.loss, trainer.evaluate("val")))
    assert runs[0] == runs[1], runs
    assert len({str(r) for r in comm.allgather(runs[0])}) == 1


def test_local_ranks_spread_a_node_over_its_gpus(comm):
    # mpiexec on one node: the launcher's local ranks are the ranks, so the
    # job's --device cuda gives each rank its own GPU where there are enough.
    from sampling.train.launch import local_gpu, local_rank
    ranks = comm.allgather(local_rank())
    assert ranks == list(range(comm.size))
    assert comm.allgather(local_gpu(comm.size)) == list(range(comm.size))
