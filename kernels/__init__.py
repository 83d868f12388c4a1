"""Compute kernels of spla: arrays in, arrays out; no matrices, no MPI.

``kernels.cpu`` holds numba ``@njit`` kernels, ``kernels.cuda`` their
numba.cuda twins.  Helpers shared by both (random numbers, searches, the
row-level sampler) live at this level.

Importing this package loads Intel TBB's runtime when the ``tbb`` package
is installed, so that numba runs the parallel kernels on TBB's
work-stealing threads, whose regions cost microseconds whether cores are
free or busy (``kernels.threads``; ``NUMBA_THREADING_LAYER=omp`` keeps
OpenMP).

It also sets ``OMP_WAIT_POLICY=PASSIVE`` in the environment unless the user
set it.  GNU libgomp (numba's OpenMP layer where TBB is missing, and
torch's CPU threads) by default spins at the end of every parallel region
waiting for the other threads.  On a machine with more runnable threads
than cores a spinning thread burns the core that the thread it waits for
needs, and a loop of small parallel regions slows down tenfold and more.
libgomp reads the variable once, when it is loaded, so it must be set
before that: this module is imported before any kernel runs.  See
docs/design.rst ("Threads") for the measurements; set
``OMP_WAIT_POLICY=ACTIVE`` to get the spinning back.

Importing it also makes numba's on-disk cache safe for processes that
compile side by side (``kernels.cache_lock``: MPI ranks, test workers).

It also keeps freed memory in the process for the next call's arrays
(``kernels.allocator``: glibc maps and unmaps large requests afresh, a page
fault per 4 KiB touched), on the threads started afterwards too (they share
one heap); ``SPLA_MALLOC=system`` leaves the allocator alone.
"""

import os

from kernels import allocator as _allocator
from kernels import cache_lock as _cache_lock
from kernels import threads as _threads

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
_threads.load_tbb()
_allocator.apply_policy(os.environ)
_cache_lock.install()


def compiled_cache_found():
    """Whether numba's on-disk cache holds compiled CPU kernels of this package.

    Every kernel is ``cache=True``: the first process on a machine compiles
    them (about a minute on 2 cores), later ones load them.  The main job
    uses this to say so before a first run's long silence.  It looks where
    numba writes the cache by default (``__pycache__`` beside the sources,
    or ``NUMBA_CACHE_DIR``) for one index file; False when none is there.
    """
    import glob
    here = os.path.dirname(os.path.abspath(__file__))
    places = [os.path.join(here, "cpu", "__pycache__")]
    if os.environ.get("NUMBA_CACHE_DIR"):
        places.append(os.environ["NUMBA_CACHE_DIR"])
    return any(glob.glob(os.path.join(p, "**", "*.nbi"), recursive=True) for p in places)
