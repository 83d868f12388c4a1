"""spla.random.uniform against a pure-Python splitmix64, its law, its rows form, its errors.

The reference below is written from the published splitmix64 finaliser
(Steele, Lea and Flood, 2014) and the key and draw layout that
``kernels.common`` documents, in Python integers (no numba, no numpy
wrapping), so a kernel that hashes anything else fails.
"""

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from spla.exceptions import DTypeError, InvalidValue
from spla.random import permutation, uniform

M64 = (1 << 64) - 1
GAMMA, MUL1, MUL2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def mix(z):
    z &= M64
    z = ((z ^ (z >> 30)) * MUL1) & M64
    z = ((z ^ (z >> 27)) * MUL2) & M64
    return z ^ (z >> 31)


def reference(seed, stream, i):
    """uniform01(row_key(seed, stream, i), 0) in Python integers."""
    k = mix(seed + GAMMA)
    k = mix(k ^ ((stream * GAMMA) & M64))
    key = mix(k + (i & M64) * MUL1 + GAMMA)
    return (mix(key + GAMMA) >> 11) * 2.0 ** -53


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 2 ** 62), min_size=0, max_size=20),
       st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 64 - 1))
def test_uniform_is_the_keyed_splitmix64_draw(ids, seed, stream):
    got = uniform(np.array(ids, np.int64), seed=seed, stream=stream)
    assert got.dtype == np.float64 and got.shape == (len(ids),)
    assert got.tolist() == [reference(seed, stream, i) for i in ids]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 10 ** 6), min_size=0, max_size=12), st.integers(1, 9),
       st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 64 - 1))
def test_rows_are_the_draws_of_their_flat_positions(ids, width, seed, stream):
    ids = np.array(ids, np.int64)
    got = uniform(ids, seed=seed, stream=stream, width=width)
    flat = (ids[:, None] * width + np.arange(width)).reshape(-1)
    assert got.shape == (ids.size, width)
    assert np.array_equal(got.reshape(-1), uniform(flat, seed=seed, stream=stream))


def test_uniform_law_and_independence_of_streams():
    u = uniform(np.arange(200_000), seed=3, stream=1)
    assert scipy.stats.kstest(u, "uniform").pvalue > 1e-6
    v = uniform(np.arange(200_000), seed=3, stream=2)
    assert abs(scipy.stats.pearsonr(u, v)[0]) < 0.02          # another stream: unrelated
    rows = uniform(np.arange(2_000), seed=3, stream=1, width=100)
    assert scipy.stats.kstest(rows.reshape(-1), "uniform").pvalue > 1e-6
    assert sorted(permutation(6, seed=3).tolist()) == list(range(6))


@pytest.mark.parametrize("kw, err, text", [
    (dict(ids=np.arange(4).reshape(2, 2)), DTypeError, "argument 'ids' must be a 1-D array "
                                                       "of integers"),
    (dict(ids=np.array([0.5])), DTypeError, "argument 'ids' must be a 1-D array of integers"),
    (dict(width=0), InvalidValue, "argument 'width' must be"),
    (dict(seed=2 ** 64), InvalidValue, "argument 'seed' must be an integer below 2\\*\\*64"),
    (dict(stream=-1), InvalidValue, "argument 'stream' must be"),
])
def test_uniform_errors(kw, err, text):
    args = dict(ids=np.arange(3), seed=1)
    args.update(kw)
    with pytest.raises(err, match=f"uniform: {text}"):
        uniform(args.pop("ids"), **args)
