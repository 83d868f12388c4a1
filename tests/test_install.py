"""A CPU-only install: the core needs neither the GPU packages nor MPI nor torch.

``pip install spla-sampling`` brings numpy, scipy and numba only; cupy,
numba-cuda, mpi4py/mpich and torch are extras.  These tests hold the package
to that: its requirements list nothing else, and importing ``spla`` and
``sampling`` and sampling a graph work in a process where those modules
cannot be imported at all.
"""

import configparser
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Top-level modules a CPU-only user does not have.
OPTIONAL = ("cupy", "cupyx", "numba_cuda", "mpi4py", "pymetis", "torch", "torch_geometric",
            "ogb", "dgl")


def _requirement_names(text):
    names = []
    for line in text.strip().splitlines():
        line = line.split("#")[0].strip()
        if line:
            for sep in "<>=![; ":
                line = line.split(sep)[0]
            names.append(line.lower())
    return names


def test_install_requires_has_no_gpu_mpi_or_torch_package():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    names = _requirement_names(cfg["options"]["install_requires"])
    # tbb: numba's TBB threading layer, a plain CPU runtime (kernels.threads).
    assert set(names) == {"numpy", "scipy", "numba", "tbb"}, names
    tbb, = [r for r in cfg["options"]["install_requires"].splitlines() if r.startswith("tbb")]
    assert 'platform_system == "Linux"' in tbb, tbb
    extras = cfg["options.extras_require"]
    # What moved out must still be reachable through an extra.
    assert "numba-cuda" in _requirement_names(extras["gpu"])
    assert {"mpi4py", "mpich"} <= set(_requirement_names(extras["mpi"]))
    # The README's main-job command installs [train]: MPI must come with it.
    assert {"torch", "mpi4py", "mpich"} <= set(_requirement_names(extras["train"]))


BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = set({blocked!r})

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            top = name.split(".")[0]
            if top in BLOCKED or name.startswith("numba.cuda"):
                raise ImportError(f"{{name}} is blocked: a CPU-only install lacks it")
            return None

    sys.meta_path.insert(0, Block())
""")

CORE = textwrap.dedent("""
    import numpy as np
    import spla
    import sampling
    from sampling.datasets import load

    ds = load("cora")
    mbs = sampling.GraphSAGE(ds.A, [5, 5]).sample(
        sampling.epoch_batches(ds.train_idx, 64, seed=0)[:2], seed=0)
    assert len(mbs) == 2 and mbs[0].batch_size == 64
    mbs = sampling.LADIES(ds.A, [32, 32]).sample([ds.train_idx[:16]], seed=0)
    Q = spla.Matrix.from_coo([0], [3], shape=(1, ds.num_nodes))
    assert (Q @ ds.A).new().nnz == ds.A.row_degrees()[3]
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not leaked, leaked
    print("core ok")
""")


def run_fresh(code, timeout):
    """Run ``code`` in a fresh interpreter on this checkout; its stdout."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_core_works_without_optional_packages():
    assert "core ok" in run_fresh(BLOCKER.format(blocked=OPTIONAL) + CORE, 280)


def test_importing_sampling_does_not_import_torch():
    """torch takes longer to import than the rest of ``sampling``: samplers,
    loaders and the main job's ``--help`` do without it, and the one torch
    class at the top level (``Embedding``) is imported when first used."""
    code = textwrap.dedent("""
        import sys
        import sampling
        assert "torch" not in sys.modules, "import sampling imported torch"
        assert "Embedding" in dir(sampling) and "Embedding" in sampling.__all__
        from sampling import Embedding
        import torch
        assert issubclass(Embedding, torch.nn.Module) and sampling.Embedding is Embedding
        ns = {}
        exec("from sampling import *", ns)
        assert ns["Embedding"] is Embedding and ns["NodeLoader"] is sampling.NodeLoader
        try:
            sampling.NoSuchName
        except AttributeError as exc:
            assert "NoSuchName" in str(exc)
        else:
            raise AssertionError("sampling.NoSuchName did not raise")
        print("lazy ok")
    """)
    assert "lazy ok" in run_fresh(code, 120)
