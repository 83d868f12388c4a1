"""``--features columns`` (P3) in the trainer, under mpiexec (any number of ranks).

* for the same seed, training with the features split by columns (push-pull
  first layer) gives the losses, validation accuracies and (gathered) final
  parameters of the row-fetch run, dropout included, for GraphSAGE and
  LADIES, graph replicated and partitioned by hash, with and without
  prefetch;
* Cora trains to >= 0.78 test accuracy with ``--features columns`` on 2 and
  4 ranks (the issue's bar; skipped on other rank counts to save time);
* more ranks than feature columns and a model whose first layer is not
  linear in its input raise the same error on every rank.
"""

import dataclasses

import numpy as np
import pytest

import spla
from spla import comm as C
from spla.exceptions import InvalidValue, LayoutError

torch = pytest.importorskip("torch")

from sampling.datasets import load  # noqa: E402
from sampling.train import TrainOptions, Trainer  # noqa: E402


@pytest.fixture(scope="module")
def cora():
    return load("cora")


def run(comm, ds, epochs=2, **kw):
    trainer = Trainer(TrainOptions(epochs=epochs, threads=1, **kw), comm, dataset=ds)
    stats = [trainer.train_epoch(e) for e in range(epochs)]
    return trainer, stats


CASES = [
    dict(),
    dict(sampler="ladies", layer_sizes=(128, 128), dropout=0.3),
    dict(graph="partitioned", partition="hash", prefetch=1),
]


@pytest.mark.parametrize("kw", CASES, ids=["sage", "ladies", "partitioned-hash-prefetch"])
def test_columns_train_as_rows_do(comm, cora, kw):
    rows, want = run(comm, cora, features="rows", **kw)
    cols, got = run(comm, cora, features="columns", **kw)
    if kw.get("partition") == "hash":
        assert rows.partition.method == cols.partition.method == "hash"
        np.testing.assert_array_equal(
            rows.partition.part,
            spla.partition.hashed(cora.A, comm.size, seed=rows.opts.seed).part)
    np.testing.assert_allclose([s.loss for s in got], [s.loss for s in want], rtol=1e-5)
    assert [s.val_acc for s in got] == [s.val_acc for s in want]
    np.testing.assert_allclose(cols.parameter_checksum(), rows.parameter_checksum(),
                               rtol=1e-5)
    # Every rank holds its own first-layer slice and the same other parameters.
    net = cols.model.gather_model()
    sums = comm.allgather(float(sum(p.detach().double().abs().sum() for p in net.parameters())))
    assert max(sums) - min(sums) <= 1e-9 * max(sums)
    moved = sum(s.bytes_moved for s in got)
    assert (moved > 0) == (comm.size > 1)


def test_columns_move_pull_and_gradient_bytes_only(comm, cora):
    with C.counting() as moved:
        run(comm, cora, epochs=1, features="columns")
    ops = {k for k, v in moved.items() if v}
    if comm.size == 1:
        assert not ops
        return
    assert {"p3.pull", "p3.gradient", "p3.inputs"} <= ops, ops
    assert not any(k.startswith("features.") for k in ops), ops
    # Every training row pulled sends its gradient back; evaluation only pulls.
    pull = sum(comm.allgather(moved["p3.pull"]))
    grad = sum(comm.allgather(moved["p3.gradient"]))
    assert pull > grad > 0


def test_cora_accuracy_with_columns(comm, cora):
    if comm.size not in (2, 4):
        pytest.skip("the issue's bar is checked on 2 and 4 ranks")
    trainer = Trainer(TrainOptions(features="columns", threads=1), comm, dataset=cora)
    acc = trainer.fit()
    assert acc >= 0.78, acc


def test_more_ranks_than_columns_raises_everywhere(comm, cora):
    if comm.size == 1:
        pytest.skip("needs 2 ranks or more")
    thin = dataclasses.replace(cora, name="thin", x=np.ones((cora.num_nodes, 1), np.float32))
    with pytest.raises(LayoutError) as info:
        Trainer(TrainOptions(features="columns", threads=1), comm, dataset=thin)
    seen = comm.allgather(str(info.value))
    assert "at least as many columns as ranks" in seen[0], seen[0]
    assert len({s.split(" [raised on")[0] for s in seen}) == 1, seen


def test_first_layer_not_linear_raises_everywhere(comm, cora):
    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(cora.num_features, cora.num_classes)

        def forward(self, x, minibatch):
            return self.lin(x[:minibatch.batch_size])

    with pytest.raises(InvalidValue) as info:
        Trainer(TrainOptions(features="columns", threads=1), comm, dataset=cora, model=MLP())
    seen = comm.allgather(str(info.value))
    assert "first layer linear in its input" in seen[0], seen[0]
    assert len({s.split(" [raised on")[0] for s in seen}) == 1, seen
