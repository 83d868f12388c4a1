"""``spla.extract.extract_values`` (entries at (row, column) pairs) against
scipy and dense numpy, its errors, and its GPU twin under the CUDA simulator
(``test_sim_*``: run in the simulator child of
``tests/kernels/test_cuda_kernels.py``, where this file is in ``SIM_FILES``)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spla
import spla.generators
from spla.extract import extract_values
from strategies import twins

from sim_marks import sim


#: Few (index, value) dtype plans: each is a compiled signature of the kernel.
PLANS = ((np.dtype(np.int32), np.dtype(np.float32)), (np.dtype(np.int64), np.dtype(np.float64)),
         (np.dtype(np.int32), None))
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _pairs(data, shape, n):
    m, k = shape
    if m == 0 or k == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = data.draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))
    cols = data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    return np.array(rows, np.int64), np.array(cols, np.int64)


@given(t=twins(plans=PLANS), data=st.data(), n=st.integers(0, 30), fill=st.sampled_from([0, -3]))
@SETTINGS
def test_extract_values_matches_scipy(t, data, n, fill):
    rows, cols = _pairs(data, t.M.shape, n)
    got = extract_values(t.M, rows, cols, fill=fill)
    want_dtype = t.dtype if t.dtype is not None else np.dtype(np.int64)
    assert got.dtype == want_dtype and got.shape == (rows.size,)
    # scipy's element lookups; the mask says which pairs A stores.
    ref = np.asarray(t.S[rows, cols]).reshape(-1) if rows.size else np.zeros(0)
    stored = t.mask[rows, cols] if rows.size else np.zeros(0, bool)
    want = np.where(stored, ref, fill)
    assert np.array_equal(got, want.astype(want_dtype))
    # Stored values exactly (the dense copy holds the very values).
    if t.dtype is not None and rows.size:
        assert got[stored].tobytes() == t.dense[rows, cols][stored].tobytes()


def test_extract_values_of_many_pairs_on_both_twins():
    """A bulk's lookups (more pairs than ``kernels.parallel.SERIAL_WORK``) run
    on the parallel twin: against scipy, and equal to the serial twin."""
    from kernels.cpu.extract import _values_at
    from kernels.parallel import SERIAL_WORK
    A = spla.generators.rmat(10, 8, seed=2)
    A = A.with_values(np.random.default_rng(0).random(A.nnz).astype(np.float32))
    rng = np.random.default_rng(1)
    n = 2 * SERIAL_WORK + 7
    rows, cols = rng.integers(0, A.nrows, n), rng.integers(0, A.ncols, n)
    # Half the pairs stored entries, half (mostly) absent.
    hit = rng.integers(0, A.nnz, n // 2)
    rows[:n // 2] = np.repeat(np.arange(A.nrows), np.diff(A.indptr))[hit]
    cols[:n // 2] = A.indices[hit]
    got = extract_values(A, rows, cols, fill=-1.0)
    S = A.to_scipy()
    stored = np.asarray(S.astype(bool)[rows, cols]).reshape(-1)
    want = np.where(stored, np.asarray(S[rows, cols]).reshape(-1), -1.0).astype(np.float32)
    assert stored[:n // 2].all() and np.array_equal(got, want)
    fill = np.asarray([-1.0], np.float32)
    outs = {}
    for twin in ("serial", "parallel"):
        out = np.empty(n, np.float32)
        _values_at.call_twin(twin, A.indptr, A.indices, A.values, True, rows, cols, fill, out)
        outs[twin] = out
    assert outs["serial"].tobytes() == outs["parallel"].tobytes() == got.tobytes()


def test_extract_values_of_a_lazy_product_and_repeated_pairs():
    A = spla.Matrix.from_dense(np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]], np.float32))
    Q = spla.Matrix.from_coo([0, 0], [0, 1], shape=(1, 2))
    got = extract_values(Q @ A, [0, 0, 0, 0], [2, 0, 2, 1])
    assert got.dtype == np.float32 and got.tolist() == [3.0, 1.0, 3.0, 2.0]


def test_extract_values_errors():
    A = spla.Matrix.from_dense(np.array([[1, 0], [0, 2]], np.float32))
    with pytest.raises(spla.IndexOutOfRange, match="extract_values: argument 'rows'"):
        extract_values(A, [2], [0])
    with pytest.raises(spla.IndexOutOfRange, match="extract_values: argument 'cols'"):
        extract_values(A, [0], [-1])
    with pytest.raises(spla.DimensionMismatch, match="extract_values: argument 'cols'"):
        extract_values(A, [0, 1], [0])
    with pytest.raises(spla.InvalidValue, match="extract_values: argument 'fill'.*exact in float32"):
        extract_values(A, [0], [1], fill=0.1)
    with pytest.raises(spla.InvalidValue, match="extract_values: argument 'fill'.*real scalar"):
        extract_values(A, [0], [1], fill="x")
    with pytest.raises(spla.DTypeError, match="extract_values: argument 'rows'"):
        extract_values(A, [0.0], [1])
    with pytest.raises(spla.DTypeError, match="extract_values: argument 'A'"):
        extract_values(A.to_scipy(), [0], [1])
    assert extract_values(A, [1, 0], [1, 1], fill=-1).tolist() == [2.0, -1.0]


@pytest.fixture(scope="module")
def cp():
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


@sim
@given(t=twins(plans=PLANS[:1] + PLANS[2:], max_dim=5), data=st.data(), n=st.integers(0, 12))
@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_sim_extract_values_equals_the_cpu(cp, t, data, n):
    """The GPU's lookups are the CPU's: one launch and no read for trusted pairs."""
    import fake_cupy
    rows, cols = _pairs(data, t.M.shape, n)
    want = extract_values(t.M, rows, cols, fill=-1)
    G = t.M.to("cuda")
    r, c = cp.asarray(rows), cp.asarray(cols)
    fake_cupy.reset()
    got = extract_values(G, r, c, fill=-1, check=False)
    counts = {k: fake_cupy.STATS[k] for k in ("launches", "reads")}
    assert counts == {"launches": int(rows.size > 0), "reads": 0}, counts
    assert isinstance(got, cp.ndarray)
    assert got.dtype == want.dtype and np.asarray(got).tobytes() == want.tobytes()
    assert np.asarray(extract_values(G, r, c, fill=-1)).tobytes() == want.tobytes()


@sim
def test_sim_extract_values_refuses_device_indices_for_a_host_matrix(cp):
    A = spla.Matrix.from_dense(np.eye(2))
    with pytest.raises(spla.DeviceMismatch, match="extract_values: argument 'rows' is on cuda"):
        extract_values(A, cp.asarray(np.array([0])), [0])
