"""Masks, out=, accum= and replace= against a plain-Python model of the C API.

The model holds an object as a dict {position: value} and writes a result
T into C by the GraphBLAS C API rules (Z = accum(C, T) on the union, or T;
inside the mask Z, outside C or nothing with replace).  Each operator's T is
computed by plain Python on the dicts, independently of spla.  Values are
small integers (stored as float64) so every sum is exact.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

import spla
from spla import Matrix, Vector, binary, semiring
from graphblas_model import (MASK_KINDS, as_dict, mask_allows, mask_of, matrices, ref_mxm,
                             ref_write, vectors)

SET = settings(max_examples=25, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


write_args = st.tuples(st.sampled_from(MASK_KINDS), st.booleans(), st.booleans(), st.booleans())


def run_both(op_spla, op_ref, shape, data, kind=Matrix):
    """Draw C, M, mask kind, accum, replace; compare spla with the model."""
    mk, use_out, use_accum, replace = data.draw(write_args)
    draw = matrices if kind is Matrix else vectors
    sh = shape if kind is Matrix else shape[0]
    C = data.draw(draw(sh)) if use_out else None
    M = data.draw(draw(sh))
    accum = binary.plus if (use_accum and use_out) else None
    got = op_spla(mask=mask_of(mk, M), out=C, accum=accum, replace=replace)
    want = ref_write(op_ref(), None if C is None else as_dict(C), mk, M,
                     (lambda x, y: x + y) if accum else None, replace)
    assert as_dict(got) == want
    assert isinstance(got, kind)


dims = st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5))


def mxm_call(A, B, sr):
    def call(mask, out, accum, replace):
        if mask is None and out is None and accum is None:
            return spla.mxm(A, B, sr).new()     # the lazy path
        return spla.mxm(A, B, sr, mask=mask, out=out, accum=accum, replace=replace)
    return call


@SET
@given(dims, st.data())
def test_mxm_write(d, data):
    m, k, n = d
    A, B = data.draw(matrices((m, k))), data.draw(matrices((k, n)))
    run_both(mxm_call(A, B, semiring.plus_times), lambda: ref_mxm(A, B), (m, n), data)


@SET
@given(dims, st.data())
def test_mxm_min_plus_masked(d, data):
    m, k, n = d
    A, B = data.draw(matrices((m, k))), data.draw(matrices((k, n)))
    run_both(mxm_call(A, B, semiring.min_plus),
             lambda: ref_mxm(A, B, min, lambda x, y: x + y), (m, n), data)


@SET
@given(dims, st.data())
def test_mxv_vxm_write(d, data):
    m, n, _ = d
    A = data.draw(matrices((m, n)))
    u, v = data.draw(vectors(n)), data.draw(vectors(m))
    ucol = Matrix.from_coo(u.indices, np.zeros(u.nvals, np.int64), u.values, shape=(n, 1))
    vrow = Matrix.from_coo(np.zeros(v.nvals, np.int64), v.indices, v.values, shape=(1, m))
    run_both(lambda **w: spla.mxv(A, u, **w),
             lambda: {i: x for (i, _), x in ref_mxm(A, ucol).items()}, (m,), data, Vector)
    run_both(lambda **w: spla.vxm(v, A, **w),
             lambda: {j: x for (_, j), x in ref_mxm(vrow, A).items()}, (n,), data, Vector)


@SET
@given(st.tuples(st.integers(1, 5), st.integers(1, 5)), st.data())
def test_ewise_apply_select_write(shape, data):
    A, B = data.draw(matrices(shape)), data.draw(matrices(shape))
    a, b = as_dict(A), as_dict(B)
    union = {p: a.get(p, 0) + b.get(p, 0) if (p in a and p in b) else a.get(p, b.get(p))
             for p in set(a) | set(b)}
    run_both(lambda **w: spla.ewise_add(A, B, **w), lambda: union, shape, data)
    run_both(lambda **w: spla.ewise_add(A, B, binary.minus, **w),
             lambda: {p: a[p] - b[p] if (p in a and p in b) else a.get(p, b.get(p))
                      for p in set(a) | set(b)}, shape, data)
    run_both(lambda **w: spla.ewise_mult(A, B, **w),
             lambda: {p: a[p] * b[p] for p in set(a) & set(b)}, shape, data)
    run_both(lambda **w: spla.apply(A, "neg", **w), lambda: {p: -x for p, x in a.items()},
             shape, data)
    run_both(lambda **w: spla.select(A, "value>", 0, **w),
             lambda: {p: x for p, x in a.items() if x > 0}, shape, data)


@SET
@given(st.tuples(st.integers(1, 5), st.integers(1, 5)), st.data())
def test_extract_write(shape, data):
    A = data.draw(matrices(shape))
    rows = data.draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=4))
    cols = data.draw(st.lists(st.integers(0, shape[1] - 1), min_size=1, max_size=4))
    a = as_dict(A)
    ref = {(r, c): a[(rows[r], cols[c])] for r in range(len(rows)) for c in range(len(cols))
           if (rows[r], cols[c]) in a}
    run_both(lambda **w: spla.extract(A, rows, cols, **w), lambda: ref,
             (len(rows), len(cols)), data)


def ref_assign(C, T, rows, cols, mkind, M, accum, replace):
    c = as_dict(C)
    region = {(r, q) for r in rows for q in cols}
    Z = {p: x for p, x in c.items() if p not in region}
    for p in region:
        if p in T:
            Z[p] = accum(c[p], T[p]) if (accum and p in c) else T[p]
        elif accum and p in c:
            Z[p] = c[p]
    out = {}
    for p in set(Z) | set(c):
        if mask_allows(mkind, M, p):
            if p in Z:
                out[p] = Z[p]
        elif not replace and p in c:
            out[p] = c[p]
    return out


@SET
@given(st.tuples(st.integers(1, 5), st.integers(1, 5)), st.data())
def test_assign(shape, data):
    C = data.draw(matrices(shape))
    rows = data.draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=3, unique=True))
    cols = data.draw(st.lists(st.integers(0, shape[1] - 1), min_size=1, max_size=3, unique=True))
    mk, use_accum, replace, scalar = data.draw(write_args)
    M = data.draw(matrices(shape))
    if scalar:
        value, T = 5.0, {(r, q): 5.0 for r in rows for q in cols}
    else:
        V = data.draw(matrices((len(rows), len(cols))))
        value = V
        T = {(rows[i], cols[j]): x for (i, j), x in as_dict(V).items()}
    accum = binary.plus if use_accum else None
    got = spla.assign(C, value, rows, cols, mask=mask_of(mk, M), accum=accum, replace=replace)
    assert as_dict(got) == ref_assign(C, T, rows, cols, mk, M,
                                      (lambda x, y: x + y) if accum else None, replace)


def test_empty_and_complemented_masks_hand_computed():
    A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    E = Matrix.from_coo([], [], shape=(2, 2))
    assert spla.mxm(A, A, mask=E.S).nnz == 0
    assert spla.mxm(A, A, mask=~E.S).isequal(spla.mxm(A, A).new())
    C = Matrix.from_dense(np.array([[10.0, 0.0], [0.0, 20.0]]))
    got = spla.mxm(A, A, mask=E.S, out=C, accum=binary.plus)
    assert got.isequal(C)
    assert spla.mxm(A, A, mask=E.S, out=C, replace=True).nnz == 0


@pytest.mark.parametrize("mk,acc,rep", list(itertools.product(MASK_KINDS, (0, 1), (0, 1))))
def test_vector_write_table(mk, acc, rep):
    C = Vector.from_coo([0, 1, 2], [1.0, 2.0, 3.0], size=5)
    T = Vector.from_coo([1, 3, 4], [10.0, 30.0, 40.0], size=5)
    M = Vector.from_coo([1, 2, 3], [1.0, 0.0, 1.0], size=5)
    got = spla.ewise_add(T, Vector.from_coo([], [], size=5), mask=mask_of(mk, M), out=C,
                         accum=binary.plus if acc else None, replace=bool(rep))
    want = ref_write(as_dict(T), as_dict(C), mk, M, (lambda x, y: x + y) if acc else None, rep)
    assert as_dict(got) == want


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["S", "V"]), st.booleans(),
       st.sampled_from([7, 2.5]), st.booleans())
def test_assign_scalar_whole_vector_masked(seed, kind, replace, value, structural):
    """``assign(C, scalar, mask=M)`` over a whole Vector (its own fast path)
    against plain Python, and the same dtype as the general path (rows given)."""
    rs = np.random.RandomState(seed)
    n = 9
    ck = np.flatnonzero(rs.rand(n) < 0.5)
    C = Vector.from_coo(ck, None if structural else rs.rand(ck.size) + 1, size=n)
    mv = rs.randint(0, 2, n).astype(np.float64)
    M = Vector.from_coo(np.flatnonzero(rs.rand(n) < 0.6), size=n) if kind == "S" \
        else Vector.from_coo(np.arange(n), mv, size=n)
    mask = M.S if kind == "S" else M.V
    allowed = set(mask.true_keys().tolist())
    cd = dict(zip(C.indices.tolist(), [1] * C.nvals if C.values is None else C.values.tolist()))
    want = {i: value for i in allowed}
    if not replace:
        want.update({i: v for i, v in cd.items() if i not in allowed})
    got = spla.assign(C, value, mask=mask, replace=replace)
    assert dict(zip(got.indices.tolist(), got.values.tolist())) == want
    general = spla.assign(C, value, np.arange(n), mask=mask, replace=replace)
    assert got.isequal(general) and got.values.dtype == general.values.dtype


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([60, 10**6]), st.lists(st.integers(0, 59), unique=True, max_size=30),
       st.lists(st.integers(0, 59), unique=True, max_size=30), st.booleans())
def test_vector_merge_flags_and_sorted_keys_agree(size, ka, kb, structural):
    """Vector merges run on dense flags when the entries are not much sparser
    than the vector (size 60) and on sorted keys otherwise (size 10**6, the
    same entries spread out): both give the plain-Python union/intersection,
    and the masked scalar assign (a BFS level update) likewise."""
    stretch = 1 if size == 60 else 16661
    ka = sorted(k * stretch for k in ka)
    kb = sorted(k * stretch for k in kb)
    va = {k: float(k % 7) + 0.5 for k in ka}
    vb = {k: float(k % 5) - 1.0 for k in kb}
    u = Vector.from_coo(ka, None if structural else [va[k] for k in ka], size=size)
    v = Vector.from_coo(kb, [vb[k] for k in kb], size=size)
    if structural:
        va = {k: 1 for k in ka}

    def as_map(w):
        return {int(k): (1 if w.values is None else w.values[t].item())
                for t, k in enumerate(w.indices)}

    add = {k: va.get(k, 0) + vb.get(k, 0) if k in va and k in vb else va.get(k, vb.get(k))
           for k in set(va) | set(vb)}
    assert as_map(spla.ewise_add(u, v, binary.plus)) == add
    assert as_map(spla.ewise_mult(u, v, binary.minus)) == {k: va[k] - vb[k]
                                                           for k in set(va) & set(vb)}
    union = {k: va.get(k, 2.0) * vb.get(k, 3.0) for k in set(va) | set(vb)}
    assert as_map(spla.ewise_union(u, v, binary.times, 2.0, 3.0)) == union
    want = {k: x for k, x in va.items() if k not in vb} | {k: 9.0 for k in vb}
    got = spla.assign(u, 9.0, mask=v.S)
    assert as_map(got) == want
    assert got.indices.tolist() == sorted(want)
