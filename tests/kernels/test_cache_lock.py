"""numba's on-disk cache written by processes side by side stays consistent.

Several processes save different keys of one function's cache at once (as
MPI ranks or test workers compiling different signatures do); afterwards
every key in the index must lead to the data saved for that key.
"""

import multiprocessing
import os

import pytest

from kernels import cache_lock

numba_caching = pytest.importorskip("numba.core.caching")

WRITERS, KEYS = 4, 25


def _writer(path, w, barrier):
    cache_lock.install()
    f = numba_caching.IndexDataCacheFile(path, "f-1.py311", ("stamp", 1))
    barrier.wait()
    for k in range(KEYS):
        f.save(("sig", w, k), ("code", w, k))


def test_concurrent_saves_keep_every_key_with_its_own_data(tmp_path):
    assert cache_lock.install()
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, barrier))
             for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    f = numba_caching.IndexDataCacheFile(str(tmp_path), "f-1.py311", ("stamp", 1))
    index = f._load_index()
    assert len(index) == WRITERS * KEYS              # no key lost
    assert len(set(index.values())) == len(index)    # one data file per key
    for key in index:
        assert f.load(key) == ("code",) + key[1:]    # each key's own data
    assert not [n for n in os.listdir(tmp_path) if ".tmp." in n]
