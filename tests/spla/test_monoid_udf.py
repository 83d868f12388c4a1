"""User-defined monoids (``Monoid.from_binary``) against plain-Python folds.

The fold order is part of the contract (``Monoid.from_binary``): a row's
entries by increasing column, a column's by increasing row, a whole matrix
row after row, a product's terms by increasing inner index.  ``firstnz``
(the leftmost nonzero operand) is associative but not commutative and
exact, so any change of operand order shows as a different value; the
float ``uplus`` differs from a left fold only by rounding.
"""

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spla
from spla import BinaryOp, Matrix, Monoid, Semiring, Vector, binary, monoid
from spla.exceptions import InvalidValue

SET = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _firstnz(x, y):
    return x if x != 0 else y


def _uplus(x, y):
    return x + y


FIRSTNZ = Monoid.from_binary(BinaryOp.from_function(_firstnz, "firstnz"), 0)
UPLUS = Monoid.from_binary(BinaryOp.from_function(_uplus, "uplus"), 0.0)
# A built-in operator needs no compilation: max of the signed values.
MAXB = Monoid.from_binary(binary.max, -np.inf, "max_user")
EXACT = {"firstnz": (FIRSTNZ, _firstnz), "max_user": (MAXB, max)}


def fold(f, ident, xs):
    return functools.reduce(f, xs, ident)


def draw_matrix(seed, m, n, dtype=np.float64, density=0.5):
    rs = np.random.RandomState(seed)
    D = np.where(rs.rand(m, n) < density, rs.randint(-6, 7, size=(m, n)), 0).astype(dtype)
    return Matrix.from_dense(D), D


def stored(D):
    """Plain-Python rows: [(j, value)] of the nonzeros, j increasing."""
    return [[(j, D[i, j]) for j in range(D.shape[1]) if D[i, j] != 0]
            for i in range(D.shape[0])]


@SET
@given(st.integers(0, 2**31 - 1), st.integers(0, 6), st.integers(0, 6),
       st.sampled_from(sorted(EXACT)), st.sampled_from([np.float64, np.int64]))
def test_reductions_equal_the_left_fold_in_the_documented_order(seed, m, n, name, dt):
    mon, f = EXACT[name]
    A, D = draw_matrix(seed, m, n, dt)
    ident = mon.identity_for(dt)
    rows = stored(D)
    want_rows = [fold(f, ident, [v for _, v in r]) for r in rows]
    got = spla.reduce_rowwise(A, mon)
    assert got.dtype == dt and got.tolist() == want_rows
    cols = [[D[i, j] for i in range(m) if D[i, j] != 0] for j in range(n)]
    got = spla.reduce_columnwise(A, mon)
    assert got.dtype == dt and got.tolist() == [fold(f, ident, c) for c in cols]
    assert spla.reduce_scalar(A, mon) == fold(f, ident, [v for r in rows for _, v in r])
    # continuing a column reduction from the rows above gives one pass's values
    k = m // 2
    top = spla.reduce_columnwise(Matrix.from_dense(D[:k].reshape(k, n)), mon)
    assert spla.reduce_columnwise(Matrix.from_dense(D[k:].reshape(m - k, n)), mon,
                                  init=top).tolist() == [fold(f, ident, c) for c in cols]


@SET
@given(st.integers(0, 2**31 - 1), st.integers(1, 40))
def test_float_operator_equals_the_left_fold_up_to_rounding(seed, n):
    rs = np.random.RandomState(seed)
    D = rs.standard_normal((3, n)) * 10.0 ** rs.randint(-3, 4, size=(3, n))
    A = Matrix.from_dense(D)
    want = [fold(lambda x, y: x + y, 0.0, D[i]) for i in range(3)]
    np.testing.assert_allclose(spla.reduce_rowwise(A, UPLUS), want, rtol=1e-12, atol=1e-9)
    assert spla.reduce_scalar(A, UPLUS) == pytest.approx(fold(_uplus, 0.0, D.ravel()))


def _mxv_ref(D, u, f, ident, mul):
    out = {}
    for i in range(D.shape[0]):
        terms = [mul(D[i, k], u[k]) for k in range(D.shape[1]) if D[i, k] != 0 and k in u]
        if terms:
            out[i] = fold(f, ident, terms)
    return out


def _as_dict(v):
    return dict(zip(v.indices.tolist(), v.values.tolist()))


@SET
@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(1, 6),
       st.sampled_from(["none", "mask", "complement"]))
def test_mxv_vxm_with_a_user_monoid_semiring(seed, m, n, mask_kind):
    A, D = draw_matrix(seed, m, n)
    rs = np.random.RandomState(seed + 1)
    sr = Semiring(FIRSTNZ, binary.times)
    assert sr.name == "firstnz_times" and not sr.kernel_ready
    u_idx = np.flatnonzero(rs.rand(n) < 0.7)
    u = Vector.from_coo(u_idx, rs.randint(-3, 4, size=u_idx.size).astype(np.float64), size=n)
    ud = dict(zip(u_idx.tolist(), u.values.tolist()))
    want = _mxv_ref(D, ud, _firstnz, 0, lambda a, b: a * b)
    wv_idx = np.flatnonzero(rs.rand(m) < 0.5)
    mk = Vector.from_coo(wv_idx, size=m)
    masks = {"none": (None, set(range(m))), "mask": (mk.S, set(wv_idx.tolist())),
             "complement": (~mk.S, set(range(m)) - set(wv_idx.tolist()))}
    mask, allowed = masks[mask_kind]
    got = spla.mxv(A, u, sr, mask=mask)
    assert _as_dict(got) == {i: v for i, v in want.items() if i in allowed}
    # vxm: u (of size m) along A's rows, terms by increasing row
    v = Vector.from_coo(wv_idx, np.arange(1.0, wv_idx.size + 1), size=m)
    vd = dict(zip(wv_idx.tolist(), v.values.tolist()))
    want_t = _mxv_ref(D.T, vd, _firstnz, 0, lambda a, b: b * a)
    assert _as_dict(spla.vxm(v, A, sr)) == want_t


def test_distributed_vector_products_fold_like_the_local_ones():
    A, _ = draw_matrix(7, 6, 5)
    D = spla.distribute(A)  # every rank of the world (one here; more under mpiexec)
    sr = Semiring(FIRSTNZ, binary.times)
    u = Vector.from_dense(np.arange(1.0, 6.0))
    v = Vector.from_coo([0, 2, 5], [2.0, -1.0, 3.0], size=6)
    assert spla.mxv(D, u, sr).isequal(spla.mxv(A, u, sr))
    assert spla.vxm(v, D, sr, mask=~Vector.from_coo([1], size=5).S).isequal(
        spla.vxm(v, A, sr, mask=~Vector.from_coo([1], size=5).S))


def test_ewise_add_and_accum_take_a_user_monoid():
    A = Matrix.from_dense(np.array([[0.0, 2.0], [3.0, 0.0]]))
    B = Matrix.from_dense(np.array([[5.0, 7.0], [0.0, 0.0]]))
    # entries of both: the monoid's operator, A's operand first
    assert spla.ewise_add(A, B, FIRSTNZ).to_dense().tolist() == [[5.0, 2.0], [3.0, 0.0]]
    C = spla.ewise_add(B, A, FIRSTNZ, out=A, accum=UPLUS)
    assert C.to_dense().tolist() == [[5.0, 9.0], [6.0, 0.0]]
    assert spla.ewise_mult(A, B, MAXB).to_dense().tolist() == [[0.0, 7.0], [0.0, 0.0]]


def test_structural_and_empty_operands():
    S = Matrix.from_coo([0, 0, 2], [1, 2, 0], shape=(3, 3))  # structural: values count as 1
    assert spla.reduce_rowwise(S, UPLUS).tolist() == [2, 0, 1]
    assert spla.reduce_columnwise(S, FIRSTNZ).tolist() == [1, 1, 1]
    E = Matrix.from_coo([], [], [], shape=(2, 3))
    assert spla.reduce_rowwise(E, MAXB).tolist() == [-np.inf, -np.inf]
    assert spla.reduce_scalar(E, MAXB) == -np.inf
    assert spla.reduce_scalar(Vector.from_coo([1, 3], [4.0, -9.0], size=5), FIRSTNZ) == 4.0


@SET
@given(st.integers(0, 2**31 - 1), st.integers(0, 5), st.integers(0, 5))
def test_logical_monoids_match_python_on_truth_values(seed, m, n):
    A, D = draw_matrix(seed, m, n)
    refs = {"lor": (lambda x, y: int(x or y), 0), "land": (lambda x, y: int(x and y), 1),
            "lxor": (lambda x, y: int(bool(x) != bool(y)), 0)}
    for name, (f, ident) in refs.items():
        rows = [fold(f, ident, [v != 0 for _, v in r]) for r in stored(D)]
        assert spla.reduce_rowwise(A, name).tolist() == rows
        assert spla.reduce_scalar(A, name) == fold(f, ident, [v != 0 for v in D[D != 0]])


def test_logical_monoids_fold_truth_values():
    A = Matrix.from_dense(np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 0.0], [0.0, -3.0, 0.0]]))
    # lxor has no kernel code: it folds like a user monoid, on 0/1 operands
    assert spla.reduce_rowwise(A, "lxor").tolist() == [0.0, 0.0, 1.0]
    assert spla.reduce_rowwise(A, monoid.lor).tolist() == [1.0, 0.0, 1.0]
    assert spla.reduce_rowwise(A, "land").tolist() == [1.0, 1.0, 1.0]
    assert spla.reduce_scalar(A, "lxor") == 1


def test_mxm_with_a_user_monoid_semiring():
    A, D = draw_matrix(5, 4, 4)
    got = spla.mxm(A, A, Semiring(FIRSTNZ, binary.times)).new()
    want = {}
    for i in range(4):
        for j in range(4):
            terms = [D[i, k] * D[k, j] for k in range(4) if D[i, k] and D[k, j]]
            if terms:
                want[(i, j)] = fold(_firstnz, 0, terms)
    C = got.to_scipy().tocoo()
    assert dict(zip(zip(C.row.tolist(), C.col.tolist()), C.data.tolist())) == want


def test_monoid_names_and_aliases():
    m = Monoid.register_anonymous(binary.minus, 0, "minus_m")
    assert m.binop is binary.minus and m.code is None and m.identity == 0
    assert Monoid.from_binary(FIRSTNZ.binop, np.float32(0)).identity == 0.0
    assert repr(FIRSTNZ) == "Monoid('firstnz')"
    assert monoid.max.binop is binary.max  # built-ins keep their operator


@pytest.mark.parametrize("args, kwargs, arg", [
    ((_firstnz, 0), {}, "op"),                      # a plain function, not a BinaryOp
    ((monoid.plus, 0), {}, "op"),
    ((binary.firsti, 0), {}, "op"),                 # positional
    ((binary.plus, "0"), {}, "identity"),
    ((binary.plus, True), {}, "identity"),
    ((binary.plus, None), {}, "identity"),
    ((binary.plus, np.zeros(1)), {}, "identity"),
    ((binary.plus, 1j), {}, "identity"),
    ((binary.plus, 0), {"name": "plus"}, "name"),   # a built-in monoid's name
    ((binary.plus, 0), {"name": 3}, "name"),
])
def test_bad_input_names_function_argument_and_value(args, kwargs, arg):
    with pytest.raises(InvalidValue, match=rf"Monoid.from_binary: argument '{arg}' must be"):
        Monoid.from_binary(*args, **kwargs)


def _float_only(x):
    return x


def _only_float(x, y):
    return _float_only(x) + y


def test_operator_numba_cannot_compile_for_the_values_is_named():
    from numba import types
    from numba.extending import overload

    @overload(_float_only)
    def _typed(x):  # typed for floats only: integers fail to compile
        if isinstance(x, types.Float):
            return lambda x: x
    mon = Monoid.from_binary(BinaryOp.from_function(_only_float, "only_float"), 0)
    A = Matrix.from_dense(np.array([[1, 2], [3, 4]], dtype=np.int64))
    with pytest.raises(InvalidValue, match=r"reduce_rowwise: .*'only_float' does not compile"):
        spla.reduce_rowwise(A, mon)
    with pytest.raises(InvalidValue, match="reduce_columnwise: argument 'monoid'"):
        spla.reduce_columnwise(A, "lxor")
    with pytest.raises(InvalidValue, match="reduce_rowwise: argument 'monoid'"):
        spla.reduce_rowwise(A, binary.plus)


def test_device_arrays_fold_on_the_host_under_a_cupy_stand_in():
    import sys

    import fake_cupy
    A, D = draw_matrix(2, 4, 5)
    want = spla.reduce_rowwise(A, FIRSTNZ)
    saved = sys.modules.get("cupy")
    fake_cupy.install()
    try:
        G = A.to("cuda")
        got = spla.reduce_rowwise(G, FIRSTNZ)
        assert spla.backend.device_of(got) == "cuda"
        np.testing.assert_array_equal(np.asarray(spla.backend.to_host(got)), want)
        assert spla.reduce_scalar(G, FIRSTNZ) == spla.reduce_scalar(A, FIRSTNZ)
        np.testing.assert_array_equal(
            np.asarray(spla.backend.to_host(spla.reduce_columnwise(G, FIRSTNZ))),
            spla.reduce_columnwise(A, FIRSTNZ))
        sr = Semiring(FIRSTNZ, binary.times)
        u = Vector.from_dense(np.arange(1.0, 6.0))
        w = spla.mxv(G, u.to("cuda"), sr)
        assert spla.backend.device_of(w.values) == "cuda"
        assert w.to("cpu").isequal(spla.mxv(A, u, sr))
    finally:
        if saved is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = saved
