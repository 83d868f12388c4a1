"""Operator objects, Vector, mxv/vxm, reduce_scalar, kronecker, ewise_union:
each against plain Python / numpy / scipy, plus the bad-input errors."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

import spla
from spla import BinaryOp, Matrix, Semiring, Vector, binary, monoid, semiring
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue

SET = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def dense_mat(draw_rs, m, n, p=0.5, lo=-2, hi=4):
    D = draw_rs.randint(lo, hi, size=(m, n)).astype(np.float64)
    D[draw_rs.rand(m, n) > p] = 0
    return D


def ref_product(A, B, add, mul, positional=None):
    """Plain-Python A ⊕.⊗ B over stored entries (dicts); positional: index of the term."""
    a, b = A.to_scipy().tocoo(), B.to_scipy().tocoo()
    out = {}
    for i, k, x in sorted(zip(a.row.tolist(), a.col.tolist(), a.data.tolist())):
        for k2, j, y in sorted(zip(b.row.tolist(), b.col.tolist(), b.data.tolist())):
            if k != k2:
                continue
            t = {"firsti": i, "firstj": k, "secondi": k, "secondj": j}.get(positional) \
                if positional else mul(x, y)
            out[(i, j)] = add(out[(i, j)], t) if (i, j) in out else t
    return out


def as_dict(C):
    c = C.to_scipy().tocoo()
    return {(i, j): v for i, j, v in zip(c.row.tolist(), c.col.tolist(), c.data.tolist())}


SEMIRING_REFS = {
    "plus_times": (lambda x, y: x + y, lambda x, y: x * y),
    "min_first": (min, lambda x, y: x),
    "min_second": (min, lambda x, y: y),
    "plus_pair": (lambda x, y: x + y, lambda x, y: 1),
    "lor_land": (lambda x, y: int(x or y), lambda x, y: int(bool(x) and bool(y))),
    "min_plus": (min, lambda x, y: x + y),
    "plus_first": (lambda x, y: x + y, lambda x, y: x),
}


@SET
@given(st.integers(0, 2**31 - 1), st.sampled_from(sorted(SEMIRING_REFS)))
def test_named_semirings_match_plain_python(seed, name):
    rs = np.random.RandomState(seed)
    A = Matrix.from_dense(dense_mat(rs, 4, 3))
    B = Matrix.from_dense(dense_mat(rs, 3, 5))
    got = spla.mxm(A, B, getattr(semiring, name)).new()
    assert as_dict(got) == pytest.approx(ref_product(A, B, *SEMIRING_REFS[name]))


@pytest.mark.parametrize("name", ["min_secondi", "any_secondi", "any_firsti"])
def test_positional_semirings(name):
    rs = np.random.RandomState(3)
    A = Matrix.from_dense(dense_mat(rs, 5, 4))
    B = Matrix.from_dense(dense_mat(rs, 4, 5))
    got = as_dict(spla.mxm(A, B, name).new())
    pos = name.split("_")[1]
    terms = {}
    a, b = A.to_scipy().tocoo(), B.to_scipy().tocoo()
    for i, k in zip(a.row, a.col):
        for k2, j in zip(b.row, b.col):
            if k == k2:
                terms.setdefault((i, j), set()).add(
                    {"firsti": i, "secondi": k}[pos])
    assert set(got) == set(terms)
    for p, v in got.items():
        assert (v == min(terms[p])) if name.startswith("min") else (v in terms[p])


def test_user_semiring_generic_path_and_named_error():
    rs = np.random.RandomState(0)
    A = Matrix.from_dense(dense_mat(rs, 4, 4))

    def absdiff(x, y):
        return x - y if x > y else y - x
    op = BinaryOp.from_function(absdiff)
    sr = Semiring(monoid.max, op)
    assert sr.name == "max_absdiff"
    got = as_dict(spla.mxm(A, A, sr).new())
    assert got == ref_product(A, A, max, lambda x, y: abs(x - y))
    # the same object in the element-wise operators
    assert as_dict(spla.ewise_mult(A, A.T, op)) == {
        p: abs(x - as_dict(A.T)[p]) for p, x in as_dict(A).items() if p in as_dict(A.T)}

    def broken(x, y):
        return x.no_such_attribute + y
    with pytest.raises(InvalidValue, match="broken"):
        BinaryOp.from_function(broken)


def test_operator_objects_accepted_everywhere():
    A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    B = Matrix.from_dense(np.array([[4.0, 0.0], [5.0, 6.0]]))
    np.testing.assert_array_equal(spla.reduce_rowwise(A, semiring.plus), [3.0, 3.0])
    np.testing.assert_array_equal(spla.reduce_columnwise(A, monoid.plus), [1.0, 5.0])
    assert spla.ewise_mult(A, B, binary.times).isequal(spla.ewise_mult(A, B, "times"))
    assert spla.ewise_add(A, B, monoid.max).isequal(spla.ewise_add(A, B, "max"))
    assert spla.ewise_add(A, B, binary.max).isequal(spla.ewise_add(A, B, "max"))
    np.testing.assert_array_equal(spla.ewise_add(A, B, binary.minus).to_dense(),
                                  [[-3.0, 2.0], [5.0, -3.0]])  # B alone: kept
    assert Semiring(monoid.min, binary.plus).mul_code == semiring.min_plus.mul_code


def test_vector_basics():
    u = Vector.from_coo([3, 1, 3], [1.0, 2.0, 4.0], size=6)
    assert u.nvals == 2 and u.size == 6
    np.testing.assert_array_equal(u.to_dense(), [0, 2, 0, 5, 0, 0])
    assert u.isequal(Vector.from_dense(u.to_dense()))
    assert not u.isequal(Vector.from_coo([1, 3], [2.0, 5.0], size=7))
    assert u.to("cpu") is u
    s = Vector.from_coo([2], size=3)
    assert s.values is None and s.dtype is None
    with pytest.raises(DimensionMismatch, match="Vector.from_coo"):
        Vector.from_coo([0, 1], [1.0], size=3)
    with pytest.raises(IndexError, match="Vector.from_coo"):
        Vector.from_coo([5], size=3)


@SET
@given(st.integers(0, 2**31 - 1), st.sampled_from(["plus_times", "min_plus", "any_pair",
                                                    "min_second", "plus_pair"]))
def test_mxv_vxm_match_dense(seed, name):
    rs = np.random.RandomState(seed)
    D = dense_mat(rs, 5, 4)
    A = Matrix.from_dense(D)
    u = Vector.from_dense(dense_mat(rs, 1, 4)[0])
    v = Vector.from_dense(dense_mat(rs, 1, 5)[0])
    sr = getattr(semiring, name)
    ucol = Matrix.from_coo(u.indices, np.zeros(u.nvals, np.int64), u.values, shape=(4, 1))
    vrow = Matrix.from_coo(np.zeros(v.nvals, np.int64), v.indices, v.values, shape=(1, 5))
    want_w = spla.mxm(A, ucol, sr).new()
    want_z = spla.mxm(vrow, A, sr).new()
    w, z = spla.mxv(A, u, sr), spla.vxm(v, A, sr)
    np.testing.assert_array_equal(w.indices, np.flatnonzero(np.diff(want_w.indptr)))
    np.testing.assert_array_equal(z.indices, want_z.indices)
    if sr.structural:
        assert w.values is None and z.values is None
    else:
        np.testing.assert_array_equal(w.values, want_w.values)
        np.testing.assert_array_equal(z.values, want_z.values)


def test_reduce_scalar_kronecker_union():
    rs = np.random.RandomState(1)
    D = dense_mat(rs, 3, 4)
    A = Matrix.from_dense(D)
    assert spla.reduce_scalar(A) == D.sum()
    assert spla.reduce_scalar(A, monoid.min) == D[D != 0].min()
    assert spla.reduce_scalar(A, "count") == np.count_nonzero(D)
    assert spla.reduce_scalar(Vector.from_coo([], [], size=3), "min") == np.inf
    assert spla.reduce_scalar(A, monoid.lor) == 1
    B = Matrix.from_dense(dense_mat(rs, 2, 3))
    K = spla.kronecker(A, B)
    np.testing.assert_array_equal(K.to_dense(), sp.kron(A.to_scipy(), B.to_scipy()).toarray())
    u = Vector.from_dense(np.array([1.0, 0.0, 3.0, 0.0]))
    v = Vector.from_dense(np.array([0.0, 2.0, 5.0, 0.0]))
    got = spla.ewise_union(u, v, binary.minus, 10.0, 100.0)
    np.testing.assert_array_equal(got.indices, [0, 1, 2])
    np.testing.assert_array_equal(got.values, [1.0 - 100.0, 10.0 - 2.0, -2.0])


def test_masked_product_never_forms_the_unmasked_one():
    # A star: the hub's row times its column has n**2 products, the mask n.
    n = 400
    r = np.r_[np.zeros(n - 1, np.int64), np.arange(1, n)]
    c = np.r_[np.arange(1, n), np.zeros(n - 1, np.int64)]
    A = Matrix.from_coo(r, c, shape=(n, n))
    L = spla.select(A, "tril", -1)
    T = spla.mxm(L, L.T, semiring.plus_pair, mask=L.S)
    assert T.nnz <= L.nnz and spla.reduce_scalar(T) == 0  # a star has no triangle


@pytest.mark.parametrize("call,cls,pattern", [
    (lambda A, u: spla.mxv(A, u, mask=Vector.from_coo([0], size=9).S), DimensionMismatch,
     r"mxv: argument 'mask' must be a mask of shape \(2,\)"),
    (lambda A, u: spla.mxm(A, A, mask=A), DTypeError, r"mxm: argument 'mask'.*M\.S"),
    (lambda A, u: spla.mxv(A, u, out=Vector.from_coo([0], [1.0], size=2),
                           accum=semiring.plus_times), DTypeError, r"mxv: argument 'accum'"),
    (lambda A, u: spla.mxv(A, u, accum=binary.plus), InvalidValue,
     r"mxv: argument 'accum'.*out="),
    (lambda A, u: spla.mxm(A, A, out=A, accum=binary.secondi), DTypeError,
     r"mxm: argument 'accum'.*positional"),
    (lambda A, u: spla.mxv(A, Vector.from_coo([0], size=5)), DimensionMismatch,
     r"mxv: argument 'u'"),
    (lambda A, u: spla.vxm(A, A), DTypeError, r"vxm: argument 'u'"),
    (lambda A, u: spla.mxm(A, A, "no_such"), InvalidValue, r"mxm: argument 'semiring'"),
    (lambda A, u: spla.ewise_union(u, u, binary.plus, "x", 0), InvalidValue,
     r"ewise_union: argument 'left_default'"),
    (lambda A, u: spla.assign(u, 1.0, [0, 0]), InvalidValue, r"assign: argument 'rows'.*distinct"),
    (lambda A, u: spla.mxm(A, A, out=A, replace="yes"), InvalidValue,
     r"mxm: argument 'replace'"),
])
def test_bad_input(call, cls, pattern):
    A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    u = Vector.from_dense(np.array([1.0, 1.0]))
    with pytest.raises(cls, match=pattern):
        call(A, u)


@SET
@given(st.integers(0, 2**31 - 1), st.sampled_from(["plus_times", "min_plus", "plus_pair",
                                                    "any_pair", "max_times"]))
def test_masked_dot_and_push_agree(seed, name):
    """Both masked SpGEMM variants (chosen by cost) equal the unmasked product masked."""
    import kernels.cpu.masked as km
    from spla import product
    rs = np.random.RandomState(seed)
    A = Matrix.from_dense(dense_mat(rs, 6, 5, 0.6))
    B = Matrix.from_dense(dense_mat(rs, 5, 7, 0.6))
    M = Matrix.from_dense(dense_mat(rs, 6, 7, 0.6))
    sr = getattr(semiring, name)
    for mask in (M.S, M.V):
        want = spla.mxm(A, B, sr).new()
        want = spla.ewise_mult(want, M if mask.structural else spla.select(M, "nonzero"),
                               binary.first) if want.nnz else want
        for force in (False, True):
            orig = product._dot_is_cheaper
            product._dot_is_cheaper = lambda xp, A, B, M: force
            try:
                got = spla.mxm(A, B, sr, mask=mask)
            finally:
                product._dot_is_cheaper = orig
            assert as_dict(got) == pytest.approx(as_dict(want)), (force, mask)
    assert km.masked_dot is not None


@pytest.mark.parametrize("seed", range(4))
def test_masked_dot_with_hub_rows(seed):
    """Rows 8 times longer than the rows they meet take the search branches."""
    from spla import product
    rs = np.random.RandomState(seed)
    n = 60
    D = (rs.rand(n, n) < 0.04) * rs.randint(1, 4, size=(n, n)).astype(np.float64)
    D[0, rs.rand(n) < 0.9] = 2.0          # a hub row
    D[rs.rand(n) < 0.9, 1] = 3.0          # a hub column
    A = Matrix.from_dense(D)
    M = Matrix.from_dense((rs.rand(n, n) < 0.5).astype(np.float64))
    orig = product._dot_is_cheaper
    product._dot_is_cheaper = lambda xp, A, B, M: True
    try:
        for sr in (semiring.plus_times, semiring.min_plus, semiring.any_pair):
            got = spla.mxm(A, A.T, sr, mask=M.S)
            full = as_dict(spla.mxm(A, A.T, sr).new())
            want = {p: v for p, v in full.items() if p in as_dict(M)}
            assert as_dict(got) == pytest.approx(want)
    finally:
        product._dot_is_cheaper = orig



PULL_REFS = {
    "plus_times": (lambda x, y: x + y, lambda x, y, k: x * y),
    "min_plus": (min, lambda x, y, k: x + y),
    "min_first": (min, lambda x, y, k: x),
    "any_secondi": (lambda x, y: x, lambda x, y, k: k),  # any: the first term (smallest k)
    "plus_pair": (lambda x, y: x + y, lambda x, y, k: 1),
}


def ref_vxm(u, D, add, mul, allowed):
    """Plain-Python ``u ⊕.⊗ A`` folded in increasing k, over the allowed outputs."""
    ud = dict(zip(u.indices.tolist(), u.values.tolist()))
    out = {}
    for j in range(D.shape[1]):
        if not allowed[j]:
            continue
        for k in sorted(ud):
            if D[k, j] != 0:
                t = mul(ud[k], float(D[k, j]), k)
                out[j] = add(out[j], t) if j in out else t
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.sampled_from(sorted(PULL_REFS)),
       st.sampled_from(["none", "S", "~S", "V", "~V", "all-masked"]),
       st.sampled_from(["sparse", "dense", "empty"]))
def test_vxm_push_and_pull_match_plain_python(seed, name, mask_kind, u_kind):
    """Both directions of the CPU ``vxm`` (and ``mxv`` on Aᵀ) give the plain-Python
    fold, to the last bit: the pull folds Aᵀ's rows in the push's order."""
    import spla.graphblas as G
    rs = np.random.RandomState(seed)
    m, n = 7, 6
    D = dense_mat(rs, m, n, p=0.6) * rs.rand(m, n)  # non-integer values: order shows
    A = Matrix.from_dense(D)
    ids = {"sparse": np.flatnonzero(rs.rand(m) < 0.5), "dense": np.arange(m),
           "empty": np.zeros(0, np.int64)}[u_kind]
    u = Vector.from_coo(ids, rs.rand(ids.size) + 0.25, size=m)
    mv = rs.randint(0, 2, n).astype(np.float64) * (rs.rand(n) < 0.6)
    M = Vector.from_coo(np.flatnonzero(rs.rand(n) < 0.7), size=n) if mask_kind[-1] == "S" \
        else Vector.from_coo(np.arange(n), mv, size=n)
    mask = {"none": None, "S": M.S, "~S": ~M.S, "V": M.V, "~V": ~M.V,
            "all-masked": ~Vector.from_coo(np.arange(n), size=n).S}[mask_kind]
    allowed = np.ones(n, bool) if mask is None else mask.allows(np.arange(n))
    want = ref_vxm(u, D, *PULL_REFS[name], allowed)
    sr = getattr(semiring, name)
    got = []
    # (0, huge): always push; (huge, 0): always pull
    for share, edges in ((0, 10**9), (10**9, 0)):
        old = G.PUSH_SHARE, G.PUSH_EDGES
        G.PUSH_SHARE, G.PUSH_EDGES = share, edges
        try:
            z = spla.vxm(u, A, sr, mask=mask)
        finally:
            G.PUSH_SHARE, G.PUSH_EDGES = old
        got.append({int(j): (1 if z.values is None else z.values[t].item())
                    for t, j in enumerate(z.indices)})
    for g in got:
        assert g == want
    # mxv on Aᵀ: the same terms, operands in A ⊗ u order (min_first then takes A's value)
    add, mul = PULL_REFS[name]
    if name == "min_first":
        def mul(x, y, k):
            return y
    w = spla.mxv(Matrix.from_dense(D.T), u, sr, mask=mask)
    assert {int(j): (1 if w.values is None else w.values[t].item())
            for t, j in enumerate(w.indices)} == ref_vxm(u, D, add, mul, allowed)


@SET
@given(st.lists(st.integers(0, 300), unique=True), st.lists(st.integers(-5, 310)),
       st.sampled_from([1, 10**7]))
def test_locate_matches_plain_python(keys, queries, stretch):
    """``locate``'s dense table (narrow key range) and binary search (wide range)
    both give the position of each query key, or -1."""
    from spla.mask import locate, member
    sk = np.array(sorted(keys), np.int64) * stretch
    q = np.array(queries, np.int64) * stretch
    pos = {k: t for t, k in enumerate(sk.tolist())}
    want = [pos.get(k, -1) for k in q.tolist()]
    assert locate(sk, q).tolist() == want
    assert member(sk, q).tolist() == [w >= 0 for w in want]


@pytest.mark.parametrize("seed", range(3))
def test_masked_dot_position_tables_across_rows(seed):
    """More rows than ``masked_dot`` has blocks: each block's position table
    serves many rows in turn and must hold only the current row's entries
    (scipy's ``A Aᵀ`` restricted to the mask as the reference)."""
    from kernels.cpu.masked import DOT_BLOCKS
    from spla import product
    rs = np.random.RandomState(seed)
    n = 3 * DOT_BLOCKS + 5
    D = (rs.rand(n, n) < 0.08) * rs.randint(1, 4, size=(n, n)).astype(np.float64)
    D[::7, 3] = 2.0  # a few long columns: hub rows of Aᵀ take the search branch
    Mk = sp.csr_matrix((rs.rand(n, n) < 0.3) * 1.0)
    A, M = Matrix.from_dense(D), Matrix.from_scipy(Mk)
    orig = product._dot_is_cheaper
    product._dot_is_cheaper = lambda xp, A, B, M: True
    try:
        got = spla.mxm(A, A.T, semiring.plus_times, mask=M.S)
    finally:
        product._dot_is_cheaper = orig
    full = sp.csr_matrix(D) @ sp.csr_matrix(D).T
    want = {p: v for p, v in as_dict(Matrix.from_scipy(full.multiply(Mk > 0).tocsr()))
            .items() if v != 0}
    assert as_dict(got) == want


def test_masked_dot_blocks_share_the_work():
    """``_dot_blocks`` cuts the rows into blocks of about equal estimated work,
    also when the work sits in a few rows (dense rows first, as in BFS order),
    where blocks of equal row counts would leave one block nearly all of it."""
    from kernels.cpu.masked import TABLE_ROW, _dot_blocks
    rs = np.random.RandomState(0)
    n, nblk = 400, 4
    p = np.where(np.arange(n) < 60, 0.9, 0.02)[:, None]
    Ls = sp.csr_matrix(np.tril(rs.rand(n, n) < p, -1).astype(np.float64))
    a_ptr, a_idx = Ls.indptr.astype(np.int64), Ls.indices
    bt_ptr = a_ptr  # B = Lᵀ: Bᵀ's rows are L's
    work = []
    for i in range(n):  # plain Python: the estimate the docstring gives
        slots = a_idx[a_ptr[i]:a_ptr[i + 1]]
        a_len = int(a_ptr[i + 1] - a_ptr[i])
        table = slots.size >= 2 and a_len >= TABLE_ROW
        work.append(slots.size + a_len * (1 if table else slots.size)
                    + sum(int(bt_ptr[j + 1] - bt_ptr[j]) for j in slots))
    work = np.array(work)
    bounds = _dot_blocks.py_func(a_ptr, bt_ptr, a_ptr, a_idx, nblk, TABLE_ROW)
    assert bounds[0] == 0 and bounds[-1] == n and np.all(np.diff(bounds) >= 0)
    share = [work[bounds[b]:bounds[b + 1]].sum() for b in range(nblk)]
    assert max(share) <= work.sum() / nblk + work.max()
    # the test has teeth: blocks of equal row counts fail the same bound
    assert work[:n // nblk].sum() > work.sum() / nblk + work.max()


@pytest.mark.parametrize("seed", range(2))
def test_masked_dot_table_and_merge_paths_agree_bitwise(seed):
    """A narrow k range sends every row with two slots or more through the
    position table; the same matrices with their k ids spread past
    ``SMALL_K`` send the short rows through the merge.  Both fold the terms
    in increasing k: the values agree bit for bit, and equal scipy's A Aᵀ
    on the mask."""
    from kernels.cpu.masked import SMALL_K, TABLE_ROW
    from spla import product
    rs = np.random.RandomState(seed)
    m, k = 50, 40
    D = (rs.rand(m, k) < 0.15) * rs.standard_normal((m, k))
    D[0, rs.rand(k) < 0.8] = 0.5           # a hub row: a table in both
    assert (D[0] != 0).sum() >= TABLE_ROW
    spread = SMALL_K // k + 1
    c = sp.coo_matrix(D)
    A = Matrix.from_scipy(sp.csr_matrix(D))
    Aw = Matrix.from_scipy(sp.csr_matrix((c.data, (c.row, c.col * spread)),
                                         shape=(m, k * spread)))
    Mk = sp.csr_matrix((rs.rand(m, m) < 0.4) * 1.0)
    M = Matrix.from_scipy(Mk)
    orig = product._dot_is_cheaper
    product._dot_is_cheaper = lambda xp, A, B, M: True
    try:
        for sr in (semiring.plus_times, semiring.min_plus, semiring.plus_pair):
            got, wide = spla.mxm(A, A.T, sr, mask=M.S), spla.mxm(Aw, Aw.T, sr, mask=M.S)
            assert as_dict(got) == as_dict(wide), sr
    finally:
        product._dot_is_cheaper = orig
    full = sp.csr_matrix(D) @ sp.csr_matrix(D).T
    want = {p: v for p, v in as_dict(Matrix.from_scipy(full.multiply(Mk > 0).tocsr())).items()
            if v != 0}
    got = {p: v for p, v in as_dict(spla.mxm(A, A.T, semiring.plus_times, mask=M.S)).items()
           if v != 0}
    assert got == pytest.approx(want)


def test_masked_dot_cached_transpose_across_calls():
    """Repeated masked products with one right operand reuse its cached
    transpose: a structural call caches no order, a later call with values
    makes it; results equal scipy's each time, and the result keeps no mark
    of the mask (``spla.mask.finish`` pops it)."""
    from spla import product
    rs = np.random.RandomState(3)
    n = 40
    D = (rs.rand(n, n) < 0.2) * rs.randint(1, 5, size=(n, n)).astype(np.float64)
    Mk = sp.csr_matrix((rs.rand(n, n) < 0.4) * 1.0)
    A, M = Matrix.from_dense(D), Matrix.from_scipy(Mk)
    B = A.T
    full = (sp.csr_matrix(D) @ sp.csr_matrix(D).T).multiply(Mk > 0).tocsr()
    values = {k: v for k, v in as_dict(Matrix.from_scipy(full)).items() if v != 0}
    counts = _pair_counts(D, Mk)
    orig = product._dot_is_cheaper
    product._dot_is_cheaper = lambda xp, A, B, M: True
    try:
        for sr, want in ((semiring.plus_pair, counts), (semiring.plus_times, values),
                         (semiring.plus_pair, counts), (semiring.plus_times, values)):
            C = spla.mxm(A, B, sr, mask=M.S)
            assert {k: v for k, v in as_dict(C).items() if v != 0} == want
            assert "inside_mask" not in C._cache
            if sr is semiring.plus_pair and "transpose_values" not in B._cache:
                assert B._cache["transpose_pattern"][2] is None
    finally:
        product._dot_is_cheaper = orig
    assert spla.reduce_scalar(spla.mxm(A, B, semiring.plus_pair, mask=M.S)) == \
        sum(counts.values())


def _pair_counts(D, Mk):
    """plus_pair of D Dᵀ inside Mk's pattern: shared nonzero columns of rows i, j."""
    P = (D != 0).astype(np.int64)
    cnt = P @ P.T
    return {(int(i), int(j)): int(cnt[i, j]) for i, j in zip(*Mk.nonzero()) if cnt[i, j]}
