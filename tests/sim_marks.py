"""The marker of the tests that run in the CUDA-simulator child process.

``tests/kernels/test_cuda_kernels.py::test_cuda_kernels_under_simulator``
starts one child process with ``NUMBA_ENABLE_CUDASIM=1`` and
``SPLA_IN_CUDASIM=1`` that runs the files of its ``SIM_FILES``; in the
ordinary run those tests skip with this reason.  ``IN_SIM`` says which of
the two runs this is.
"""

import os

import pytest

IN_SIM = os.environ.get("SPLA_IN_CUDASIM") == "1"

sim = pytest.mark.skipif(
    not IN_SIM,
    reason="runs only in the CUDA-simulator child process started by "
           "tests/kernels/test_cuda_kernels.py::test_cuda_kernels_under_simulator")
