"""Launch the MPI test suite under mpiexec with 1, 2, 3 and 4 ranks.

The MPI tests live in tests/mpi and run in separate processes (one per
rank) started by the ``mpiexec`` that the ``mpich`` wheel installs.  Each
launch must succeed; a deliberately failing test must end the whole job
quickly (no hang).
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")

pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found (pip install mpich)")]


def _launch(nproc, target, timeout, **extra_env):
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", **extra_env)
    cmd = [MPIEXEC, "-n", str(nproc), sys.executable, "-m", "pytest", "-q", "-x",
           "-p", "no:cacheprovider", "-o", "addopts=", "--timeout=300",
           "--timeout-method=thread", "--rootdir", ROOT, target]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return proc, time.monotonic() - start


@pytest.mark.slow
@pytest.mark.parametrize("nproc", [1, 2, 3, 4])
def test_mpi_suite(nproc):
    proc, _ = _launch(nproc, "tests/mpi", timeout=900)
    out = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, f"mpiexec -n {nproc} failed:\n{out}"
    assert " passed" in proc.stdout, out


@pytest.mark.slow
def test_failure_on_one_rank_ends_the_job():
    proc, seconds = _launch(2, "tests/mpi/test_abort_on_failure.py", timeout=120,
                            SPLA_MPI_DELIBERATE_FAILURE="1")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "deliberate failure on rank 1" in proc.stdout + proc.stderr
    assert seconds < 60, f"the job took {seconds:.0f} s to end"
