"""What the GPU benchmarks share: the device check and the timer."""

import sys
import time

import numpy as np


def require_gpu(script):
    """cupy with a device and numba.cuda, or exit 2 naming ``script`` and the reason."""
    try:
        import cupy
        from numba import cuda
        if not cuda.is_available():
            raise RuntimeError("numba.cuda.is_available() is False (no driver or no device)")
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no cupy, no driver, no device: one message
        print(f"{script}: needs a CUDA GPU with cupy and numba-cuda; {exc}", file=sys.stderr)
        sys.exit(2)
    return cupy


def timed(fn, repeats, sync):
    """Median seconds of ``repeats`` runs of ``fn`` after a warm-up, each ended by ``sync()``."""
    fn()
    sync()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))
