"""The MPI module, COMM_WORLD, communicator checks and small integer collectives.

The ground floor of spla's MPI code: ``spla.agreement`` (ranks agreeing on
errors) and ``spla.comm`` (typed buffers, byte counters, grids) build on it.
Every name here is also importable from ``spla.comm``.  mpi4py is imported
on first use, through ``spla.optional``.
"""

import numpy as np

from spla.checks import describe
from spla.exceptions import DTypeError
from spla.optional import require


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


__all__ = ["mpi", "world", "as_comm", "allgather_int", "bcast_int"]
