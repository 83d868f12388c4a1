"""The C allocator's policy for the kernels' large arrays (glibc only).

A bulk of minibatches allocates and frees arrays of tens of megabytes on
every call (picks, relabelled columns, their permutations).  glibc serves
a request above its mmap threshold (which grows with what was freed, up to
32 MiB) with a fresh mapping from the kernel and unmaps it on ``free``, so
each call touches new pages: one page fault, and a page zeroed, per 4 KiB,
a large share of a bulk's time (docs/design.rst, "Freed memory is reused").

``reuse_freed_memory`` turns that off: every request is served from the
heap, and up to ``TRIM_THRESHOLD`` bytes of freed memory stay in the
process to serve the next call, as a caching allocator keeps them.

That alone would hold on the main thread only.  glibc gives each new
thread an arena of its own, whose heaps are at most 64 MiB, and serves a
larger request there by a fresh mapping whatever ``mallopt`` says: a
prefetching loader's thread would gather each bulk's features (about 150
MB at R-MAT scale 18) into new pages, 3-4x slower than into reused ones.
So the policy also keeps every thread started afterwards on the one heap
(one arena).  The threads that contend for its lock are the kernels'
workers, which allocate per chunk of rows, not per entry, and Python
threads, which allocate under the interpreter's lock anyway.

``import kernels`` applies it unless the environment says
``SPLA_MALLOC=system``.  The cost is resident memory:
after a peak, up to ``TRIM_THRESHOLD`` of freed memory stays mapped to the
process (reused, not leaked).
"""

import ctypes
import sys

#: Environment variable choosing the policy at import: ``reuse`` (default)
#: or ``system`` (leave the C allocator as the process set it).
ENV = "SPLA_MALLOC"
POLICIES = ("reuse", "system")

#: Freed memory kept at the top of the heap before it is returned to the
#: system (1 GiB; ``mallopt`` takes a C int).
TRIM_THRESHOLD = 2 ** 30

# mallopt's parameters and glibc's static defaults (malloc.h, mallopt(3)).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
_DEFAULT_TRIM_THRESHOLD = 128 * 1024
_DEFAULT_MMAP_MAX = 65536
_DEFAULT_ARENA_MAX = 0      # 0: glibc's own limit, from the number of cores


def _glibc():
    """The process's C library when it is glibc, else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version     # glibc's own symbol: musl has none
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return libc


def reuse_freed_memory(enabled=True):
    """Serve large arrays from memory freed by earlier calls (glibc).

    With ``enabled``, glibc maps no fresh memory per request, keeps up to
    ``TRIM_THRESHOLD`` bytes of freed memory for later requests, and serves
    threads started afterwards from the same heap (threads that already
    allocated keep their arenas); without, its static defaults come back (a
    mapping per request of 128 KiB or more, freed memory returned above 128
    KiB; the threshold no longer adapts as it does before any ``mallopt``
    call).  glibc fixes its limit on arenas the first time a thread needs
    one, so switching off after threads have allocated leaves them on one
    heap.  Process-wide, like any allocator setting.  ``import kernels``
    calls it unless ``SPLA_MALLOC=system``.

    Parameters
    ----------
    enabled : bool, default True

    Returns
    -------
    bool
        Whether the setting was applied (False where the C library is not
        glibc: nothing is changed there).

    Examples
    --------
    >>> from kernels.allocator import reuse_freed_memory
    >>> reuse_freed_memory() in (True, False)
    True
    """
    libc = _glibc()
    if libc is None:
        return False
    if enabled:
        settings = ((_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
                    (_M_ARENA_MAX, 1))
    else:
        settings = ((_M_MMAP_MAX, _DEFAULT_MMAP_MAX),
                    (_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD),
                    (_M_ARENA_MAX, _DEFAULT_ARENA_MAX))
    return all(libc.mallopt(p, v) == 1 for p, v in settings)


def apply_policy(environ):
    """Apply the policy ``environ[ENV]`` names (``reuse`` when unset).

    Returns whether the allocator was changed.

    Raises
    ------
    ValueError
        An unknown policy.

    Examples
    --------
    >>> apply_policy({"SPLA_MALLOC": "system"})
    False
    """
    policy = environ.get(ENV, "reuse").strip().lower() or "reuse"
    if policy not in POLICIES:
        raise ValueError(f"import kernels: environment variable {ENV!r} must be one of "
                         f"{list(POLICIES)}, got {environ.get(ENV)!r}")
    return policy == "reuse" and reuse_freed_memory(True)
