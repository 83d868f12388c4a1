"""The one place spla talks MPI: counts, Alltoallv, Allgatherv, grids, bytes.

Everything moves as typed buffers (no pickle).  Every exchange is recorded
in a byte counter under an operation name, so tests can assert that a step
moved nothing and benchmarks can report what each step moved::

    with spla.comm.counting() as bytes_moved:
        ...
    bytes_moved["fetch_rows"]     # bytes this rank sent for that step

Collectives must be called by every rank of the communicator.  ``agree``
turns a local failure into the same exception on every rank, so no rank is
left waiting in a collective.

The MPI module, COMM_WORLD and the communicator check live in
``spla.commbase``, the agreement on errors in ``spla.agreement``; their
names are importable from here as well.
"""

import contextlib
import threading
from collections import defaultdict

import numpy as np

from spla.agreement import (ABORT_DRAIN_S, abort_job, abort_on_error, agree,  # noqa: F401
                            agree_min, check_same, collective_checks)
from spla.backend import to_host
from spla.commbase import allgather_int, as_comm, bcast_int, mpi, world  # noqa: F401
from spla.exceptions import LayoutError
from spla.optional import require, require_cupy

_INT_MAX = 2 ** 31 - 1
# Active byte counters, per Python thread: a counting() block measures what
# its own thread moves, not what a background thread moves meanwhile.
_local = threading.local()


def _counters():
    stack = getattr(_local, "counters", None)
    if stack is None:
        stack = _local.counters = []
    return stack
_GRID_KEYVAL = []  # the MPI attribute key of the process grids (created once)
_MPI_TYPES = {}  # numpy dtype -> MPI datatype (see mpi_type)


@contextlib.contextmanager
def counting():
    """Count bytes sent by this rank per operation name inside the block.

    Counters nest (an inner block's bytes count in the outer ones too) and
    belong to the calling thread: bytes moved by other threads meanwhile are
    not counted here.

    Examples
    --------
    >>> from spla import comm as C
    >>> with C.counting() as moved:
    ...     C.record("fetch_rows.request", 16)
    >>> moved["fetch_rows.request"]
    16
    """
    c = defaultdict(int)
    stack = _counters()
    stack.append(c)
    try:
        yield c
    finally:
        # By identity: list.remove compares by value, and two nested counters
        # with equal counts (both empty, say) would remove the outer one.
        for i, other in enumerate(stack):
            if other is c:
                del stack[i]
                break


def record(op, nbytes):
    """Add ``nbytes`` sent by this rank under ``op`` to every active counter.

    ``op=None`` counts nothing (for messages outside any byte model, such as
    the scalars of a progress report).

    Examples
    --------
    >>> from spla import comm as C
    >>> with C.counting() as moved:
    ...     C.record("example", 8)
    >>> dict(moved)
    {'example': 8}
    """
    if op is None:
        return
    for c in _counters():
        c[op] += int(nbytes)


def _host(arr):
    """Host buffer for MPI (cupy arrays are copied unless MPI is CUDA-aware)."""
    if isinstance(arr, np.ndarray):
        return np.ascontiguousarray(arr)
    import os
    if os.environ.get("SPLA_CUDA_AWARE_MPI") == "1":
        cupy = require_cupy("spla.comm")
        cupy.cuda.get_current_stream().synchronize()
        return cupy.ascontiguousarray(arr)
    return np.ascontiguousarray(to_host(arr))


#: dtypes that travel in spla's messages, by a small integer code
_WIRE_DTYPES = (None, np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32),
                np.dtype(np.int64))


def dtype_code(dtype):
    """The wire code of a value dtype (``None`` for a structural matrix is 0).

    Examples
    --------
    >>> import numpy as np
    >>> from spla import comm as C
    >>> C.dtype_code(None), C.dtype_code(np.float32), C.code_dtype(C.dtype_code(np.int64))
    (0, 1, dtype('int64'))
    """
    if dtype is None:  # not ==: numpy compares dtype('float64') == None as True
        return 0
    return 1 + _WIRE_DTYPES[1:].index(np.dtype(dtype))


def code_dtype(code):
    """The dtype of a wire code (inverse of ``dtype_code``).

    Examples
    --------
    >>> from spla import comm as C
    >>> C.code_dtype(2), C.code_dtype(0) is None
    (dtype('float64'), True)
    """
    return _WIRE_DTYPES[int(code)]


def counts_displs(counts):
    """(counts, displacements) as int64 arrays.

    Examples
    --------
    >>> from spla import comm as C
    >>> [a.tolist() for a in C.counts_displs([2, 0, 3])]
    [[2, 0, 3], [0, 2, 2]]
    """
    counts = np.asarray(counts, np.int64)
    displs = np.zeros(counts.size, np.int64)
    np.cumsum(counts[:-1], out=displs[1:])
    return counts, displs


def send_array(comm, arr, dest, tag, op):
    """Point to point: send a 1-D array to rank ``dest`` (matched by ``recv_array``).

    Arrays of any length go in pieces of at most 2**31 - 1 bytes (MPI
    counts are C ints), always at least one message, so the receiver needs
    only the length.  The bytes are counted under ``op``.

    Examples
    --------
    >>> from spla import comm as C
    >>> if comm.Get_rank() == 0:                         # doctest: +SKIP
    ...     C.send_array(comm, np.arange(5), 1, tag=7, op="example")
    ... elif comm.Get_rank() == 1:
    ...     data = C.recv_array(comm, np.empty(5, np.int64), 0, tag=7)
    """
    arr = _host(arr).reshape(-1)
    step = max(1, _INT_MAX // max(1, arr.itemsize))
    mpitype = _mpi_type(arr.dtype)
    for s in range(0, max(arr.size, 1), step):
        comm.Send([arr[s:s + step], mpitype], dest=dest, tag=tag)
    record(op, arr.nbytes)


def recv_array(comm, out, source, tag):
    """Point to point: fill the 1-D numpy array ``out`` from ``send_array`` on ``source``.

    Examples
    --------
    See ``send_array``.
    """
    step = max(1, _INT_MAX // max(1, out.itemsize))
    mpitype = _mpi_type(out.dtype)
    for s in range(0, max(out.size, 1), step):
        comm.Recv([out[s:s + step], mpitype], source=source, tag=tag)
    return out


def bcast_array(comm, arr, root, op):
    """Collective: ``root``'s 1-D array in ``arr`` on every rank (same length everywhere).

    For the samplers' and trainers' exchanges, so that every MPI call of
    the project goes through this module and is counted under ``op``.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import comm as C
    >>> C.bcast_array(C.world(), np.arange(3.0), 0, "example").tolist()
    [0.0, 1.0, 2.0]
    """
    buf = _host(arr).reshape(-1)
    step = max(1, _INT_MAX // max(1, buf.itemsize))
    mpitype = _mpi_type(buf.dtype)
    for s in range(0, buf.size, step):
        comm.Bcast([buf[s:s + step], mpitype], root=root)
    if comm.Get_rank() == root:
        record(op, buf.nbytes * (comm.Get_size() - 1))
    return buf


def allreduce_array(comm, arr, reduction, op):
    """Collective: the elementwise ``'sum'``, ``'max'`` or ``'min'`` of a 1-D array over the ranks.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import comm as C
    >>> C.allreduce_array(C.world(), np.array([1, 5]), "max", "example").tolist()
    [1, 5]
    """
    MPI = mpi()
    ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
    if reduction not in ops:
        raise ValueError(f"allreduce_array: argument 'reduction' must be one of "
                         f"{sorted(ops)}; got {reduction!r}")
    buf = _host(arr).reshape(-1)
    out = np.empty_like(buf)
    # No explicit datatype: reductions need MPI's predefined types, which
    # mpi4py picks from the numpy buffer itself (mpi_type's are user types).
    step = max(1, _INT_MAX // max(1, buf.itemsize))
    for s in range(0, buf.size, step):
        comm.Allreduce(buf[s:s + step], out[s:s + step], op=ops[reduction])
    # Counted as a bandwidth-optimal allreduce sends (reduce-scatter, then
    # allgather): 2 (p - 1) / p of the buffer per rank.
    p = comm.Get_size()
    record(op, 2 * buf.nbytes * (p - 1) // p)
    return out


def alltoallv(comm, send, sendcounts, op):
    """Personalised all-to-all of a 1-D array (collective).

    ``send`` holds the data for rank 0, then rank 1, ...; ``sendcounts[r]``
    elements go to rank ``r``.  Returns ``(recv, recvcounts)``.  Messages of
    more than 2**31 - 1 elements are sent in rounds, so any size works.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import comm as C
    >>> recv, counts = C.alltoallv(C.world(), np.arange(3), [3], "example")  # 1 rank
    >>> recv.tolist(), counts.tolist()
    ([0, 1, 2], [3])
    """
    MPI = mpi()
    p = comm.Get_size()
    send = _host(send)
    sendcounts, sdispl = counts_displs(sendcounts)
    recvcounts = np.empty(p, np.int64)
    comm.Alltoall(sendcounts, recvcounts)
    recvcounts, rdispl = counts_displs(recvcounts)
    recv = np.empty(int(recvcounts.sum()), send.dtype)
    mpitype = _mpi_type(send.dtype)
    # Rounds of at most INT_MAX elements per peer keep counts in C int.
    done_s = np.zeros(p, np.int64)
    done_r = np.zeros(p, np.int64)
    while True:
        sc = np.minimum(sendcounts - done_s, _INT_MAX)
        rc = np.minimum(recvcounts - done_r, _INT_MAX)
        more = np.array([int(sc.sum() + rc.sum() > 0)], np.int32)
        anymore = np.empty(1, np.int32)
        comm.Allreduce(more, anymore, op=MPI.MAX)
        if anymore[0] == 0:
            break
        sbuf = np.concatenate([send[sdispl[r] + done_s[r]: sdispl[r] + done_s[r] + sc[r]]
                               for r in range(p)]) if p else send[:0]
        rbuf = np.empty(int(rc.sum()), send.dtype)
        comm.Alltoallv([sbuf, (sc.astype(np.int32), counts_displs(sc)[1].astype(np.int32)), mpitype],
                       [rbuf, (rc.astype(np.int32), counts_displs(rc)[1].astype(np.int32)), mpitype])
        off = 0
        for r in range(p):
            recv[rdispl[r] + done_r[r]: rdispl[r] + done_r[r] + rc[r]] = rbuf[off:off + rc[r]]
            off += rc[r]
        done_s += sc
        done_r += rc
    me = comm.Get_rank()
    record(op, (sendcounts.sum() - sendcounts[me]) * send.dtype.itemsize)
    return recv, recvcounts


def allgatherv(comm, arr, op):
    """Concatenate every rank's 1-D array on every rank: (all, counts).

    Examples
    --------
    >>> import numpy as np
    >>> from spla import comm as C
    >>> out, counts = C.allgatherv(C.world(), np.arange(2.0), "example")   # 1 rank
    >>> out.tolist(), counts.tolist()
    ([0.0, 1.0], [2])
    """
    MPI = mpi()
    arr = _host(arr)
    counts = allgather_int(comm, [arr.size])[:, 0]
    if counts.sum() > _INT_MAX * 1:
        # Rare: fall back to per-root broadcasts of at most INT_MAX elements.
        parts = []
        for r in range(comm.Get_size()):
            buf = arr if r == comm.Get_rank() else np.empty(int(counts[r]), arr.dtype)
            for s in range(0, int(counts[r]), _INT_MAX):
                comm.Bcast(buf[s:s + _INT_MAX], root=r)
            parts.append(buf)
        out = np.concatenate(parts)
    else:
        out = np.empty(int(counts.sum()), arr.dtype)
        _, displs = counts_displs(counts)
        comm.Allgatherv(arr, [out, (counts.astype(np.int32), displs.astype(np.int32)),
                              _mpi_type(arr.dtype)])
    record(op, arr.nbytes * (comm.Get_size() - 1))
    return out, counts


class ProcessGrid:
    """The (p/c) x c grid of a communicator, with its row and column communicators.

    ``row_comm`` joins the c ranks of a process row (which hold the same
    block); ``col_comm`` joins the p/c ranks of a process column (which
    together hold every block once).  Created once per (comm, c).

    Examples
    --------
    >>> from spla import comm as C
    >>> g = C.grid(C.world(), 1)                       # on 1 rank
    >>> (g.row, g.col, g.row_comm.Get_size(), g.col_comm.Get_size())
    (0, 0, 1, 1)
    """

    def __init__(self, comm, c):
        self.comm = comm
        self.p = comm.Get_size()
        self.rank = comm.Get_rank()
        if self.p % c:
            raise LayoutError(f"ProcessGrid: argument 'replication' must divide the number "
                              f"of ranks p = {self.p}; got {c}")
        self.c = c
        self.row, self.col = divmod(self.rank, c)
        self.row_comm = comm.Split(self.row, self.col)
        self.col_comm = comm.Split(self.col, self.row)


def mpi_type(dtype):
    """The MPI datatype of a numpy dtype (public mpi4py API, no private tables).

    Examples
    --------
    >>> import numpy as np
    >>> from spla import comm as C
    >>> t = C.mpi_type(np.float64)
    >>> t.Get_size(), C.mpi_type(np.float64) is t
    (8, True)
    """
    # from_numpy_dtype builds a new (committed, user) datatype on each call:
    # one per dtype, kept for the life of the process, instead of one
    # leaked per message.
    dtype = np.dtype(dtype)
    t = _MPI_TYPES.get(dtype)
    if t is None:
        dtlib = require("mpi4py.util.dtlib", what="spla.comm.mpi_type")
        t = _MPI_TYPES[dtype] = dtlib.from_numpy_dtype(dtype)
    return t


_mpi_type = mpi_type


def _free_grids(comm, keyval, grids):
    # Called by MPI when ``comm`` is freed: the sub-communicators go with it.
    for g in grids.values():
        for sub in (g.row_comm, g.col_comm):
            try:
                sub.Free()
            except Exception:  # noqa: BLE001 - MPI may be finalizing
                pass


def grid(comm, c):
    """The ProcessGrid of (comm, c), created on first use (collective then).

    Grids are cached *on the communicator* as an MPI attribute, so a grid
    lives exactly as long as its communicator: freeing the communicator
    frees its grids, and a new communicator (even one MPI gives a recycled
    handle) never sees an old one's grid.

    Examples
    --------
    >>> from spla import comm as C
    >>> g = C.grid(C.world(), 1)
    >>> (g.p == C.world().Get_size(), g.c, C.grid(C.world(), 1) is g)
    (True, 1, True)
    """
    MPI = mpi()
    if not _GRID_KEYVAL:
        _GRID_KEYVAL.append(MPI.Comm.Create_keyval(delete_fn=_free_grids))
    key = _GRID_KEYVAL[0]
    grids = comm.Get_attr(key)
    if grids is None:
        grids = {}
        comm.Set_attr(key, grids)
    g = grids.get(c)
    if g is None:
        g = grids[c] = ProcessGrid(comm, c)
    return g
