"""``Matrix.isclose`` and ``Vector.isclose``: entry by entry what
``math.isclose`` says (the independent reference), on one pattern."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spla import Matrix, Vector
from spla.exceptions import DTypeError, InvalidValue

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(FLOATS, FLOATS), min_size=1, max_size=6),
       st.sampled_from([1e-9, 1e-7, 1e-3, 0.0]), st.sampled_from([0.0, 1e-12, 0.5]))
def test_isclose_is_math_isclose_per_entry(pairs, rel_tol, abs_tol):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    rows = np.arange(a.size)
    A = Matrix.from_coo(rows, rows, a, shape=(a.size, a.size))
    B = Matrix.from_coo(rows, rows, b, shape=(a.size, a.size))
    want = all(math.isclose(x, y, rel_tol=rel_tol, abs_tol=abs_tol) for x, y in pairs)
    assert A.isclose(B, rel_tol=rel_tol, abs_tol=abs_tol) == want
    u = Vector.from_coo(rows, a, size=a.size)
    v = Vector.from_coo(rows, b, size=a.size)
    assert u.isclose(v, rel_tol=rel_tol, abs_tol=abs_tol) == want


def test_isclose_needs_one_shape_pattern_and_device():
    A = Matrix.from_coo([0, 1], [1, 0], [1.0, 2.0], shape=(2, 2))
    assert A.isclose(A.astype(np.float32))                       # dtypes may differ
    assert not A.isclose(Matrix.from_coo([0, 1], [0, 1], [1.0, 2.0], shape=(2, 2)))
    assert not A.isclose(Matrix.from_coo([0, 1], [1, 0], [1.0, 2.0], shape=(2, 3)))
    assert not A.isclose(A.to_dense())
    ones = Matrix.from_coo([0, 1], [1, 0], shape=(2, 2))          # structural: entries are 1
    assert ones.isclose(Matrix.from_coo([0, 1], [1, 0], [1.0, 1.0 + 1e-12], shape=(2, 2)))
    assert not ones.isclose(A)
    assert ones.isclose(ones)
    u = Vector.from_coo([1], [3.0], size=3)
    assert not u.isclose(Vector.from_coo([2], [3.0], size=3))
    assert not u.isclose(Vector.from_coo([1], [3.0], size=4))


@pytest.mark.parametrize("kw, cls", [(dict(rel_tol=-1.0), InvalidValue),
                                     (dict(abs_tol=float("nan")), InvalidValue),
                                     (dict(rel_tol="1e-7"), DTypeError),
                                     (dict(abs_tol=True), DTypeError)])
def test_isclose_tolerances_are_checked(kw, cls):
    A = Matrix.from_coo([0], [0], [1.0])
    arg = next(iter(kw))
    with pytest.raises(cls, match=f"Matrix.isclose: argument '{arg}'"):
        A.isclose(A, **kw)
    with pytest.raises(cls, match=f"Vector.isclose: argument '{arg}'"):
        Vector.from_coo([0], [1.0]).isclose(Vector.from_coo([0], [1.0]), **kw)
