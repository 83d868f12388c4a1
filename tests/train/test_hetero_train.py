"""The main job on a heterogeneous graph: ``--dataset mag:SCALE`` trains R-GCN.

The same trainer and epoch loop as a homogeneous run (NodeLoader with
``(type, ids)`` seeds): results independent of the bulk, the options that
cannot apply refused with one ``error:`` line.
"""

import pytest

torch = pytest.importorskip("torch")

from sampling.train import TrainOptions, Trainer, main  # noqa: E402
from sampling.train.options import UsageError  # noqa: E402


def _fit(**kw):
    opts = TrainOptions(dataset="mag:8", epochs=2, threads=1, hidden=16, **kw)
    trainer = Trainer(opts)
    return trainer, trainer.fit()


def test_rgcn_trains_and_does_not_depend_on_the_bulk():
    a, acc_a = _fit(bulk=1)
    b, acc_b = _fit(bulk=5, prefetch=1)
    assert type(a.model).__name__ == "RGCN" and a.hetero_target == "paper"
    assert a.parameter_checksum() == b.parameter_checksum()
    assert [s.loss for s in a.history] == [s.loss for s in b.history]
    assert acc_a == acc_b > 0.5                 # 4 planted classes: chance is 0.25
    assert a.history[-1].loss < a.history[0].loss
    assert "model RGCN" in a.describe()


def test_partitioned_relations_train_as_the_block_placement():
    # One rank: one part, so the placement moves no row and the run is the
    # block run's; the MPI suite checks 2-4 ranks (test_hetero_mpi.py).
    a, acc_a = _fit(graph="partitioned", partition="hash")
    b, acc_b = _fit(graph="partitioned")
    assert a.parameter_checksum() == b.parameter_checksum() and acc_a == acc_b


def test_num_bases_shares_weights():
    t, _ = _fit(num_bases=2)
    full, _ = _fit()
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(t.model) < count(full.model)


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "cora", "--model", "rgcn"], "--model rgcn applies to a heterogeneous"),
    (["--dataset", "cora", "--num-bases", "2"], "--num-bases applies to a heterogeneous"),
    (["--dataset", "mag:6", "--sampler", "ladies"], "--sampler ladies"),
    (["--dataset", "mag:6", "--features", "columns", "--graph", "partitioned"],
     "--features columns"),
    (["--dataset", "mag:6", "--model", "gcn"], "--model gcn applies to --mode bns"),
    (["--mode", "bns", "--num-bases", "2"], "--num-bases applies to --mode sampled"),
])
def test_options_that_cannot_apply_are_refused(capsys, argv, message):
    assert main(argv + ["--epochs", "1", "--threads", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and message in err, err


def test_a_given_model_is_refused_with_a_heterogeneous_dataset():
    with pytest.raises(UsageError, match="a model instance"):
        Trainer(TrainOptions(dataset="mag:6", epochs=1, threads=1), model=torch.nn.Linear(2, 2))


def test_the_gpu_trains_rgcn_and_gpu_placements_are_refused():
    # --device cuda trains R-GCN on the GPU from minibatches sampled on the
    # host: only a GPU placement of the sampling is refused.
    from sampling.train.hetero import check_hetero_options
    check_hetero_options(TrainOptions(dataset="mag:6", device="cuda"), None, None)
    check_hetero_options(TrainOptions(dataset="mag:6", device="cuda", sample_on="cpu"),
                         None, None)
    for where in ("cuda", "uva"):
        with pytest.raises(UsageError, match=f"--sample-on {where} .*heterogeneous"):
            check_hetero_options(TrainOptions(dataset="mag:6", device="cuda", sample_on=where),
                                 None, None)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_rgcn_on_the_gpu_trains_like_the_cpu():
    # No dropout: torch's GPU and CPU generators draw different masks; the
    # runs then differ only by the rounding of their products.
    cpu, acc_cpu = _fit(dropout=0.0)
    gpu, acc_gpu = _fit(dropout=0.0, device="cuda")
    assert all(p.device.type == "cuda" for p in gpu.model.parameters())
    assert abs(gpu.history[-1].loss - cpu.history[-1].loss) < 1e-3
    assert abs(acc_gpu - acc_cpu) <= 0.02
