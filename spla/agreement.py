"""Ranks that agree: one error raised on every rank, and a job that ends cleanly.

A collective whose checks fail on one rank must fail on all of them, or the
others wait in the next collective forever.  ``collective_checks`` wraps a
*Collective* function's checks and ``agree`` turns a local failure into the
same exception on every rank; ``check_same`` checks that an argument is the
same on every rank; ``abort_on_error`` and ``abort_job`` end the whole job
after printing why.  Every name here is also importable from ``spla.comm``.
"""

import contextlib
import time

import numpy as np

from spla.commbase import allgather_int, as_comm, bcast_int, mpi
from spla.exceptions import LayoutError, SplaError

#: Seconds ``abort_job`` waits between flushing the rank's output and
#: ``comm.Abort``: mpiexec forwards each rank's output through a pipe, and an
#: abort that tears the job down at once can lose what is still in it (seen
#: under load: a job ended with no output at all).
ABORT_DRAIN_S = 0.5


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


__all__ = ["ABORT_DRAIN_S", "agree", "collective_checks", "agree_min", "check_same",
           "abort_on_error", "abort_job"]
