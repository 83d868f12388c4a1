"""The Trainer's Python API: sampler instances, custom models, dense features, threads.

* a sampler instance and a custom ``nn.Module`` train on Cora; given the
  same sampler and model as the defaults, the run is identical to the
  default run (the instance path is not a different training loop);
* the default runs are unchanged: accuracy and parameter checksum equal the
  values recorded from the code before the API change;
* a dense numpy ``dataset.x`` equal to the row-normalised sparse features
  gives exactly the sparse run;
* bad samplers, models and features fail at construction (or, for the
  model's output, at the first step) with errors naming the argument;
* the caller's thread counts (torch, numba) and torch's global random state
  are the same after the trainer worked, also when it raised.
"""

import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spla  # noqa: E402
from spla.exceptions import (DimensionMismatch, DTypeError, InvalidValue,  # noqa: E402
                             LayoutError)
from sampling import FastGCN, GraphSAGE, LADIES, Sampler  # noqa: E402
from sampling.datasets.dataset import Dataset  # noqa: E402
from sampling.datasets import load  # noqa: E402
from sampling.models import GCN, BlockOperator, SAGE as SAGEModel, model_for  # noqa: E402
from sampling.train import TrainOptions, Trainer, UsageError  # noqa: E402
from sampling.train.launch import thread_counts, using_threads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST = dict(epochs=2, threads=1, bulk=8, fanouts=(5, 5))


@pytest.fixture(scope="module")
def cora():
    return load("cora")


class MeanMLP(torch.nn.Module):
    """A custom model: the mean over each block's sampled neighbours, then one linear layer."""

    def __init__(self, in_dim, classes):
        super().__init__()
        self.lin = torch.nn.Linear(in_dim, classes)
        self.calls = 0

    def forward(self, x, minibatch):
        self.calls += 1
        for block in minibatch.blocks:
            x = BlockOperator(block) @ x
        return self.lin(x)


# -- the trainer is the loader's loop ------------------------------------------------------

def _baseline_opts(sampler):
    return TrainOptions(sampler=sampler, epochs=2, threads=1, bulk=4, fanouts=(5, 5),
                        layer_sizes=(64, 64))


def _hand_written_run(cora, opts):
    """What the trainer promises to be: NodeLoader's epochs, the built-in model seeded with
    opts.seed, summed cross-entropy over the seeds divided by their count, Adam."""
    import spla
    from sampling import NodeLoader
    make = {"sage": GraphSAGE, "ladies": LADIES, "fastgcn": FastGCN}[opts.sampler]
    x = spla.normalize_rows(cora.x.astype(np.float32))
    x = torch.from_numpy(x.to_scipy().toarray())
    with torch.random.fork_rng():
        torch.manual_seed(opts.seed)
        model = model_for(opts.sampler, x.shape[1], opts.hidden, cora.num_classes,
                          len(opts.sizes), opts.dropout)
        adam = torch.optim.Adam(model.parameters(), lr=opts.lr, weight_decay=opts.weight_decay)
        loader = NodeLoader(make(cora.A, opts.sizes), cora.train_idx, opts.batch_size,
                            features=x, labels=cora.y, seed=opts.seed, bulk=opts.bulk)
        with using_threads(1, 1):
            for _ in range(opts.epochs):
                model.train()
                for mb in loader:
                    adam.zero_grad(set_to_none=True)
                    loss = torch.nn.functional.cross_entropy(model(mb.x, mb), mb.y,
                                                             reduction="sum")
                    loss.backward()
                    for q in model.parameters():
                        q.grad = q.grad / mb.batch_size
                    adam.step()
    return model


@pytest.mark.parametrize("sampler", ["sage", "ladies", "fastgcn"])
def test_the_trainer_is_a_loop_over_node_loader(cora, sampler):
    """No pinned numbers: the trainer's parameters equal a hand-written loop's over the
    same NodeLoader, for every sampler (so a change of the samplers' draws cannot break
    this test, and a trainer that drifted from the loader's epochs must)."""
    opts = _baseline_opts(sampler)
    trainer = Trainer(opts, dataset=cora)
    trainer.fit()
    ours = [q.detach() for q in trainer.model.parameters()]
    theirs = [q.detach() for q in _hand_written_run(cora, opts).parameters()]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-7), (a - b).abs().max()
    assert trainer.history[-1].loss < trainer.history[0].loss       # it did train


def test_batch_larger_than_the_training_set_is_one_minibatch(cora):
    """As PyG's loaders: the epoch is one smaller minibatch, not an error."""
    n_train = int(cora.train_idx.size)
    trainer = Trainer(TrainOptions(epochs=1, threads=1, batch_size=n_train + 1), dataset=cora)
    stats = trainer.train_epoch(0)
    assert stats.steps == 1 and np.isfinite(stats.loss)


def test_training_loop_time_leaves_out_the_validation_pass(cora):
    """``train_wall`` is the loop the phases overlap in: the epoch less its validation."""
    trainer = Trainer(TrainOptions(epochs=1, threads=1, bulk=4), dataset=cora)
    s = trainer.train_epoch(0)
    loop_phases = s.times["sample"] + s.times["fetch"] + s.times["fwd/bwd"]
    # Without prefetch the loop runs its phases one after the other.
    assert loop_phases <= s.train_wall
    assert s.times["eval"] > 0
    assert s.train_wall + s.times["eval"] <= s.wall


@pytest.mark.parametrize("sampler", ["sage", "ladies"])
def test_given_sampler_and_model_equal_to_the_defaults_train_identically(cora, sampler):
    # No dropout: a given model's dropout draws start from the freshly seeded
    # generator, the built-in one's after its initialisation consumed some.
    opts = dataclasses.replace(_baseline_opts(sampler), dropout=0.0)
    ref = Trainer(opts, dataset=cora)
    ref_acc = ref.fit()
    inst = (GraphSAGE(cora.A, opts.fanouts) if sampler == "sage"
            else LADIES(cora.A, opts.layer_sizes))
    torch.manual_seed(opts.seed)  # the built-in model's initialisation
    model = model_for(sampler, cora.num_features, opts.hidden, cora.num_classes, 2,
                      opts.dropout)
    given = Trainer(opts, dataset=cora, sampler=inst, model=model)
    assert given.sampler is inst and given.model is model
    assert given.fit() == ref_acc
    assert given.parameter_checksum() == ref.parameter_checksum()
    assert [h.loss for h in given.history] == [h.loss for h in ref.history]


# -- sampler instances and custom models ---------------------------------------------------

def test_sampler_instance_and_custom_model_train_on_cora(cora):
    sampler = GraphSAGE(cora.A, [5, 5])
    torch.manual_seed(0)
    model = MeanMLP(cora.num_features, cora.num_classes)
    # opts.sampler / layer_sizes / hidden do not apply: the instance and the model are used.
    opts = TrainOptions(sampler="ladies", layer_sizes=(3,), hidden=999, **FAST)
    trainer = Trainer(opts, dataset=cora, sampler=sampler, model=model)
    assert trainer.sampler is sampler and trainer.model is model and trainer.depth == 2
    text = trainer.describe()
    assert "sampler GraphSAGE instance (fanouts 5,5" in text
    assert "model MeanMLP (given" in text and "999" not in text
    acc = trainer.fit()
    assert [h.epoch for h in trainer.history] == [1, 2]
    assert trainer.history[1].loss < trainer.history[0].loss
    assert acc > 0.5  # 7 classes; 0.733 measured (mean features are strong on Cora)
    assert model.calls > 0


def test_default_model_follows_the_sampler_instance(cora):
    opts = TrainOptions(epochs=1, threads=1, bulk=4, hidden=8)
    for inst, cls in [(LADIES(cora.A, [32, 32, 32]), GCN), (FastGCN(cora.A, [32]), GCN),
                      (GraphSAGE(cora.A, [3]), SAGEModel)]:
        trainer = Trainer(opts, dataset=cora, sampler=inst)
        assert isinstance(trainer.model, cls)
        assert trainer.model.num_layers == inst.num_layers


class _NoEstimate(Sampler):
    """A custom sampler without ``estimate_bytes``: GraphSAGE's draws, delegated."""

    def __init__(self, A, fanouts):
        self.inner = GraphSAGE(A, fanouts)
        self.A = self.inner.A

    @property
    def num_layers(self):
        return self.inner.num_layers

    def _sample_stacked(self, B, seed, epoch):
        return self.inner._sample_stacked(B, seed, epoch)


def test_custom_sampler_without_estimate_needs_a_bulk(cora):
    inst = _NoEstimate(cora.A, [4, 4])
    with pytest.raises(InvalidValue, match=r"Trainer: argument 'opts.bulk' must be set .*"
                                           r"_NoEstimate has no estimate_bytes"):
        Trainer(TrainOptions(epochs=1, threads=1), dataset=cora, sampler=inst)
    trainer = Trainer(TrainOptions(epochs=1, threads=1, bulk=4), dataset=cora, sampler=inst)
    assert 0.0 <= trainer.fit() <= 1.0


def test_sampler_errors(cora):
    citeseer = load("citeseer")
    with pytest.raises(DimensionMismatch, match=r"Trainer: argument 'sampler' must be a "
                                                r"sampler on a graph of 2708 vertices.*got "
                                                r"GraphSAGE on a graph of 3327 vertices"):
        Trainer(TrainOptions(**FAST), dataset=cora, sampler=GraphSAGE(citeseer.A, [5]))
    with pytest.raises(DTypeError, match="argument 'sampler' must be a sampling.Sampler"):
        Trainer(TrainOptions(**FAST), dataset=cora, sampler="sage")
    with pytest.raises(UsageError, match="opts.layers is 3 but the sampler GraphSAGE samples "
                                         "2 layers"):
        Trainer(TrainOptions(layers=3, **FAST), dataset=cora,
                sampler=GraphSAGE(cora.A, [5, 5]))
    D = spla.distribute(cora.A)  # a DistMatrix over COMM_WORLD (one rank here)
    with pytest.raises(LayoutError, match=r"argument 'comm' must be the communicator of the "
                                          r"sampler's distributed graph .*got comm=None"):
        Trainer(TrainOptions(**FAST), dataset=cora, sampler=GraphSAGE(D, [5, 5]))
    trainer = Trainer(TrainOptions(**FAST), D.comm, cora, sampler=GraphSAGE(D, [5, 5]))
    assert "on a DistMatrix" in trainer.describe()


def test_model_errors_at_construction(cora):
    with pytest.raises(DTypeError, match="argument 'model' must be a torch.nn.Module called "
                                         r"as model\(x, minibatch\)"):
        Trainer(TrainOptions(**FAST), dataset=cora, model=lambda x, mb: x)
    with pytest.raises(InvalidValue, match="must be a module with trainable parameters; got "
                                           "Identity without any"):
        Trainer(TrainOptions(**FAST), dataset=cora, model=torch.nn.Identity())
    with pytest.raises(DTypeError, match="argument 'opts' must be a sampling.train.TrainOptions"):
        Trainer({"epochs": 1})


class _Wrong(MeanMLP):
    def __init__(self, in_dim, classes, how):
        super().__init__(in_dim, classes)
        self.how = how

    def forward(self, x, minibatch):
        out = super().forward(x, minibatch)
        return {"rows": out[:-1], "cols": out[:, :-1], "tuple": (out, out),
                "int": out.long()}[self.how]


@pytest.mark.parametrize("how, exc, got", [
    ("rows", DimensionMismatch, r"tensor of shape \(63, 7\)"),
    ("cols", DimensionMismatch, r"tensor of shape \(64, 6\)"),
    ("tuple", DTypeError, r"tuple"),
    ("int", DTypeError, r"tensor of dtype torch.int64"),
], ids=["rows", "cols", "tuple", "int"])
def test_wrong_model_output_fails_at_the_first_step(cora, how, exc, got):
    model = _Wrong(cora.num_features, cora.num_classes, how)
    trainer = Trainer(TrainOptions(**FAST), dataset=cora, sampler=GraphSAGE(cora.A, [5, 5]),
                      model=model)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(exc, match=r"Trainer: argument 'model' must be .* shape \(seeds, "
                                  r"classes\) = \(64, 7\) for this minibatch; got "
                                  r"_Wrong\(x, minibatch\) -> " + got + "$"):
        trainer.train_epoch(0)
    assert model.calls == 1  # stopped at the first step, before any update
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    # evaluate checks too when it comes first
    with pytest.raises(exc, match="argument 'model'"):
        Trainer(TrainOptions(**FAST), dataset=cora, model=_Wrong(
            cora.num_features, cora.num_classes, how)).evaluate("val")


# -- dense features --------------------------------------------------------------------------

def _with_x(ds, x):
    """``ds`` with features ``x``, through ``Dataset`` and its checks."""
    return Dataset(ds.name, ds.A, x, ds.y, ds.train_idx, ds.val_idx, ds.test_idx,
                   classes=ds.classes)


def _forced_x(ds, x):
    """``ds`` with its ``x`` field overwritten, past ``Dataset``'s checks.

    What a user who mutates the frozen dataclass gets: the trainer's own
    check must still refuse features it cannot use.
    """
    out = copy.copy(ds)
    object.__setattr__(out, "x", x)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_features_are_used_as_given(cora, dtype):
    opts = TrainOptions(**FAST)
    ref = Trainer(opts, dataset=cora)
    ref_acc = ref.fit()
    # The sparse features are row-normalised by the trainer; a dense array is
    # used as given, so the normalised array reproduces the sparse run.
    dense = spla.normalize_rows(cora.x.astype(np.float32)).to_scipy().toarray().astype(dtype)
    trainer = Trainer(opts, dataset=_with_x(cora, dense))
    assert trainer.fit() == ref_acc
    assert trainer.parameter_checksum() == ref.parameter_checksum()
    # unnormalised dense features are not normalised: a different run
    raw = Trainer(opts, dataset=_with_x(cora, cora.x.to_scipy().toarray().astype(np.float32)))
    raw.fit()
    assert raw.parameter_checksum() != ref.parameter_checksum()


def test_torch_and_integer_features_train_like_numpy(cora):
    # Dataset converts torch tensors and integer arrays to dense float32 at
    # construction, so the run equals the numpy one.
    opts = TrainOptions(**FAST)
    dense = cora.x.to_scipy().toarray().astype(np.float32)
    ref = Trainer(opts, dataset=_with_x(cora, dense))
    ref.fit()
    for x in (torch.from_numpy(dense), dense.astype(np.int64)):
        trainer = Trainer(opts, dataset=_with_x(cora, x))
        trainer.fit()
        assert trainer.parameter_checksum() == ref.parameter_checksum()


def test_bad_features_fail_at_construction(cora):
    dense = cora.x.to_scipy().toarray().astype(np.float32)
    # Shapes are refused by the Dataset itself.
    for x, message in [(dense[:-1], r"'x' must be 2708 rows"),
                       (dense[0], r"'x' must be a 2-D \(n, f\) matrix")]:
        with pytest.raises(DimensionMismatch, match=message):
            _with_x(cora, x)
    # Features forced past the Dataset's checks are refused by the trainer.
    cases = [
        (torch.from_numpy(dense), DTypeError,
         r"argument 'dataset.x' must be a spla.Matrix .* or a dense float32 numpy array of "
         r"shape \(n, f\) \(used as given\); got a torch.Tensor of shape \(2708, 1433\)"),
        (dense.astype(np.int64), DTypeError, r"'dataset.x' must be .*; got array of shape "
                                             r"\(2708, 1433\) and dtype int64"),
        (dense[:-1], DimensionMismatch, r"'dataset.x' must be a 2-D array of shape \(n, f\) "
                                        r"with n = 2708"),
        (dense[0], DimensionMismatch, "'dataset.x' must be a 2-D array"),
        (dense.tolist(), DTypeError, "'dataset.x' must be a spla.Matrix"),
    ]
    for x, exc, message in cases:
        with pytest.raises(exc, match=message):
            Trainer(TrainOptions(**FAST), dataset=_forced_x(cora, x))


# -- no process-wide side effects ------------------------------------------------------------

class _Probe(MeanMLP):
    """Records the thread counts it runs with; raises at call ``fail_at``."""

    def __init__(self, in_dim, classes, fail_at=None):
        super().__init__(in_dim, classes)
        self.seen = set()
        self.fail_at = fail_at

    def forward(self, x, minibatch):
        self.seen.add(torch.get_num_threads())
        if self.calls + 1 == self.fail_at:
            raise RuntimeError("deliberate failure inside the model")
        return super().forward(x, minibatch)


def test_thread_counts_and_random_state_are_restored(cora):
    before = thread_counts()
    want = 3 if before[1] != 3 else 2  # a torch count the trainer does not use
    torch.set_num_threads(want)
    try:
        probe = _Probe(cora.num_features, cora.num_classes)
        rng = torch.get_rng_state()  # after the test's own draws (the model's initialisation)
        trainer = Trainer(TrainOptions(**FAST), dataset=cora, model=probe)
        assert thread_counts()[1] == want
        trainer.fit()
        assert probe.seen == {1}  # --threads 1 while working
        assert thread_counts()[1] == want
        # The trainer's random state is its own: the caller's is untouched.
        assert torch.equal(torch.get_rng_state(), rng)
        model = _Probe(cora.num_features, cora.num_classes, fail_at=3)
        rng = torch.get_rng_state()
        failing = Trainer(TrainOptions(**FAST), dataset=cora, model=model)
        with pytest.raises(RuntimeError, match="deliberate failure"):
            failing.fit()
        assert thread_counts()[1] == want
        assert torch.equal(torch.get_rng_state(), rng)
    finally:
        torch.set_num_threads(before[1])


def test_training_is_reproducible_whatever_the_caller_draws(cora):
    a = Trainer(TrainOptions(**FAST), dataset=cora)
    b = Trainer(TrainOptions(**FAST), dataset=cora)
    for e in range(2):
        a.train_epoch(e)
        torch.rand(1000)  # the caller uses torch's global generator in between
        b.train_epoch(e)
    assert a.parameter_checksum() == b.parameter_checksum()


def test_using_threads_restores_after_an_exception():
    before = thread_counts()
    with pytest.raises(KeyError):
        with using_threads(1, before[1] + 1):
            assert thread_counts()[1] == before[1] + 1
            raise KeyError("inside")
    assert thread_counts() == before


NUMBA_THREADS = """
import json
import numba, torch
from sampling.datasets import load
from sampling.train import TrainOptions, Trainer

numba.set_num_threads(2)
torch.set_num_threads(3)


class Probe(torch.nn.Module):
    def __init__(self, f, c, fail_at):
        super().__init__()
        self.lin = torch.nn.Linear(f, c)
        self.seen, self.fail_at = [], fail_at

    def forward(self, x, mb):
        self.seen.append((numba.get_num_threads(), torch.get_num_threads()))
        if len(self.seen) == self.fail_at:
            raise RuntimeError("deliberate")
        return self.lin(x[:mb.batch_size])


ds = load("cora")
out = {}
for fail_at in (None, 2):
    probe = Probe(ds.num_features, ds.num_classes, fail_at)
    trainer = Trainer(TrainOptions(epochs=1, threads=1, bulk=4, fanouts=(3,)), dataset=ds,
                      model=probe)
    built = [numba.get_num_threads(), torch.get_num_threads()]
    try:
        trainer.fit()
    except RuntimeError:
        pass
    out[str(fail_at)] = {"after_build": built, "inside": sorted(set(probe.seen)),
                         "after": [numba.get_num_threads(), torch.get_num_threads()]}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_numba_threads_are_restored():
    # numba's count can only drop below NUMBA_NUM_THREADS: a fresh process with 2.
    env = dict(os.environ, NUMBA_NUM_THREADS="2",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(NUMBA_THREADS)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for case in ("None", "2"):  # a whole fit, and a fit whose model raises
        assert got[case]["after_build"] == [2, 3], got
        assert got[case]["inside"] == [[1, 1]], got
        assert got[case]["after"] == [2, 3], got


# -- the GPU a rank drives ---------------------------------------------------------------------
@pytest.mark.parametrize("env, want", [
    ({"MPI_LOCALRANKID": "3"}, 3), ({"OMPI_COMM_WORLD_LOCAL_RANK": "2"}, 2),
    ({"SLURM_LOCALID": "5"}, 5), ({"MPI_LOCALRANKID": "x", "SLURM_LOCALID": "1"}, 1), ({}, 0),
])
def test_local_rank_reads_the_launchers_variable(monkeypatch, env, want):
    from sampling.train.launch import local_gpu, local_rank
    for var in ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert local_rank() == want
    assert local_gpu(2) == want % 2 and local_gpu(0) is None


def test_use_local_gpu_makes_the_ranks_gpu_current(monkeypatch):
    # A node of 4 GPUs seen through stand-ins for torch.cuda and cupy:
    # under a launcher, local rank 6 drives GPU 2, for torch and for cupy.
    import types
    import spla.optional
    from sampling.train.launch import use_local_gpu
    for var in ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"):
        monkeypatch.delenv(var, raising=False)
    current = {}
    cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 4,
                                 set_device=lambda i: current.update(torch=i),
                                 current_device=lambda: 3)
    fake_torch = types.SimpleNamespace(cuda=cuda, device=torch.device)
    fake_cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(
        Device=lambda i: types.SimpleNamespace(use=lambda: current.update(cupy=i))))
    monkeypatch.setattr(spla.optional, "optional_import",
                        lambda name: fake_cupy if name == "cupy" else None)
    # Without a launcher: torch's current device as the caller set it, and
    # cupy's made the same.
    assert use_local_gpu(fake_torch) == torch.device("cuda", 3)
    assert current == {"cupy": 3}
    monkeypatch.setenv("MPI_LOCALRANKID", "6")
    assert use_local_gpu(fake_torch) == torch.device("cuda", 2)
    assert current == {"torch": 2, "cupy": 2}
    # No GPU seen: 'cuda' as given, for the caller's check to name.
    cuda.is_available = lambda: False
    assert use_local_gpu(fake_torch) == torch.device("cuda")


# -- under MPI -------------------------------------------------------------------------------

MPI_SCRIPT = """
import json, sys
import torch
from mpi4py import MPI
import spla
from sampling import GraphSAGE
from sampling.datasets import load
from sampling.models import BlockOperator
from sampling.train import TrainOptions, Trainer

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
ds = load("cora")
out = {}


class Net(torch.nn.Module):
    def __init__(self, shift=0):
        super().__init__()
        self.lin = torch.nn.Linear(ds.num_features, ds.num_classes)
        self.register_buffer("tag", torch.tensor(rank))
        self.shift = shift

    def forward(self, x, mb):
        for block in mb.blocks:
            x = BlockOperator(block) @ x
        out = self.lin(x)
        return out[:-1] if self.shift and rank == self.shift else out


def run(sampler, seed):
    torch.manual_seed(seed)  # a different initialisation on every rank
    t = Trainer(TrainOptions(epochs=1, threads=1, bulk=4), comm, ds, sampler=sampler,
                model=Net())
    built = [t.parameter_checksum(), int(t.model.tag)]
    acc = t.fit()
    return {"built": built, "acc": acc, "final": t.parameter_checksum(),
            "loss": t.history[0].loss}


out["local"] = run(GraphSAGE(ds.A, [5, 5]), 100 + rank)
D = spla.distribute(ds.A, comm, replicate_graph=True)
out["dist"] = run(GraphSAGE(D, [5, 5]), 100 + rank)
for case, call in [
        ("none", lambda: Trainer(TrainOptions(bulk=4), None, ds, sampler=GraphSAGE(D, [5]))),
        ("self", lambda: Trainer(TrainOptions(bulk=4), comm.Split(rank, 0), ds,
                                 sampler=GraphSAGE(D, [5]))),
        ("output", lambda: Trainer(TrainOptions(epochs=1, bulk=4, threads=1), comm, ds,
                                   model=Net(shift=1)).fit())]:
    try:
        call()
        out[case] = "no error"
    except Exception as exc:
        out[case] = f"{type(exc).__name__}: {exc}"
with open(sys.argv[1] + f".{rank}", "w") as f:
    json.dump(out, f)
"""


@pytest.mark.slow
@pytest.mark.mpi
def test_under_mpi_models_start_identical_and_samplers_must_match_comm(tmp_path):
    import shutil
    mpiexec = (shutil.which("mpiexec", path=os.path.dirname(sys.executable))
               or shutil.which("mpiexec"))
    if mpiexec is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    script = tmp_path / "mpi_trainer.py"
    script.write_text(MPI_SCRIPT)
    stem = str(tmp_path / "result")
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, str(script), stem], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / f"result.{r}").read_text()) for r in (0, 1))
    for case in ("local", "dist"):
        # rank 0's parameters and buffers on every rank, whatever each rank built
        assert r0[case]["built"] == r1[case]["built"] and r0[case]["built"][1] == 0
        assert r0[case]["final"] == r1[case]["final"] and r0[case]["acc"] == r1[case]["acc"]
    # A sampler on a local graph splits each bulk over the ranks: the same run as
    # a sampler on a replicated DistMatrix (rank 0 seeded alike in both).
    assert r0["local"] == r0["dist"]
    for r in (r0, r1):
        assert r["none"].startswith("LayoutError: Trainer: argument 'comm' must be the "
                                    "communicator of the sampler's distributed graph"), r
        assert r["self"].startswith("LayoutError:") and "another communicator" in r["self"]
        assert r["output"].startswith("DimensionMismatch: Trainer: argument 'model'"), r
    # rank 1's model drops one row of its minibatch's logits; the error says both shapes
    m = re.search(r"= \((\d+), 7\) for this minibatch; got Net\(x, minibatch\) -> tensor "
                  r"of shape \((\d+), 7\)", r1["output"])
    assert m and int(m.group(2)) == int(m.group(1)) - 1, r1["output"]
    assert "[raised on rank 1 of 2]" in r0["output"]
