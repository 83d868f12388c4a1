"""The threading layer of the parallel CPU kernels (``kernels.threads``)."""

import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

from kernels import threads


def test_another_layer_named_is_respected():
    for layer in ("omp", "workqueue", "OMP "):
        assert threads.load_tbb({"NUMBA_THREADING_LAYER": layer}) is None


def test_off_linux_nothing_is_loaded(monkeypatch):
    monkeypatch.setattr(threads.sys, "platform", "darwin")
    assert threads.load_tbb({}) is None


def test_without_the_tbb_package_nothing_is_loaded(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(metadata, "files", missing)
    assert threads.tbb_library_path() is None
    assert threads.load_tbb({}) is None


def test_a_library_that_does_not_load_is_skipped(monkeypatch, tmp_path):
    lib = tmp_path / threads.TBB_LIBRARY
    lib.write_bytes(b"not a shared object")

    class File:
        name = threads.TBB_LIBRARY

        def locate(self):
            return lib

    monkeypatch.setattr(metadata, "files", lambda name: [File()])
    assert threads.tbb_library_path() == str(lib)
    # The dynamic linker refuses the file: numba keeps its own choice.
    assert threads.load_tbb({}) is None


def _layer_in_fresh_process(env_layer):
    code = textwrap.dedent("""
        import numpy as np, numba
        import kernels
        from kernels.cpu.extract import take
        # Over SERIAL_WORK picks: the parallel twin, which starts the layer.
        got = take(np.arange(10 ** 6), np.arange(10 ** 5)[::-1].copy())
        assert got[0] == 10 ** 5 - 1
        print(numba.threading_layer())
    """)
    import os
    env = dict(os.environ)
    env.pop("NUMBA_THREADING_LAYER", None)
    if env_layer is not None:
        env["NUMBA_THREADING_LAYER"] = env_layer
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[-1]


@pytest.mark.skipif(threads.tbb_library_path() is None or not sys.platform.startswith("linux"),
                    reason="the tbb wheel is not installed here (a dependency on x86-64 Linux)")
def test_kernels_run_on_tbb_when_installed():
    assert _layer_in_fresh_process(None) == "tbb"
    # The user's choice wins.
    assert _layer_in_fresh_process("omp") == "omp"
