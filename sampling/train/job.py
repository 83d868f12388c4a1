"""The entry point: ``main`` (command line, exit status) and ``run`` (one training run).

Under MPI the run executes inside ``spla.comm.abort_on_error``: an error on
one rank must end the whole job, never leave the other ranks waiting in a
collective.  Errors that every rank raised together (a collective check:
bad options, a dataset that does not load, a memory budget too small on
some rank) are printed once, by rank 0, as one ``error:`` line with exit
status 2.  Any other exception, or an error raised on some ranks only, is
printed with its traceback by the rank where it happened (``rank r of p
failed``) and ends every rank with status 1.
"""

import contextlib
import faulthandler
import os
import sys
import time

from spla import comm as C
from spla.exceptions import SplaError

from sampling.loading.placement import device_oom, memory_limit, oom_message
from sampling.train.cli import build_parser, options_from_args
from sampling.train.launch import launcher_rank, require_torch, world_comm
from sampling.train.options import UsageError
from sampling.train.report import plot_phases
from sampling.train.trainer import Trainer

# Seconds a rank other than 0 waits, on Ctrl-C, for rank 0 to report it and
# end the job.
_INTERRUPT_GRACE_S = 3.0


def run(opts, comm=None, out=None):
    """Build a Trainer, train, print the table and ``test accuracy: <value>``.

    Returns the test accuracy.  ``opts.mode == 'bns'``: ``run_bns``.
    """
    out = out or sys.stdout
    _compile_notice(comm, out)
    if opts.mode == "bns":
        return run_bns(opts, comm, out)
    trainer = Trainer(opts, comm)
    say = (lambda line: print(line, file=out, flush=True)) if trainer.rank == 0 else None
    if say:
        say(trainer.describe())
    t0 = time.perf_counter()
    acc = trainer.fit(log=say)
    elapsed = time.perf_counter() - t0
    if opts.plot and trainer.rank == 0:
        plot_phases(trainer.history, opts.plot,
                    title=f"{opts.dataset}, {opts.sampler}, {trainer.size} rank(s)")
    if say:
        if opts.plot:
            say(f"phase plot written to {opts.plot}")
        say(f"trained {opts.epochs} epochs in {elapsed:.1f} s")
        say(f"test accuracy: {acc:.4f}")
    return acc


def _compile_notice(comm, out):
    """One line before a first run's silence: the kernels compile once per machine."""
    import kernels
    if kernels.compiled_cache_found():
        return
    if comm is not None and comm.Get_rank() != 0:
        return
    print("note: first run on this machine: numba compiles the kernels (about a minute "
          "on 2 cores; later runs load them from its cache)", file=out, flush=True)


def run_bns(opts, comm=None, out=None):
    """``--mode bns``: BNS-GCN full-graph training (``sampling.train.bns.BNSTrainer``).

    Prints the run's description, the per-epoch table, the per-rank
    breakdown (``sampling.train.bns.rank_table``) and ``test accuracy: <value>``
    (rank 0); returns the test accuracy.  Collective.
    """
    from sampling.train.bns import BNSTrainer, rank_table
    from sampling.train.launch import default_threads, use_local_gpu, using_threads
    from sampling.train.build import check_cuda, load_dataset as _load
    out = out or sys.stdout
    comm = world_comm(need_mpi=True) if comm is None else comm
    threads = opts.threads or default_threads()
    with using_threads(threads, opts.threads or 1):
        with C.collective_checks(comm):
            device = opts.device
            if device == "cuda":
                torch = require_torch()
                check_cuda(torch, cupy=False)
                device = use_local_gpu(torch)
            ds = _load(opts)
        trainer = BNSTrainer(ds, comm, model=opts.model or "gcn", boundary_keep=opts.boundary_keep,
                             partition=opts.partition, hidden=opts.hidden,
                             layers=opts.layers or 2, dropout=opts.dropout, lr=opts.lr,
                             weight_decay=opts.weight_decay, seed=opts.seed,
                             device=device)
        say = (lambda line: print(line, file=out, flush=True)) if trainer.rank == 0 else None
        if say:
            say(trainer.describe())
        t0 = time.perf_counter()
        acc = trainer.fit(opts.epochs, log=say)
        elapsed = time.perf_counter() - t0
    if say:
        say("per rank (means per epoch; max/mean is the imbalance):")
        for line in rank_table(trainer.history):
            say(line)
        say(f"trained {opts.epochs} epochs in {elapsed:.1f} s")
        say(f"test accuracy: {acc:.4f}")
    return acc


def main(argv=None):
    """Entry point of ``python -m sampling.train`` and ``spla-train``; returns the exit status.

    0 on success; 2 for bad input (one ``error:`` line on stderr, printed by
    rank 0); 130 after Ctrl-C; under MPI any other failure ends every rank
    with status 1 after the failing rank printed it with its rank id.

    Examples
    --------
    >>> main(["--epochs", "0"])  # doctest: +SKIP
    error: argument --epochs: expected a positive integer, got '0' (see python -m sampling.train --help)
    """
    args = build_parser().parse_args(argv)
    try:
        opts = options_from_args(args)
        require_torch()
        comm = world_comm(need_mpi=opts.graph == "partitioned" or opts.mode == "bns")
    except (UsageError, SplaError) as exc:
        # Every rank parsed the same options and found the same error; MPI may
        # not be running yet, so the launcher's rank decides who speaks.
        return _usage_error(exc, launcher_rank() == 0)
    guard = (contextlib.nullcontext() if comm is None
             else C.abort_on_error(comm, prefix="sampling.train: "))
    with guard, _interrupts_not_lost() as interrupts:
        return _train(opts, comm, interrupts)


def console_main(argv=None):
    """``python -m sampling.train`` and ``spla-train``: run ``main`` and end the process.

    Exits with ``main``'s status.  After Ctrl-C (status 130) the process
    ends at once, once its output is flushed, without the interpreter's
    finalisation: native thread pools (torch's, OpenMP's) that the
    interrupt left mid-work can abort the process there ("terminate called
    without an active exception"), which a user would read as a crash.  In
    a notebook, call ``main`` instead: it returns the status and never ends
    the process.

    Examples
    --------
    >>> console_main(["--epochs", "0"])  # doctest: +SKIP
    error: argument --epochs: expected a positive integer, got '0' (see python -m sampling.train --help)
    """
    # A crash in native code (a kernel, MPI, a thread pool) on one rank
    # would otherwise end that rank with a bare "signal 11" from the
    # launcher; the process is the job's own, so it may install the handler
    # that prints every thread's Python stack first.
    if not faulthandler.is_enabled():
        faulthandler.enable()
    status = main(argv)
    if status == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        mpi = sys.modules.get("mpi4py.MPI")
        # Under mpiexec -n 1 the launcher expects MPI_Finalize; with more
        # ranks the job has been aborted already.
        if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
            mpi.Finalize()
        os._exit(130)
    sys.exit(status)


@contextlib.contextmanager
def _abort_if_prefetch_stuck(comm):
    """End every rank when an error leaves this rank's prefetch thread in a collective.

    The trainer flags the exception (``prefetch_stuck``) when its
    background thread did not end after the epoch stopped: it waits in a
    collective the other ranks will not join, and MPI cannot finalize
    under it, so even an error every rank raised together (exit status 2)
    must end the job by ``Abort``.  ``KeyboardInterrupt`` is left to
    ``_train``, which aborts with status 130 under MPI anyway.
    """
    try:
        yield
    except BaseException as exc:  # noqa: BLE001 - inspected, then re-raised or aborted
        if (comm is None or comm.Get_size() == 1 or _is_interrupt(exc)
                or not getattr(exc, "prefetch_stuck", False)):
            raise
        import traceback
        if getattr(exc, "collective_origin", comm.Get_rank()) == comm.Get_rank():
            sys.stderr.write(f"sampling.train: rank {comm.Get_rank()} of {comm.Get_size()} "
                             "failed:\n" + "".join(traceback.format_exception(
                                 type(exc), exc, exc.__traceback__)))
        C.abort_job(comm, 130 if isinstance(exc, KeyboardInterrupt) else 1)


@contextlib.contextmanager
def _interrupts_not_lost():
    """Ctrl-C that lands in a finalizer still stops the job, without a traceback.

    Python raises KeyboardInterrupt wherever the main thread is; inside a
    ``__del__`` (numba's compiler objects are collected at any time) it
    can only print "Exception ignored ... Traceback" and drop it, and the
    run goes on.  While training, such an interrupt is delivered again to
    the main thread (``_thread.interrupt_main``) from a short-lived thread,
    so that it is raised after the finalizer and this hook have returned
    (called from the main thread itself it would be raised inside the
    hook, and dropped again); other unraisable errors are reported as
    before, until the job is interrupted (``interrupted`` of the yielded
    state, set by the hook or by ``_train``): from then on they are the
    interrupt's echoes, not news.  A finalizer that Ctrl-C cut short can
    fail when it runs again (llvmlite's ``ObjectRef.__del__``: "no attribute
    '_as_parameter_'"), and its traceback would follow the one-line message.
    """
    import _thread
    import threading
    import types
    previous = sys.unraisablehook
    state = types.SimpleNamespace(interrupted=False)

    def hook(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            state.interrupted = True
            threading.Timer(0.01, _thread.interrupt_main).start()
            return
        if not state.interrupted:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield state
    finally:
        sys.unraisablehook = previous


def _train(opts, comm, interrupts=None):
    rank = 0 if comm is None else comm.Get_rank()
    size = 1 if comm is None else comm.Get_size()
    try:
        with _abort_if_prefetch_stuck(comm):
            run(opts, comm)
        return 0
    except (KeyboardInterrupt, SystemError) as exc:
        if not _is_interrupt(exc):
            raise
        if interrupts is not None:
            interrupts.interrupted = True
        if rank != 0:
            # mpiexec passes Ctrl-C to every rank, and rank 0 speaks for the
            # job; but rank 0 may never see it (blocked in a collective that
            # this rank has left), so after a grace period this rank says it
            # and ends the job itself.
            time.sleep(_INTERRUPT_GRACE_S)
        sys.stderr.write("interrupted: training stopped (Ctrl-C)\n")
        sys.stderr.flush()
        if size > 1:
            C.abort_job(comm, 130)
        return 130
    except (UsageError, SplaError) as exc:
        if size > 1 and getattr(exc, "collective_origin", None) is None:
            # Raised on this rank alone: the others may be waiting in a
            # collective, so abort_on_error must end the job.
            raise
        return _usage_error(exc, rank == 0)
    except Exception as exc:  # noqa: BLE001 - only a device OOM is handled, others re-raised
        oom = device_oom(exc)
        if oom is None or size > 1:
            # Under MPI an OOM is one rank's: abort_on_error ends the job.
            raise
        cap = None
        if getattr(opts, "device", None) == "cuda":
            with contextlib.suppress(Exception):  # a bad $SPLA_DEVICE_MEMORY_LIMIT: no cap
                cap = memory_limit(opts.device_memory_limit)
        return _usage_error(oom_message(oom, cap), True)


def _is_interrupt(exc):
    """Whether ``exc`` is Ctrl-C: a KeyboardInterrupt, or the SystemError that
    CPython makes of one left pending by compiled code calling back into Python
    (numba's jitted functions outside ``kernels.parallel`` do so)."""
    while isinstance(exc, SystemError) and exc.__cause__ is not None:
        exc = exc.__cause__
    return isinstance(exc, KeyboardInterrupt)


def _usage_error(exc, speak):
    if speak:
        sys.stderr.write(f"error: {' '.join(str(exc).split())}\n")
        sys.stderr.flush()
    return 2
