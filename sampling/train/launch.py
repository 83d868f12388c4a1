"""How the job was launched (mpiexec or not), its communicator, and its thread counts."""

import contextlib
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
    return _env_int(("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"))


def world_comm(need_mpi=False):
    """COMM_WORLD when running under mpiexec (or when ``need_mpi``), else None.

    A plain ``python -m sampling.train`` does not initialise MPI at all
    unless the partitioned mode asks for it.
    """
    if not (need_mpi or launched_by_mpiexec()):
        return None
    from mpi4py import MPI
    return MPI.COMM_WORLD


_LOCAL_RANK_VARS = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")


def local_rank():
    """This process's rank among the job's ranks on its node, as the launcher set it
    (MPICH's, Open MPI's or Slurm's variable; 0 without a launcher).

    Examples
    --------
    >>> isinstance(local_rank(), int) and local_rank() >= 0
    True
    """
    return _env_int(_LOCAL_RANK_VARS)


def _env_int(names):
    """The first of the environment variables ``names`` holding a number, else 0."""
    for var in names:
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0


def local_gpu(count, rank=None):
    """The GPU index a rank drives: its node-local rank modulo the node's ``count``
    GPUs (``rank`` defaults to ``local_rank()``), or None when there is none.

    Ranks on a node spread over its GPUs as DistDGL and torch's DDP place
    them; more ranks than GPUs share them in turn.

    Examples
    --------
    >>> [local_gpu(4, r) for r in range(6)], local_gpu(0, 1)
    ([0, 1, 2, 3, 0, 1], None)
    """
    if count < 1:
        return None
    return (local_rank() if rank is None else int(rank)) % count


def use_local_gpu(torch):
    """This process's GPU as a ``torch.device``, made current for torch and cupy.

    Started by an MPI launcher (a local-rank variable is set), the rank's
    ``local_gpu``: on a node with several GPUs its ranks would otherwise all
    run on the first.  Otherwise torch's current device, as the caller left
    it (``torch.cuda.set_device``).  ``cuda`` unchanged where torch sees no
    GPU, for the caller's check to report.
    """
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 1:
        return torch.device("cuda")
    if any(os.environ.get(var, "").isdigit() for var in _LOCAL_RANK_VARS):
        index = local_gpu(count)
        torch.cuda.set_device(index)
    else:
        index = torch.cuda.current_device()
    from spla.optional import optional_import
    cupy = optional_import("cupy")
    if cupy is not None:
        # cupy's arrays (the graph, the sampled blocks) on torch's device.
        cupy.cuda.Device(index).use()
    return torch.device("cuda", index)


def default_threads():
    """Cores per rank on this node: NUMBA_NUM_THREADS if set, else cores / local ranks."""
    env = os.environ.get("NUMBA_NUM_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    local = os.environ.get("MPI_LOCALNRANKS") or os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE")
    local = int(local) if local and local.isdigit() and int(local) > 0 else 1
    return max(1, (os.cpu_count() or 1) // local)


def set_threads(numba_threads, torch_threads):
    """Set the threads for the sampling kernels (numba) and for torch, until changed again.

    Set explicitly: MPICH's mpiexec leaves torch with one thread, and numba
    would otherwise start one thread per core in every rank.  torch's count
    is process-wide and numba's holds for the calling thread: both outlive
    the call.  ``Trainer`` uses ``using_threads`` instead, which puts the
    previous counts back.
    """
    import torch
    torch.set_num_threads(int(torch_threads))
    numba = _numba()
    if numba is not None:
        numba.set_num_threads(max(1, min(int(numba_threads), numba.config.NUMBA_NUM_THREADS)))


def _numba():
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        return None
    return numba


def thread_counts():
    """(numba threads of the calling thread, torch threads of the process), changing neither.

    Examples
    --------
    >>> numba_threads, torch_threads = thread_counts()
    >>> numba_threads >= 1 and torch_threads >= 1
    True
    """
    import torch
    numba = _numba()
    # numba's first get_num_threads starts its threading layer, and its
    # OpenMP layer sets the OpenMP threads that torch shares: read torch's
    # count before, and put it back.
    torch_threads = torch.get_num_threads()
    numba_threads = numba.get_num_threads() if numba is not None else 1
    if torch.get_num_threads() != torch_threads:
        torch.set_num_threads(torch_threads)
    return numba_threads, torch_threads


@contextlib.contextmanager
def using_threads(numba_threads, torch_threads):
    """Run a block with these thread counts, then put the previous ones back.

    The previous counts come back however the block ends (an exception, a
    Ctrl-C), so a notebook that trains keeps its own settings.  Blocks nest.
    torch's count is process-wide: two threads that train at the same time
    share it (the last one to enter sets it).

    Examples
    --------
    >>> import torch
    >>> before = thread_counts()
    >>> with using_threads(1, 1):
    ...     torch.get_num_threads()
    1
    >>> thread_counts() == before
    True
    """
    import torch
    numba = _numba()
    saved_numba, saved_torch = thread_counts()
    want_numba = max(1, int(numba_threads))
    if numba is not None:
        want_numba = min(want_numba, numba.config.NUMBA_NUM_THREADS)
    try:
        if int(torch_threads) != saved_torch:
            torch.set_num_threads(int(torch_threads))
        if numba is not None and want_numba != saved_numba:
            numba.set_num_threads(want_numba)
        yield
    finally:
        if torch.get_num_threads() != saved_torch:
            torch.set_num_threads(saved_torch)
        if numba is not None and numba.get_num_threads() != saved_numba:
            numba.set_num_threads(saved_numba)


def require_torch():
    """``torch``, or ``MissingDependency`` saying training needs it and how to install it."""
    from spla.optional import require
    return require("torch", what="training", needs="PyTorch")
