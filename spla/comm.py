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
"""

import contextlib
import threading
import time
from collections import defaultdict

import numpy as np

from spla.backend import to_host
from spla.checks import describe
from spla.exceptions import DTypeError, LayoutError, SplaError
from spla.optional import require, require_cupy

_INT_MAX = 2 ** 31 - 1

#: Seconds ``abort_job`` waits between flushing the rank's output and
#: ``comm.Abort``: mpiexec forwards each rank's output through a pipe, and an
#: abort that tears the job down at once can lose what is still in it (seen
#: under load: a job ended with no output at all).
ABORT_DRAIN_S = 0.5
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


def mpi():
    """The mpi4py.MPI module (imported on first use).

    Examples
    --------
    >>> from spla import comm as C
    >>> C.mpi().COMM_WORLD is C.world()
    True
    """
    return require("mpi4py.MPI", what="spla's distributed matrices (MPI)")


def world():
    """COMM_WORLD (MPI is initialised on first use).

    Examples
    --------
    >>> from spla import comm as C
    >>> C.world().Get_size() >= 1
    True
    """
    return mpi().COMM_WORLD


def as_comm(comm, func="spla"):
    """``comm`` (an MPI intracommunicator) or COMM_WORLD for ``None``.

    A communicator is the one argument whose check cannot be agreed on
    (agreeing needs it): a bad one raises on the ranks that passed it.

    Examples
    --------
    >>> from spla import comm as C
    >>> C.as_comm(None) is C.world()
    True
    """
    if comm is None:
        return world()
    if not isinstance(comm, mpi().Intracomm):
        raise DTypeError(f"{func}: argument 'comm' must be an mpi4py intracommunicator "
                         f"(or None for COMM_WORLD); got {describe(comm)}")
    return comm


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


#: Exception classes a rank may re-raise for an error that another rank
#: reported (by name); anything else becomes a SplaError.
def _known_errors():
    import spla.exceptions as E
    classes = [getattr(E, name) for name in dir(E)
               if isinstance(getattr(E, name), type) and issubclass(getattr(E, name), Exception)]
    classes += [ValueError, TypeError, IndexError, KeyError, OverflowError, RuntimeError,
                MemoryError, NotImplementedError, ZeroDivisionError, FloatingPointError]
    return {cls.__name__: cls for cls in classes}


def agree(comm, error):
    """Collective: raise on every rank if any rank has an error.

    Parameters
    ----------
    comm : MPI communicator or None
        ``None`` (or a communicator of one rank) means local: ``error`` is
        raised as is.
    error : Exception or None
        This rank's failure, if any.

    Raises
    ------
    Exception
        On a failing rank, its own exception.  On every other rank, an
        exception of the same class (for spla's and Python's usual
        exception classes; ``SplaError`` otherwise) with the message of
        the lowest failing rank, followed by ``[raised on rank r of p]``.
        Every raised exception carries ``collective_origin`` (that lowest
        failing rank), which tells the main job that every rank raised it.

    Examples
    --------
    >>> from spla import comm as C
    >>> C.agree(None, None)      # nothing failed: returns on every rank
    """
    if comm is None or comm.Get_size() == 1:
        if error is not None:
            _mark(error, 0)
            raise error
        return
    flag = np.array([0 if error is None else 1], np.int32)
    out = np.empty(1, np.int32)
    comm.Allreduce(flag, out, op=mpi().SUM)
    if out[0] == 0:
        return
    ranks = np.empty(comm.Get_size(), np.int32)
    comm.Allgather(flag, ranks)
    first = int(np.flatnonzero(ranks)[0])
    text = b""
    if comm.Get_rank() == first:
        text = f"{type(error).__name__}\0{error}".encode("utf-8", "replace")
    n = bcast_int(comm, [len(text)], root=first, length=1)
    buf = np.frombuffer(text, np.uint8).copy() if text else np.empty(int(n[0]), np.uint8)
    comm.Bcast(buf, root=first)
    if error is not None:
        _mark(error, first)
        raise error
    name, _, message = buf.tobytes().decode("utf-8", "replace").partition("\0")
    cls = _known_errors().get(name, SplaError)
    exc = cls(f"{message} [raised on rank {first} of {comm.Get_size()}]")
    _mark(exc, first)
    raise exc


def _mark(error, origin):
    try:
        error.collective_origin = origin
    except Exception:  # noqa: BLE001 - an exception type that refuses attributes
        pass


@contextlib.contextmanager
def collective_checks(comm):
    """Collective: run argument checks so that every rank raises together.

    Every check of a *Collective* function (types, ranges, overflow,
    shapes, options) runs inside this block; at its end the ranks agree
    (``agree``): if any rank raised, every rank raises the same error, so
    no rank is left waiting in the next collective.  Only ``Exception``
    is caught (``KeyboardInterrupt`` passes through).

    Parameters
    ----------
    comm : MPI communicator or None
        ``None`` means a local call: an error is raised as is.

    Examples
    --------
    >>> from spla import comm as C
    >>> with C.collective_checks(None):
    ...     k = int("7")
    >>> k
    7
    """
    error = None
    try:
        yield
    except Exception as e:  # noqa: BLE001 - re-raised on every rank by agree
        error = e
    agree(comm, error)


def agree_min(comm, value):
    """Collective: the minimum of an integer over the ranks (``value`` if local).

    For settings derived from local data that steer collectives (a bulk
    size from a memory budget, say): every rank must use the same one.

    Examples
    --------
    >>> from spla import comm as C
    >>> C.agree_min(None, 5)
    5
    """
    if comm is None or comm.Get_size() == 1:
        return int(value)
    return int(allgather_int(comm, [int(value)]).min())


def check_same(comm, func, arg, values, *, present=True, expected="the same on every rank",
               cls=LayoutError, show=None):
    """Collective: raise on every rank unless ``values`` (ints) are equal on all ranks.

    Call it after the local checks (``collective_checks``) have passed:
    the values must fit int64.

    Parameters
    ----------
    comm : MPI communicator or None
        ``None`` (or one rank): nothing to compare.
    func, arg : str
        The public function and its argument, for the message.
    values : sequence of int
        This rank's values (the same length on every rank).
    present : bool, default True
        False when this rank did not pass the argument: it takes no part
        in the comparison (its ``values`` are returned as given).
    expected : str
        What the argument must be, for the message.
    cls : exception class, default LayoutError
    show : callable, optional
        Formats one rank's values for the message (default: the list).

    Returns
    -------
    numpy.ndarray of int64, shape (p, len(values))
        Every rank's values, in rank order.

    Raises
    ------
    cls
        On every rank, naming rank 0 (or the first rank that passed the
        argument) and the first rank that disagrees with it; its
        ``collective_origin`` is the disagreeing rank.

    Examples
    --------
    >>> from spla import comm as C
    >>> C.check_same(None, "f", "k", [3]).tolist()
    [[3]]
    """
    if comm is None or comm.Get_size() == 1:
        return np.asarray([list(values)], np.int64).reshape(1, -1)
    allv = allgather_int(comm, list(values) + [1 if present else 0])
    given, allv = allv[:, -1].astype(bool), allv[:, :-1]
    if not given.any():
        return allv
    ref = int(np.flatnonzero(given)[0])
    differs = given & (allv != allv[ref]).any(axis=1)
    if not differs.any():
        return allv
    bad = int(np.flatnonzero(differs)[0])
    show = show or (lambda v: str(v.tolist()))
    exc = cls(f"{func}: argument {arg!r} must be {expected}; rank {ref} passed "
              f"{show(allv[ref])}, rank {bad} passed {show(allv[bad])}")
    _mark(exc, bad)
    raise exc


@contextlib.contextmanager
def abort_on_error(comm=None, *, prefix=""):
    """End the whole MPI job when the block raises on any rank.

    A failure on one rank must never leave the others waiting in a
    collective.  Inside this block an uncaught exception is printed, with
    the rank id, on the rank where it happened, and then:

    * an error every rank raised together (a collective check, see
      ``agree``) makes every rank exit with status 1 through ``SystemExit``
      (the traceback is printed once, by the rank where it started);
    * any other exception calls ``comm.Abort(1)``, which ends every rank
      of the job at once;
    * ``KeyboardInterrupt`` aborts with status 130.

    With one rank (or no MPI) the exception propagates unchanged.  The main
    job runs inside this block; a user script gets the same guarantee from
    ``mpiexec -n 4 python -m mpi4py script.py`` or by wrapping its body.

    Parameters
    ----------
    comm : MPI communicator, default COMM_WORLD
    prefix : str
        Printed before the error (e.g. the program's name).

    Examples
    --------
    >>> from spla import comm as C
    >>> with C.abort_on_error():
    ...     total = 1 + 1
    >>> total
    2
    """
    import sys
    import traceback
    try:
        yield
    except BaseException as exc:  # noqa: BLE001 - the job must end, not hang
        if isinstance(exc, SystemExit) and not exc.code:
            raise
        comm = as_comm(comm)
        size, rank = comm.Get_size(), comm.Get_rank()
        if size == 1:
            raise
        origin = getattr(exc, "collective_origin", None)
        if origin is None or origin == rank:
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            head = f"{prefix}rank {rank} of {size} failed"
            if origin is not None:
                head += " (every rank raised this error at the same point)"
            sys.stderr.write(f"{head}:\n{text}")
        sys.stdout.flush()
        sys.stderr.flush()
        if origin is not None and not isinstance(exc, KeyboardInterrupt):
            raise SystemExit(1) from exc
        abort_job(comm, 130 if isinstance(exc, KeyboardInterrupt) else 1)


def abort_job(comm=None, errorcode=1):
    """End every rank of the job now, without losing this rank's output.

    Flushes ``sys.stdout`` and ``sys.stderr``, waits ``ABORT_DRAIN_S``
    seconds so that mpiexec can forward what they held, then calls
    ``comm.Abort(errorcode)``.  Use it instead of a bare ``Abort`` after
    printing why the job fails: an immediate ``Abort`` can end the job
    before the message reaches the terminal.

    Parameters
    ----------
    comm : MPI communicator, default COMM_WORLD
    errorcode : int
        The job's exit status (130 for an interrupt, by convention).

    Examples
    --------
    >>> import sys
    >>> from spla.comm import abort_job
    >>> print("rank 1: the input file is missing", file=sys.stderr)  # doctest: +SKIP
    >>> abort_job(errorcode=1)  # doctest: +SKIP
    """
    import sys
    comm = as_comm(comm)
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(ABORT_DRAIN_S)
    comm.Abort(errorcode)


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


def allgather_int(comm, values):
    """Allgather a small int64 vector from every rank: array (size, len).

    Examples
    --------
    >>> from spla import comm as C
    >>> C.allgather_int(C.world(), [3, 4]).tolist()       # on 1 rank
    [[3, 4]]
    """
    v = np.ascontiguousarray(values, dtype=np.int64)
    out = np.empty((comm.Get_size(), v.size), np.int64)
    comm.Allgather(v, out)
    return out


def bcast_int(comm, values, root=0, length=None):
    """Broadcast a small int64 vector of known ``length``.

    Examples
    --------
    >>> from spla import comm as C
    >>> C.bcast_int(C.world(), [7], root=0, length=1).tolist()
    [7]
    """
    buf = (np.ascontiguousarray(values, dtype=np.int64) if comm.Get_rank() == root
           else np.empty(length, np.int64))
    comm.Bcast(buf, root=root)
    return buf


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
