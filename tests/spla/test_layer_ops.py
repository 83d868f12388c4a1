"""``spla.layer_ops.normalize_scaled_rows`` is ``normalize_rows(scale_columns(A, d))``
bit for bit, and the row-normalised column scaling of scipy; its errors; its
GPU twin under the CUDA simulator (``test_sim_*``: run in the simulator
child of ``tests/kernels/test_cuda_kernels.py``, where this file is in
``SIM_FILES``)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spla
from spla.layer_ops import normalize_scaled_rows

from sim_marks import sim


def _case(m, n, density, seed, dtype, d_dtype, structural=False):
    rng = np.random.default_rng(seed)
    S = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=np.float64)
    S.data = (S.data * 10.0 ** rng.integers(-6, 6, S.data.size)).astype(dtype)
    S.data[rng.random(S.data.size) < 0.1] = 0.0           # zeros stored
    M = spla.Matrix.from_scipy(S.astype(dtype))
    if structural:
        M = M.structure()
    d = (rng.random(n) * 10.0 ** rng.integers(-6, 6, n)).astype(d_dtype)
    d[rng.random(n) < 0.2] = 0.0                          # rows that sum to 0 too
    return S, M, d


def _same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(np.asarray(got.indptr), np.asarray(want.indptr))
    assert np.array_equal(np.asarray(got.indices), np.asarray(want.indices))
    assert np.asarray(got.values).tobytes() == np.asarray(want.values).tobytes()


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 12), st.integers(1, 80), st.floats(0.0, 1.0), st.integers(0, 2 ** 31),
       st.sampled_from([(np.float32, np.float32), (np.float64, np.float64),
                        (np.float32, np.float64)]), st.booleans())
def test_normalize_scaled_rows_equals_the_composition_and_scipy(m, n, density, seed, dts,
                                                               structural):
    S, M, d = _case(m, n, density, seed, *dts, structural=structural)
    got = normalize_scaled_rows(M, d)
    _same(got, spla.normalize_rows(spla.scale_columns(M, d)))
    # scipy: scale the columns, divide each row by its sum (an independent order).
    B = S.copy()
    if structural:
        B.data = np.ones_like(B.data)
    B = (B @ sp.diags(d.astype(np.float64))).tocsr()
    sums = np.asarray(B.sum(axis=1)).ravel()
    ref = B.multiply(1.0 / np.where(sums == 0, 1.0, sums)[:, None]).toarray()
    tol = 1e-5 if got.dtype == np.float32 else 1e-12
    assert np.allclose(got.to_dense(), ref, rtol=tol, atol=tol)


def test_normalize_scaled_rows_of_integers_and_vectors():
    M = spla.Matrix.from_dense(np.array([[1, 2], [0, 3]], np.int64))
    got = normalize_scaled_rows(M, np.array([3, 1]))
    assert got.dtype == np.float64 and got.to_dense().tolist() == [[0.6, 0.4], [0.0, 1.0]]
    v = spla.Vector.from_dense(np.array([2.0, 0.0]))
    _same(normalize_scaled_rows(M.astype(np.float64), v),
          spla.normalize_rows(spla.scale_columns(M.astype(np.float64), v)))


def test_normalize_scaled_rows_errors():
    M = spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    with pytest.raises(spla.DimensionMismatch, match="normalize_scaled_rows: argument 'd'"):
        normalize_scaled_rows(M, np.ones(3))
    with pytest.raises(spla.DTypeError, match="normalize_scaled_rows: argument 'd'"):
        normalize_scaled_rows(M, np.array(["a", "b"]))
    with pytest.raises(spla.DTypeError, match="normalize_scaled_rows: argument 'A'"):
        normalize_scaled_rows(M.to_scipy(), np.ones(2))


@pytest.fixture(scope="module")
def cp():
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


@sim
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 6), st.integers(1, 10), st.floats(0.0, 1.0), st.integers(0, 2 ** 31),
       st.booleans())
def test_sim_normalize_scaled_rows_equals_the_cpu(cp, m, n, density, seed, structural):
    """The GPU's values are the CPU's; a few launches and no read."""
    import fake_cupy
    _, M, d = _case(m, n, density, seed, np.float32, np.float32, structural=structural)
    want = normalize_scaled_rows(M, d)
    G, dg = M.to("cuda"), cp.asarray(d)
    fake_cupy.reset()
    got = normalize_scaled_rows(G, dg)
    assert fake_cupy.STATS["reads"] == 0 and fake_cupy.STATS["launches"] <= 5, fake_cupy.STATS
    assert got.device == "cuda"
    _same(got.to("cpu"), want)


@sim
def test_sim_normalize_scaled_rows_refuses_scales_on_another_device(cp):
    M = spla.Matrix.from_dense(np.eye(2))
    with pytest.raises(spla.DeviceMismatch, match="normalize_scaled_rows: argument 'd' is on"):
        normalize_scaled_rows(M, cp.asarray(np.ones(2)))
