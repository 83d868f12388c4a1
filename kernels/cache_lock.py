"""Make numba's on-disk cache safe for processes that compile side by side.

numba saves a compiled signature by reading the function's index file,
giving the new entry the first unused data-file number, writing the index
and then the data file.  Two processes that compile different signatures
of one function at the same time (MPI ranks, pytest-xdist workers, a
warm-up split over cores) can both read the same index, both take number
``k``, and each write the index and the data file: the index left behind
may then map one signature to the other's machine code, and every later
process that loads it calls code compiled for other argument types (a
crash, or wrong results).

``install()`` wraps the save in an exclusive ``fcntl`` lock on a file
beside the index, so the read-number-write sequence runs in one process at
a time, and writes the data file before the index, so a reader (which takes
no lock) never finds an entry whose file is not complete: each file is
replaced atomically by numba.  Where ``fcntl`` or the numba internals it
wraps are missing, numba is left as it is.
"""

import contextlib
import itertools
import os

_INSTALLED = []


@contextlib.contextmanager
def _exclusive(path):
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _locked_save(self, key, data):
    """``IndexDataCacheFile.save`` under the index's lock, data first."""
    with _exclusive(self._index_path + ".lock"):
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            used = set(overloads.values())
            name = next(n for n in map(self._data_name, itertools.count(1)) if n not in used)
        self._save_data(name, data)
        overloads[key] = name
        self._save_index(overloads)


def install():
    """Wrap numba's cache save in a file lock (once per process).

    Returns
    -------
    bool
        Whether the lock is in place (False where ``fcntl`` or numba's
        ``IndexDataCacheFile`` with the methods it uses is missing).

    Examples
    --------
    >>> from kernels import cache_lock
    >>> cache_lock.install()   # kernels' import has installed it already
    True
    """
    if _INSTALLED:
        return _INSTALLED[0]
    try:
        import fcntl  # noqa: F401  (POSIX only)

        from numba.core.caching import IndexDataCacheFile
    except ImportError:
        _INSTALLED.append(False)
        return False
    ok = all(hasattr(IndexDataCacheFile, name)
             for name in ("save", "_load_index", "_save_index", "_save_data", "_data_name"))
    if ok:
        IndexDataCacheFile.save = _locked_save
    _INSTALLED.append(ok)
    return ok
