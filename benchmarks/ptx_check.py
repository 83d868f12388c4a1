"""Compile every CUDA kernel the simulator tests launch for a real GPU, without one.

The CUDA simulator runs kernels as plain Python, so a kernel that numba
cannot type for the device (a float index, a tuple it cannot unify, a
numpy call the CUDA target lacks) passes every simulator test and fails
only on a GPU, where a session has minutes.  This script finds those
failures on any machine:

1. it runs the simulator tests (the files of
   ``tests/kernels/test_cuda_kernels.py``'s ``SIM_FILES``) with
   ``SPLA_RECORD_KERNELS`` set, so that ``kernels.cuda._util.launch_grid``
   writes each kernel launched and its argument types once;
2. it compiles each recorded kernel to PTX for the compute capability
   asked (``numba.cuda.compile_ptx``), which needs NVVM and NVRTC but no
   GPU: ``pip install nvidia-nvvm nvidia-cuda-nvrtc``.

Usage::

    python benchmarks/ptx_check.py                 # record, then compile for sm_90
    python benchmarks/ptx_check.py --record FILE   # compile a recording made before
    python benchmarks/ptx_check.py --cc 8.0

Exit status 0 when every kernel compiled, 1 otherwise (each failure
printed with its argument types and numba's message).  Kernels made by a
factory (one per user operator) have no module-level name and are listed
as skipped.
"""

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def record(path, timeout):
    """Run the simulator tests, recording the launches into ``path``."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "kernels"))
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from test_cuda_kernels import SIM_FILES
    files = [os.path.join(ROOT, "tests", "kernels", "test_cuda_kernels.py")]
    files += [os.path.join(ROOT, "tests", f) for f in SIM_FILES]
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "SPLA_IN_CUDASIM": "1",
           "SPLA_RECORD_KERNELS": path}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "0", "-o", "addopts=", *files, "-k", "sim"],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    tail = done.stdout.strip().splitlines()[-1:] or [""]
    print(f"simulator tests: {tail[0]} ({time.perf_counter() - t0:.0f} s)")
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")


def numba_type(spec):
    from numba import from_dtype, types
    import numpy as np
    dt = from_dtype(np.dtype(spec[0]))
    return dt if len(spec) == 1 else types.Array(dt, spec[1], spec[2])


def _without_a_device(cc):
    """Device functions ask the current device for its compute capability
    when a kernel that calls them compiles: answer ``cc`` without a driver."""
    import numba.cuda.dispatcher as dispatcher

    class Device:
        compute_capability = cc

    dispatcher.get_current_device = Device


def compile_all(path, cc):
    from numba import cuda
    _without_a_device(cc)
    with open(path) as f:
        launches = [json.loads(line) for line in f if line.strip()]
    ok, failed, skipped = 0, [], set()
    for rec in launches:
        module = importlib.import_module(rec["module"])
        kernel = getattr(module, rec["name"], None) if "<locals>" not in rec["name"] else None
        fn = getattr(kernel, "py_func", None)
        if fn is None:
            skipped.add(f"{rec['module']}.{rec['name']}")
            continue
        sig = tuple(numba_type(a) for a in rec["args"])
        try:
            cuda.compile_ptx(fn, sig, cc=cc)
            ok += 1
        except Exception as exc:  # noqa: BLE001 - reported with the kernel's name
            failed.append((rec, f"{type(exc).__name__}: {exc}"))
    return ok, failed, sorted(skipped)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--record", help="compile this recording instead of making one")
    p.add_argument("--cc", default="9.0", help="compute capability (default 9.0)")
    p.add_argument("--timeout", type=int, default=1200, help="simulator tests' limit (s)")
    args = p.parse_args(argv)
    cc = tuple(int(x) for x in args.cc.split("."))
    path = args.record
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="spla-ptx-"), "launches.jsonl")
        record(path, args.timeout)
    if not os.path.exists(path):
        print(f"no launches were recorded ({path})")
        return 1
    sys.path.insert(0, ROOT)
    t0 = time.perf_counter()
    ok, failed, skipped = compile_all(path, cc)
    print(f"compiled {ok} kernel signatures for sm_{cc[0]}{cc[1]} in "
          f"{time.perf_counter() - t0:.0f} s; {len(failed)} failed; "
          f"{len(skipped)} kernels without a module-level name skipped")
    for name in skipped:
        print(f"  skipped: {name}")
    for rec, msg in failed:
        print(f"FAILED {rec['module']}.{rec['name']}{tuple(a[0] for a in rec['args'])}:")
        print("  " + "\n  ".join(msg.splitlines()[:12]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
