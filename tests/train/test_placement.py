"""Placements of a one-GPU job (sampling.loading.placement), --sample-on, the
device-memory cap and the device out-of-memory message."""

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

from sampling.loading import placement as PL  # noqa: E402
from sampling.loading.placement import (LIMIT_ENV, PLACEMENTS, cap_device_memory,  # noqa: E402
                                        choose_placement, device_bytes, device_oom,
                                        free_device_bytes, memory_limit, oom_message,
                                        usable_bytes)
from sampling.train import TrainOptions, main  # noqa: E402
from sampling.train.build import resolve_placement  # noqa: E402
from sampling.train.options import UsageError, check_options  # noqa: E402
from spla.exceptions import InvalidValue  # noqa: E402

GiB = 1 << 30
sizes = st.integers(0, 64 * GiB)
ORDER = {p: i for i, p in enumerate(PLACEMENTS)}


@settings(max_examples=200, deadline=None)
@given(g=sizes, f=sizes, free=sizes, work=st.integers(0, 4 * GiB),
       reserve=st.sampled_from([0.0, 0.1, 0.25, 0.5]), fod=st.booleans(), uva=st.booleans(),
       share=st.sampled_from([0.0, 0.01, 0.2, 1.0]))
def test_never_places_more_than_allowed(g, f, free, work, reserve, fod, uva, share):
    ptr = int(g * share)  # the row pointer, a part of the graph's bytes
    p = choose_placement(g, f, free, working_bytes=work, reserve=reserve,
                         features_on_device=fod, uva=uva, pointer_bytes=ptr)
    assert p in PLACEMENTS and (uva or p != "uva")
    room = max(0, int(free * (1 - reserve)) - work)
    if p != "cpu":
        assert device_bytes(p, g, f, fod, pointer_bytes=ptr) <= room
    # The reference rule, written out: the graph on the device when all fits.
    if g + (f if fod else 0) <= room:
        assert p == "cuda"
    elif uva and ptr + (f if fod else 0) <= room and room > 0:
        assert p == "uva"
    else:
        assert p == "cpu"


@settings(max_examples=200, deadline=None)
@given(g=sizes, f=sizes, free=sizes, more=sizes, work=st.integers(0, GiB), fod=st.booleans())
def test_monotone(g, f, free, more, work, fod):
    """More free memory never moves the choice down; a larger graph never up."""
    kw = dict(working_bytes=work, features_on_device=fod)
    base = ORDER[choose_placement(g, f, free, **kw)]
    assert ORDER[choose_placement(g, f, free + more, **kw)] >= base
    assert ORDER[choose_placement(g + more, f, free, **kw)] <= base
    assert ORDER[choose_placement(g, f + more, free, **kw)] <= base


def test_rule_examples():
    assert choose_placement(6 * GiB, 0, 16 * GiB) == "cuda"
    assert choose_placement(13 * GiB, 0, 16 * GiB) == "uva"   # 13 > 0.75 * 16
    assert choose_placement(13 * GiB, 0, 16 * GiB, uva=False) == "cpu"
    # UVA keeps the row pointer in device memory: it must fit.
    assert choose_placement(13 * GiB, 0, 16 * GiB, pointer_bytes=12 * GiB) == "uva"
    assert choose_placement(14 * GiB, 0, 16 * GiB, pointer_bytes=13 * GiB) == "cpu"
    assert choose_placement(1, 10 * GiB, 8 * GiB, features_on_device=True) == "cpu"
    assert usable_bytes(100, 0.0, 150) == 0


@pytest.mark.parametrize("call, arg", [
    (lambda: choose_placement(-1, 0, 10), "graph_bytes"),
    (lambda: choose_placement(1, 0, 10, reserve=1.0), "reserve"),
    (lambda: usable_bytes(10, reserve="x"), "reserve"),
    (lambda: device_bytes("gpu", 1, 1), "placement"),
    (lambda: device_bytes("uva", 1, 1, pointer_bytes=-1), "pointer_bytes"),
    (lambda: choose_placement(1, 0, 10, pointer_bytes=-2), "pointer_bytes"),
    (lambda: memory_limit(0), "limit"),
])
def test_bad_arguments(call, arg):
    with pytest.raises(InvalidValue, match=arg):
        call()


def test_memory_limit_env(monkeypatch):
    monkeypatch.setenv(PL.LIMIT_ENV, "12345")
    assert memory_limit() == 12345
    assert free_device_bytes() <= 12345
    assert memory_limit(7) == 7
    monkeypatch.setenv(PL.LIMIT_ENV, "lots")
    with pytest.raises(InvalidValue, match=PL.LIMIT_ENV):
        memory_limit()
    monkeypatch.delenv(PL.LIMIT_ENV)
    assert memory_limit() is None


@pytest.mark.parametrize("kw, msg", [
    (dict(sample_on="uva"), "--sample-on uva needs --device cuda"),
    (dict(sample_on="cuda"), "--sample-on cuda needs --device cuda"),
    (dict(sample_on="gpu", device="cuda"), "unknown --sample-on"),
    (dict(device_memory_limit=0, device="cuda"), "--device-memory-limit must be"),
    (dict(device_memory_limit=1 << 20), "--device-memory-limit applies to --device cuda"),
    (dict(mode="bns", sample_on="cpu"), "--sample_on|--sample-on applies to --mode sampled"),
])
def test_option_errors(kw, msg):
    with pytest.raises(UsageError, match=msg):
        check_options(TrainOptions(**kw))


def test_sample_on_cpu_device_ok():
    check_options(TrainOptions(sample_on="cpu"))
    check_options(TrainOptions(device="cuda", sample_on="uva", device_memory_limit=1 << 20))


def test_command_line_error_is_one_line(capsys):
    rc = main(["--sample-on", "uva", "--epochs", "1"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("error: --sample-on uva needs --device cuda")


class _FakeComm:
    def __init__(self, size):
        self.size = size

    def Get_size(self):
        return self.size


def test_resolve_placement(monkeypatch):
    from spla import Matrix
    A = Matrix.from_coo([0, 1], [1, 0], [1.0, 1.0])     # 12 + 8 + 8 = 28 bytes... about
    X = np.zeros((2, 4), np.float32)                     # 32 bytes on the device
    cpu = TrainOptions()
    assert resolve_placement(cpu, None, A, X) is None
    assert resolve_placement(TrainOptions(device="cuda", sample_on="uva"), None, A, X) == "uva"
    # Under MPI: each rank's GPU only when asked; UVA would pin a copy per rank.
    with pytest.raises(UsageError, match="one process .*every rank would pin"):
        resolve_placement(TrainOptions(device="cuda", sample_on="uva"), _FakeComm(2), A, X)
    assert resolve_placement(TrainOptions(device="cuda"), _FakeComm(2), A, X) is None
    assert resolve_placement(TrainOptions(device="cuda", sample_on="cpu"), _FakeComm(2), A,
                             X) is None
    assert resolve_placement(TrainOptions(device="cuda", sample_on="cuda"), _FakeComm(2), A,
                             X) == "cuda"
    for comm in (None, _FakeComm(2)):
        with pytest.raises(UsageError, match="partitioned graph is sampled on the host"):
            resolve_placement(TrainOptions(device="cuda", sample_on="cuda",
                                           graph="partitioned"), comm, A, X)
    # auto under a cap: all fits in 1 MiB; nothing fits in 40 bytes (0.75 * 40 < 32).
    auto = lambda cap: resolve_placement(TrainOptions(device="cuda", device_memory_limit=cap),
                                         None, A, X)
    assert auto(1 << 20) == "cuda"
    assert auto(40) == "cpu"
    graph = sum(int(a.nbytes) for a in (A.indptr, A.indices, A.values))
    assert auto(-(-(32 + graph) * 4 // 3) - 1) == "uva"
    # UVA keeps the row pointer on the device: the features and it must fit.
    ptr = int(A.indptr.nbytes)
    assert auto(-(-(32 + ptr) * 4 // 3)) == "uva"
    assert auto(-(-(32 + ptr) * 4 // 3) - 2) == "cpu"
    # P3's first layer reads the minibatches' inputs on the host: the CPU
    # samples them, however much device memory there is.
    cols = TrainOptions(device="cuda", features="columns", device_memory_limit=1 << 20)
    assert resolve_placement(cols, None, A, X) == "cpu"
    assert resolve_placement(cols, _FakeComm(2), A, X) is None


def test_each_rank_samples_on_its_gpu_from_a_local_copy(monkeypatch):
    # Placement 'cuda' under MPI: a local graph (moved to the rank's GPU),
    # not a replicated DistMatrix, so the loader splits each bulk over the
    # ranks; the other placements keep the host's DistMatrix.
    import spla
    from sampling.train.build import make_sampler
    A = spla.Matrix.from_coo([0, 1, 2], [1, 2, 0], shape=(3, 3))
    moved = []
    monkeypatch.setattr(spla.Matrix, "to", lambda M, *a, **k: moved.append(a) or M)
    G, s = make_sampler(TrainOptions(device="cuda", sample_on="cuda"), _FakeComm(2), A, None,
                        "cuda")
    assert moved == [("cuda",)] and G is A and s.D is None


class OutOfMemoryError(Exception):
    """Stands for cupy's and torch's OutOfMemoryError (matched by name)."""


def test_device_oom_found_in_chain():
    inner = OutOfMemoryError("Out of memory allocating 4,194,304 bytes")
    outer = RuntimeError("prefetch failed")
    outer.__cause__ = inner
    assert device_oom(outer) is inner
    assert device_oom(RuntimeError("x")) is None
    msg = oom_message(inner)
    for what in ("--bulk", "--memory-budget", "--sample-on uva", "--sample-on cpu",
                 "--feature-cache", "4,194,304 bytes"):
        assert what in msg


def test_job_reports_device_oom(monkeypatch, capsys):
    """An OOM inside the job is one error line naming what to lower, not a traceback."""
    import sampling.train.job as job

    def boom(opts, comm=None, out=None):
        raise RuntimeError("while training") from OutOfMemoryError("out of memory on device")

    monkeypatch.setattr(job, "run", boom)
    rc = main(["--epochs", "1"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("error: the GPU ran out of memory")
    assert "--bulk" in err and "--sample-on" in err


def test_job_reports_device_oom_under_a_cap(monkeypatch, capsys):
    """Under --device-memory-limit the OOM line names the cap first: raising it may be all."""
    import sampling.train.job as job

    def boom(opts, comm=None, out=None):
        raise OutOfMemoryError("out of memory allocating 4096 bytes")

    monkeypatch.setattr(job, "run", boom)
    rc = main(["--epochs", "1", "--device", "cuda", "--device-memory-limit", "123456"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "capped at 123456 bytes" in err and "raise the cap" in err
    assert "--bulk" in err
    assert "cap what the placement assumes" not in err   # not "raise it" and "set one" at once


class _Pool:
    def __init__(self):
        self.limit = None

    def set_limit(self, size):
        self.limit = size


def _allocator_stand_ins(total):
    """cupy and torch stand-ins recording the caps they are given."""
    pool = _Pool()
    cupy = types.SimpleNamespace(get_default_memory_pool=lambda: pool)
    fractions = []
    cuda = types.SimpleNamespace(
        get_device_properties=lambda i: types.SimpleNamespace(total_memory=total),
        set_per_process_memory_fraction=lambda f, i: fractions.append((f, i)))
    return pool, cupy, types.SimpleNamespace(cuda=cuda), fractions


@pytest.mark.parametrize("cap, device, want", [
    (2 << 30, 0, (0.25, 0)),
    (2 << 30, types.SimpleNamespace(index=1), (0.25, 1)),
    (2 << 30, types.SimpleNamespace(index=None), (0.25, 0)),
    (16 << 30, 0, (1.0, 0)),            # a cap above the GPU's memory: no tighter than it
])
def test_cap_device_memory_holds_both_allocators(cap, device, want):
    pool, cupy, torch, fractions = _allocator_stand_ins(8 << 30)
    assert cap_device_memory(cap, device=device, cupy=cupy, torch=torch) == cap
    assert pool.limit == cap
    assert fractions == [want]


def test_cap_device_memory_reads_the_environment(monkeypatch):
    pool, cupy, torch, fractions = _allocator_stand_ins(4 << 30)
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    assert cap_device_memory(None, cupy=cupy, torch=torch) is None
    assert pool.limit is None and fractions == []           # no cap: nothing changed
    monkeypatch.setenv(LIMIT_ENV, str(1 << 30))
    assert cap_device_memory(None, cupy=cupy, torch=torch) == 1 << 30
    assert pool.limit == 1 << 30 and fractions == [(0.25, 0)]
    with pytest.raises(InvalidValue, match="limit"):
        cap_device_memory(0, cupy=cupy, torch=torch)


def test_other_errors_still_raise(monkeypatch):
    import sampling.train.job as job
    monkeypatch.setattr(job, "run", lambda *a, **k: (_ for _ in ()).throw(KeyError("x")))
    with pytest.raises(KeyError):
        main(["--epochs", "1"])


def _cuda():
    try:
        import cupy
        import torch
        return torch.cuda.is_available() and cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs cupy and a CUDA device")
@pytest.mark.parametrize("where", ["cuda", "uva", "cpu"])
def test_job_each_placement_on_gpu(where, capsys):
    rc = main(["--device", "cuda", "--sample-on", where, "--epochs", "1", "--prefetch", "2",
               "--threads", "1", "--bulk", "4"])
    out = capsys.readouterr().out
    assert rc == 0 and "copy s" in out and "test accuracy" in out


@pytest.mark.parametrize("device, placement, cap, want", [
    ("cpu", None, None, "cpu"),
    ("cuda", "uva", None, "cuda (sampling on uva)"),
    ("cuda", "cpu", 120_000_000, "cuda (sampling on cpu, device memory capped at 120.0 MB)"),
    ("cuda", None, 5_000_000, "cuda (device memory capped at 5.0 MB)"),   # a given sampler
])
def test_job_header_says_where_the_graph_is_sampled(device, placement, cap, want):
    """``--sample-on auto`` chooses: the run's header says what it chose, and the cap."""
    from sampling.train.summary import _device
    trainer = types.SimpleNamespace(opts=types.SimpleNamespace(device=device),
                                    placement=placement, device_cap=cap)
    assert _device(trainer) == want
