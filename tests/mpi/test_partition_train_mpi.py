"""The main job's ``--partition`` and ``--split`` under mpiexec (any number of ranks).

* ``split='global'``: the block and METIS partitions train on the same
  minibatches, so losses, accuracies and parameters are bit-identical (the
  METIS run also prefetches in the background); only the bytes differ;
* ``split='part'``: every rank trains on its ``seeds_by_part`` share, every
  training vertex exactly once per epoch, and the rank's minibatches hold
  only its share's vertices;
* the report names the partition, its edge cut and the balance table.
"""

import numpy as np
import pytest

from spla import comm as C
from sampling.samplers.batches import seeds_by_part


def _grids(p):
    # One grid per rank count (CI time): 1.5D with c = 2 on 4 ranks, 1D otherwise.
    return [2] if p == 4 else [1]


def _run(comm, **kw):
    from sampling.train import TrainOptions, Trainer
    opts = TrainOptions(epochs=1, graph="partitioned", threads=1, batch_size=32, hidden=16,
                        **kw)
    trainer = Trainer(opts, comm)
    stats = [trainer.train_epoch(0)]
    return trainer, [s.loss for s in stats], trainer.evaluate("val")


def test_global_split_gives_the_same_training_under_every_partition(comm):
    pytest.importorskip("torch")
    pytest.importorskip("pymetis")
    for c in _grids(comm.size):
        # METIS with the background pipeline against block without it: neither
        # may change a bit (several bulks per epoch, so prefetch has work).
        runs = {"block": _run(comm, replication=c, partition="block", bulk=4 * comm.size,
                              split="global"),
                "metis": _run(comm, replication=c, partition="metis", bulk=4 * comm.size,
                              split="global",
                              prefetch=2)}
        (tb, lb, ab), (tm, lm, am) = runs["block"], runs["metis"]
        assert lb == lm and ab == am, (c, lb, lm)
        assert tb.parameter_checksum() == tm.parameter_checksum()
        if comm.size // c > 1:
            assert tm.partition.method == "metis"
            np.testing.assert_array_equal(tm.store.row_ids, tm.graph.row_ids)


def test_part_split_trains_each_rank_on_its_share(comm):
    pytest.importorskip("torch")
    pytest.importorskip("pymetis")
    for c in _grids(comm.size):
        trainer, losses, acc = _run(comm, replication=c, partition="metis", split="part")
        assert np.isfinite(losses).all() and 0 <= acc <= 1
        train = trainer.store.splits["train"]
        share = seeds_by_part(train, trainer.partition, comm.size, c)[comm.rank]
        trainer.train_loader.set_epoch(1)
        mine = [mb.seeds for mb in trainer.train_loader]
        got = np.sort(np.concatenate(mine))
        np.testing.assert_array_equal(got, share)          # each of its seeds once
        every = np.sort(np.concatenate(comm.allgather(got)))
        np.testing.assert_array_equal(every, train)
        steps = C.allgather_int(comm, [len(mine)])[:, 0]
        assert (steps == steps[0]).all()


def test_report_names_the_partition(comm):
    pytest.importorskip("torch")
    trainer, _, _ = _run(comm, partition="block")
    text = trainer.describe()
    assert f"partition block: {comm.size} parts, edge cut" in text
    assert "max/mean" in text and "train" in text
