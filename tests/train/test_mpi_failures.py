"""A failure on one rank ends the whole MPI job, in user scripts too.

Each test writes a small script to ``tmp_path`` and runs it under the
``mpiexec`` of the ``mpich`` wheel (next to ``sys.executable``), with a
timeout: a hang fails the test instead of blocking the suite.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")

pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found (pip install mpich)")]

#: a job that fails on one rank must end well within this (it would hang forever)
LIMIT_S = 30


def _run(tmp_path, nproc, body, *python_args, timeout=120):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    cmd = [MPIEXEC, "-n", str(nproc), sys.executable, *python_args, str(script)]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return proc, time.monotonic() - start


# rank 1 fails while rank 0 waits in a collective
RANK1_FAILS = """
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 1:
        raise RuntimeError("rank 1 cannot go on")
    comm.Barrier()
    print("rank", comm.Get_rank(), "passed the barrier", flush=True)
"""


@pytest.mark.slow
def test_python_m_mpi4py_ends_the_job(tmp_path):
    proc, seconds = _run(tmp_path, 2, RANK1_FAILS, "-m", "mpi4py")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "RuntimeError: rank 1 cannot go on" in out
    assert "passed the barrier" not in out
    assert seconds < LIMIT_S, f"the job took {seconds:.0f} s to end"


@pytest.mark.slow
def test_abort_on_error_ends_the_job(tmp_path):
    body = """
        from spla import comm as C
        with C.abort_on_error():
    """ + textwrap.indent(textwrap.dedent(RANK1_FAILS), " " * 12)
    proc, seconds = _run(tmp_path, 2, body)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "rank 1 of 2 failed" in out and "RuntimeError: rank 1 cannot go on" in out
    assert "passed the barrier" not in out
    assert seconds < LIMIT_S, f"the job took {seconds:.0f} s to end"


@pytest.mark.slow
def test_collective_check_failing_on_one_rank_raises_everywhere(tmp_path):
    # Each rank writes what it raised to a file of its own: the ranks' stdout
    # streams reach mpiexec interleaved, so lines can run into each other.
    body = """
        import os
        from mpi4py import MPI
        import spla
        from spla import comm as C
        from spla.checks import fail
        comm = MPI.COMM_WORLD
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, f"rank{comm.Get_rank()}.txt"), "w") as out:
            try:
                with C.collective_checks(comm):
                    if comm.Get_rank() == 1:
                        fail(spla.InvalidValue, "script", "k", "an integer", "'seven'")
            except Exception as e:
                out.write(f"ORIGIN {e.collective_origin} {type(e).__name__}: {e}\\n")
            comm.Barrier()   # every rank left the check: the job goes on
            out.write("DONE\\n")
    """
    p = 3
    proc, seconds = _run(tmp_path, p, body)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    message = "script: argument 'k' must be an integer; got 'seven'"
    for r in range(p):
        lines = (tmp_path / f"rank{r}.txt").read_text().splitlines()
        suffix = "" if r == 1 else f" [raised on rank 1 of {p}]"
        assert lines == [f"ORIGIN 1 InvalidValue: {message}{suffix}", "DONE"], (r, lines, out)


@pytest.mark.slow
def test_spla_error_on_one_rank_ends_the_job_with_status_1(tmp_path):
    """A bad argument on rank 1 of a real collective, inside abort_on_error:
    every rank raises it, it is printed once, and every rank exits 1."""
    body = """
        import numpy as np
        import spla
        from spla import comm as C
        with C.abort_on_error():
            D = spla.distribute(spla.Matrix.from_dense(np.eye(6)))
            rank = C.world().Get_rank()
            D.fetch_rows([2 ** 70] if rank == 1 else [0])
            print("rank", rank, "went on", flush=True)
    """
    proc, seconds = _run(tmp_path, 2, body)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert out.count("every rank raised this error at the same point") == 1, out
    assert "IndexOutOfRange: DistMatrix.fetch_rows: argument 'rows'" in out
    assert "went on" not in out
    assert seconds < LIMIT_S, f"the job took {seconds:.0f} s to end"
