"""Trainer with prefetch under mpiexec (any number of ranks): the background
thread samples and fetches on duplicated communicators while the training
loop runs its gradient Allreduce; the result is bit-identical to training
without prefetch, and the background bytes are counted in the epoch's."""

import pytest

from spla import comm as C


@pytest.mark.parametrize("graph", ["replicated", "partitioned"])
def test_prefetch_gives_bit_identical_training(comm, graph):
    pytest.importorskip("torch")
    from sampling.train import TrainOptions, Trainer
    c = 2 if graph == "partitioned" and comm.size % 2 == 0 else 1
    runs = {}
    for prefetch in (0, 2):
        # One minibatch per rank and bulk: the most bulks, so the background
        # collectives interleave with the most Allreduces.
        opts = TrainOptions(epochs=1, graph=graph, replication=c, threads=1, batch_size=32,
                            bulk=comm.size, prefetch=prefetch, fanouts=(5, 5))
        trainer = Trainer(opts, comm)
        with C.counting() as moved:
            stats = [trainer.train_epoch(0)]
        runs[prefetch] = (trainer.parameter_checksum(), [s.loss for s in stats],
                          [s.bytes_moved for s in stats], [s.sampled_edges for s in stats],
                          trainer.evaluate("val"))
        assert all(s.prefetch == prefetch for s in stats)
        if prefetch:
            assert all(0 <= s.wait and 0 <= s.overlap <= 1 for s in stats)
            if graph == "partitioned" and comm.size // c > 1:
                # the background fetches, handed back to this thread's counters
                assert moved.get("features.request", 0) > 0, dict(moved)
    assert runs[0] == runs[2]
    assert len(set(comm.allgather(runs[2][0]))) == 1
