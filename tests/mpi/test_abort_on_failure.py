"""A deliberate failure on one rank, run only by tests/train/test_mpi.py.

With SPLA_MPI_DELIBERATE_FAILURE=1, rank 1 fails while rank 0 waits in a
collective; the abort hook in conftest.py must end the job quickly.
"""

import os

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("SPLA_MPI_DELIBERATE_FAILURE") != "1",
                                reason="only when tests/train/test_mpi.py checks the abort path")


def test_rank1_fails_while_others_wait(comm):
    if comm.Get_rank() == 1:
        raise AssertionError("deliberate failure on rank 1")
    comm.Barrier()  # rank 0 would wait here forever without the abort hook
