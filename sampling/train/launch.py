"""How the job was launched (mpiexec or not), its communicator, and its thread counts."""

import os

_LAUNCHER_VARS = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def launched_by_mpiexec():
    """True when this process was started by an MPI launcher."""
    return any(v in os.environ for v in _LAUNCHER_VARS)


def launcher_rank():
    """This process's rank as the MPI launcher set it (0 without a launcher).

    Known before MPI is initialised: errors found while parsing the command
    line, the same on every rank, are printed by rank 0 only.

    Examples
    --------
    >>> isinstance(launcher_rank(), int)
    True
    """
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0


def world_comm(need_mpi=False):
    """COMM_WORLD when running under mpiexec (or when ``need_mpi``), else None.

    A plain ``python -m sampling.train`` does not initialise MPI at all
    unless the partitioned mode asks for it.
    """
    if not (need_mpi or launched_by_mpiexec()):
        return None
    from mpi4py import MPI
    return MPI.COMM_WORLD


def default_threads():
    """Cores per rank on this node: NUMBA_NUM_THREADS if set, else cores / local ranks."""
    env = os.environ.get("NUMBA_NUM_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    local = os.environ.get("MPI_LOCALNRANKS") or os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE")
    local = int(local) if local and local.isdigit() and int(local) > 0 else 1
    return max(1, (os.cpu_count() or 1) // local)


def set_threads(numba_threads, torch_threads):
    """Threads of this process for the sampling kernels (numba) and for torch.

    Set explicitly: MPICH's mpiexec leaves torch with one thread, and numba
    would otherwise start one thread per core in every rank.
    """
    import torch
    torch.set_num_threads(int(torch_threads))
    try:
        import numba
        numba.set_num_threads(max(1, min(int(numba_threads), numba.config.NUMBA_NUM_THREADS)))
    except (ImportError, ValueError):  # pragma: no cover
        pass


def require_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        from spla.exceptions import MissingDependency
        raise MissingDependency("training needs PyTorch; install it with "
                                "`pip install -e \".[train]\"`") from None
    return torch
