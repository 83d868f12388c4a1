"""Run under mpiexec: one failing rank must end the whole job, not hang it.

A failed test (or a failure while collecting) on any rank calls
``COMM_WORLD.Abort(1)`` when more than one rank runs, so ranks blocked in a
collective are killed at once and mpiexec exits non-zero.  Per-test
timeouts use pytest-timeout's thread method, which works while a rank is
blocked inside MPI (it dumps the stacks and exits that rank, and mpiexec
then ends the others).
"""

import os
import shutil
import sys
import tempfile

import pytest

os.environ.setdefault("NUMBA_NUM_THREADS", "1")


_OWN_BASETEMP = pytest.StashKey[str]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # Every rank is its own pytest session; sharing the default numbered
    # base temp directory lets one rank's retention cleanup delete or scan
    # another's directories mid-run.  Give each process its own, and remove it
    # at the end so repeated runs leave nothing behind.
    if config.option.basetemp is None:
        config.option.basetemp = os.path.join(tempfile.gettempdir(),
                                              f"spla-mpi-pytest-{os.getpid()}")
        config.stash[_OWN_BASETEMP] = config.option.basetemp


def pytest_unconfigure(config):
    path = config.stash.get(_OWN_BASETEMP, None)
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


def _abort(reason, details=""):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.Get_size() > 1:
        # pytest prints failure details only at the end of the session, which an
        # aborted rank never reaches: print them here or they are lost.
        if details:
            sys.stdout.write(f"\n[rank {comm.Get_rank()}] {details[-8000:]}\n")
        sys.stdout.write(f"\n[rank {comm.Get_rank()}] {reason}: aborting all ranks\n")
        from spla.comm import abort_job
        abort_job(comm, 1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        # Let pytest print this rank's report before aborting.
        item.config.hook.pytest_runtest_logreport(report=report)
        _abort(f"test {item.nodeid} failed", report.longreprtext)


def pytest_collectreport(report):
    if report.failed:
        _abort(f"collecting {report.nodeid} failed", report.longreprtext)


@pytest.fixture(scope="session")
def comm():
    from mpi4py import MPI
    return MPI.COMM_WORLD
