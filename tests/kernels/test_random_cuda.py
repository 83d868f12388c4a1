"""The keyed uniforms' CUDA kernels (``kernels.cuda.random``) against the CPU's.

``test_sim_*`` run in the CUDA-simulator child of
``tests/kernels/test_cuda_kernels.py`` (``SPLA_IN_CUDASIM=1``), through the
cupy stand-in; elsewhere they skip.  Inputs stay tiny: the simulator runs
each GPU thread as a Python thread.
"""

import os

import numpy as np
import pytest

from sim_marks import sim


@pytest.fixture(scope="module")
def cp():
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


@sim
@pytest.mark.parametrize("width", [None, 1, 5])
def test_sim_uniform_on_the_device_is_the_hosts(cp, width):
    from spla.backend import device_of
    from spla.random import uniform
    ids = np.array([7, 0, 2 ** 40 + 3, 11, 5], np.int64)
    want = uniform(ids, seed=2 ** 63 + 9, stream=4, width=width)
    got = uniform(cp.asarray(ids), seed=2 ** 63 + 9, stream=4, width=width)
    assert device_of(got) == "cuda" and got.shape == want.shape
    assert np.array_equal(np.asarray(got.get()), want)
    empty = uniform(cp.asarray(np.zeros(0, np.int64)), seed=1, width=width)
    assert empty.shape == ((0,) if width is None else (0, width))
