"""Shared fixtures and settings of the serial test suite.

* ``backend``: every test that takes it runs once per array backend that
  this machine has: ``numpy`` always, ``cupy`` when cupy imports and a CUDA
  GPU answers.  Without a GPU the cupy case does not exist (rather than
  skipping), so a CPU-only run reports no spurious skips.
* hypothesis: one profile for the whole suite, derandomised (the same
  examples every run, so a CI failure reproduces here) and printing the
  reproduction blob of a failing example.  ``SPLA_HYPOTHESIS_PROFILE=explore``
  draws fresh random examples instead (for a local hunt).
"""

import os
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# tests/ holds helper modules (strategies, reference_samplers) imported by name.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

def _install_shared_array_lock():
    """Make the CUDA simulator's ``cuda.shared.array`` thread safe.

    The simulator gives a block's threads one array per call site by looking
    the site up in a dict and creating the array when it is missing, without
    a lock: two threads that get there together each make one, and a thread
    then works on an array its block does not see (a kernel's table loses
    the keys that thread inserts).  The short switch interval below makes
    that likely.  Here the lookup and creation hold a lock; the site is
    still the caller's file and line, as the simulator keys it.
    """
    import threading

    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    lock = threading.Lock()
    original = kernelapi.FakeCUDAShared.array

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic shared memory: no lookup
            return original(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)
        site = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            res = self._allocations.get(site)
            if res is None:
                res = self._allocations[site] = np.empty(shape, dtype)
        return res

    kernelapi.FakeCUDAShared.array = array


# Under the CUDA simulator every simulated GPU thread is a Python thread, and
# the simulator waits for a block's threads in a loop that holds the GIL:
# with the default 5 ms switch interval each barrier of a block costs
# several intervals.  A short interval lets the threads run (the simulator
# child's kernel tests take a fraction of the time; nothing else runs there).
if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    sys.setswitchinterval(1e-5)
    _install_shared_array_lock()


def pytest_collection_modifyitems(config, items):
    """Run the tests marked ``slow`` first, in their collected order.

    They are the long ones (an mpiexec suite, the simulator child, the main
    job): started last, one of them runs alone on one core while the other
    workers have finished, and the run waits for it.  Started first, the
    other workers take the short tests meanwhile.  The MPI suites also run
    one after another then, so only the first compiles the kernels that
    only they use; started side by side, every rank of each compiled them.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


settings.register_profile(
    "ci", derandomize=True, print_blob=True, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "explore", derandomize=False, print_blob=True, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("SPLA_HYPOTHESIS_PROFILE", "ci"))


def _gpu_available():
    try:
        import cupy
        from numba import cuda
        return bool(cuda.is_available()) and cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no cupy, no driver, no device: CPU only
        return False


BACKENDS = ["numpy"] + (["cupy"] if _gpu_available() else [])


@dataclass(frozen=True)
class Backend:
    """An array backend as tests see it."""

    name: str      # 'numpy' or 'cupy'
    device: str    # spla's device name: 'cpu' or 'cuda'
    xp: object     # the array module

    def asarray(self, a):
        """``a`` as an array of this backend."""
        return self.xp.asarray(a)

    def matrix(self, M):
        """A spla.Matrix moved to this backend."""
        return M.to(self.device)

    @staticmethod
    def host(a):
        """A numpy copy of an array of either backend."""
        from spla.backend import to_host
        return np.asarray(to_host(a))


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each array backend this machine has (numpy; cupy with a GPU)."""
    if request.param == "cupy":
        import cupy
        return Backend("cupy", "cuda", cupy)
    return Backend("numpy", "cpu", np)
