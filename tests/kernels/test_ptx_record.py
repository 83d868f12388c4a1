"""The launch recorder behind ``benchmarks/ptx_check.py``: each kernel and its
argument types are written once, and the script rebuilds exactly the numba
types that a GPU launch would see for those arguments."""

import importlib.util
import json
import os

import numba
import numpy as np

from kernels.cuda import _util

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _script():
    spec = importlib.util.spec_from_file_location(
        "ptx_check", os.path.join(ROOT, "benchmarks", "ptx_check.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _kernel_body(a, b):
    pass


class FakeKernel:
    # The simulator's kernel object keeps the Python function as ``fn``.
    fn = staticmethod(_kernel_body)


def test_launches_recorded_once_with_their_types(tmp_path, monkeypatch):
    path = tmp_path / "launches.jsonl"
    monkeypatch.setattr(_util, "RECORD_PATH", str(path))
    monkeypatch.setattr(_util, "_RECORDED", set())
    args = (np.zeros(3, np.int32), np.arange(6.0).reshape(2, 3)[:, 1], np.int64(2),
            np.uint64(7), np.float32(1.5), 5, 2.5)
    for _ in range(2):
        _util._record(FakeKernel(), args)
    _util._record(FakeKernel(), args[:1] + (np.zeros(3, np.int64),) + args[2:])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 2
    assert lines[0]["module"] == __name__ and lines[0]["name"] == "_kernel_body"
    script = _script()
    # Python ints and floats launch as int64 and float64, numpy scalars as
    # their dtype, arrays with their dtype, rank and layout.
    expected = [numba.typeof(a) for a in args[:2]] + [
        numba.int64, numba.uint64, numba.float32, numba.int64, numba.float64]
    assert [script.numba_type(s) for s in lines[0]["args"]] == expected
    assert script.numba_type(lines[1]["args"][1]) == numba.typeof(np.zeros(3, np.int64))
