#!/usr/bin/env python
"""SpGEMM on the GPU against cuSPARSE: ``spla.mxm(A, A)`` and ``cupyx`` on R-MAT.

    python benchmarks/gpu_spgemm_check.py [--scales 14,16] [--repeats 5]

``A`` is R-MAT (edge factor 16, seed 0) with float32 ones, plus_times.
Each time is the median of ``--repeats`` runs after a warm-up, the device
synchronised before the clock stops.  The results are compared: the same
structure (row pointer and sorted columns) and values ``allclose``.  Where
cuSPARSE fails (its buffers at scale 16) the row says so and ours still
runs.  Prints one markdown table; exits 2 without cupy or a device, 1 when
a result differs.
"""

import argparse
import sys

import numpy as np

from gpu_common import timed


def same(cupy, C, R):
    """Whether spla's ``C`` and cupyx's ``R`` hold the same matrix."""
    R.sum_duplicates()
    R.sort_indices()
    X = C.to_cupyx()
    return (X.nnz == R.nnz and bool(cupy.array_equal(X.indptr, R.indptr))
            and bool(cupy.array_equal(X.indices, R.indices))
            and bool(cupy.allclose(X.data, R.data, rtol=1e-5)))


def row(cupy, scale, repeats):
    """One table row (a string) and whether the results agree."""
    import spla
    from spla.generators import rmat
    sync = cupy.cuda.Device().synchronize
    A = rmat(scale, 16, seed=0)
    A = A.with_values(np.ones(A.nnz, np.float32)).to("cuda")
    ours = timed(lambda: spla.mxm(A, A).new(), repeats, sync)
    C = spla.mxm(A, A).new()
    Ac = A.to_cupyx()
    try:
        theirs = timed(lambda: Ac @ Ac, repeats, sync)
        R = Ac @ Ac
    except Exception as exc:  # noqa: BLE001 - cuSPARSE refuses some sizes: say so
        return (f"| A @ A, scale {scale} | {C.nnz:,} | {ours * 1e3:.2f} | failed: "
                f"`{type(exc).__name__}` | - | - |"), True
    ok = same(cupy, C, R)
    return (f"| A @ A, scale {scale} | {C.nnz:,} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | "
            f"{theirs / ours:.2f}x | {ok} |"), ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", default="14,16")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as exc:  # noqa: BLE001 - any failure here means no usable GPU
        print(f"gpu_spgemm_check: no GPU ({exc})", file=sys.stderr)
        return 2
    lines = ["| product | nnz(C) | spla ms | cupyx ms | cupyx / spla | same |",
             "|---|---|---|---|---|---|"]
    ok = True
    for scale in (int(s) for s in args.scales.split(",")):
        line, good = row(cupy, scale, args.repeats)
        print(line, file=sys.stderr, flush=True)
        lines.append(line)
        ok = ok and good
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
