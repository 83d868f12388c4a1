"""The threading layer of the parallel CPU kernels: Intel TBB when installed.

numba runs a ``prange`` loop on one of three threading layers, chosen when
the first parallel kernel runs: TBB, OpenMP (GNU libgomp) or its own
workqueue ("default" tries them in that order).  They differ in what a
parallel region costs when its threads are not already running:

* libgomp's threads wait at the end of a region for the slowest one.
  Spinning there burns cores that other processes need (the main job beside
  four busy processes on 2 cores took 2.7 times as long), sleeping makes
  every region pay a wake-up (30-130 us on a 2-core VM), and a fused hop has
  several regions, so one small minibatch per call ran up to 6 times slower
  on 2 threads than on one.
* TBB's threads steal work: the calling thread runs the region's chunks
  itself while a worker is still waking up or descheduled, so a region
  costs a few microseconds whether the cores are free or taken.
* workqueue aborts when two Python threads run parallel kernels at once (a
  prefetching loader does), so the library never wants it.

The TBB wheel from PyPI (a dependency of this package on the platforms it
is built for) puts ``libtbb.so.12`` in the environment's ``lib`` folder,
which the dynamic linker does not search, so numba's TBB layer fails to load
and numba falls back to libgomp.  ``load_tbb`` loads the library by its
path first; numba's layer then links to the copy already in the process.
``import kernels`` calls it unless ``NUMBA_THREADING_LAYER`` names another
layer.  Measurements: docs/design.rst ("Threads"),
``benchmarks/results/threads_cpu.md``.
"""

import ctypes
import os
import sys

#: The TBB runtime's file name that numba's layer links to (oneTBB 2021+).
TBB_LIBRARY = "libtbb.so.12"
#: ``NUMBA_THREADING_LAYER`` values under which numba may choose TBB.
TBB_ALLOWED = ("", "default", "tbb", "safe", "threadsafe", "forksafe")


def tbb_library_path():
    """Where the installed ``tbb`` distribution put ``libtbb.so.12``, or None.

    Examples
    --------
    >>> path = tbb_library_path()
    >>> path is None or path.endswith("libtbb.so.12")
    True
    """
    from importlib import metadata
    try:
        files = metadata.files("tbb") or ()
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name == TBB_LIBRARY:
            path = os.path.normpath(str(f.locate()))
            if os.path.isfile(path):
                return path
    return None


def load_tbb(environ=None):
    """Load the TBB runtime so that numba's parallel kernels run on it.

    Does nothing (returns None) off Linux, when ``NUMBA_THREADING_LAYER``
    in ``environ`` (default ``os.environ``) names a layer other than TBB,
    or when the ``tbb`` package is not installed or its library does not
    load; numba then chooses as it would have.  Must run before the first
    parallel kernel: numba picks its layer once per process.

    Returns
    -------
    str or None
        The path of the library loaded.

    Examples
    --------
    >>> load_tbb({"NUMBA_THREADING_LAYER": "omp"}) is None
    True
    """
    environ = os.environ if environ is None else environ
    if not sys.platform.startswith("linux"):
        return None
    if environ.get("NUMBA_THREADING_LAYER", "").strip().lower() not in TBB_ALLOWED:
        return None
    path = tbb_library_path()
    if path is None:
        return None
    try:
        # Global: numba's layer resolves TBB's symbols against this copy.
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None
    return path


__all__ = ["TBB_LIBRARY", "load_tbb", "tbb_library_path"]
