"""Sparse-vector unions by one sorted merge (``kernels.cpu.vector``) against
plain Python and against the general merge of ``spla.mask`` (the same
entries as 1 x n matrices, which never take the vector path): same keys,
values and dtype, for every operator and dtype the merge serves and for
those it leaves to the general path."""

import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

import spla
from spla import Matrix, Vector, binary
from graphblas_model import as_dict, mask_allows, mask_of, MASK_KINDS, ref_write

SET = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DTYPES = (None, np.int64, np.float64, np.int32, np.float32)
OPS = {"first": lambda x, y: x, "second": lambda x, y: y, "any": lambda x, y: x,
       "plus": lambda x, y: x + y, "times": lambda x, y: x * y, "min": min,
       "minus": lambda x, y: x - y}


@st.composite
def vector_pair(draw):
    """Two vectors of one size: key sets of alike sizes (the entry-by-entry
    merge) or one 8 times shorter (the galloping one), empty ones included."""
    n = draw(st.integers(0, 120))
    keys = st.lists(st.integers(0, max(n - 1, 0)), unique=True, max_size=n)
    ka = sorted(draw(keys)) if n else []
    kb = sorted(draw(keys)) if n else []
    if draw(st.booleans()):
        kb = kb[:max(len(ka) // 9, 0)]  # a short side
    out = []
    for k in (ka, kb):
        dt = draw(st.sampled_from(DTYPES))
        vals = None if dt is None else np.array(
            [draw(st.integers(-3, 4)) for _ in k], dt)
        out.append(Vector.from_coo(np.array(k, np.int64), vals, size=n))
    return out


def as_row(u):
    return Matrix.from_coo(np.zeros(u.nvals, np.int64), u.indices, u.values, shape=(1, u.size))


def pydict(u):
    return dict(zip(u.indices.tolist(), [1] * u.nvals if u.values is None
                    else u.values.tolist()))


@SET
@given(vector_pair(), st.sampled_from(sorted(OPS)))
def test_vector_union_against_python_and_the_general_merge(pair, name):
    u, v = pair
    op = getattr(binary, name)
    got = spla.ewise_add(u, v, op)
    a, b = pydict(u), pydict(v)
    want = {k: OPS[name](a[k], b[k]) if (k in a and k in b) else a.get(k, b.get(k))
            for k in set(a) | set(b)}
    assert got.indices.tolist() == sorted(want)
    assert pydict(got) == want
    general = spla.ewise_add(as_row(u), as_row(v), op)
    assert general.indices.tolist() == got.indices.tolist()
    if general.values is None:
        assert got.values is None
    else:
        assert got.values.dtype == general.values.dtype
        assert np.array_equal(got.values, general.values)


@SET
@given(vector_pair(), st.sampled_from(MASK_KINDS), st.sampled_from(["plus", "second", "times"]),
       st.booleans())
def test_vector_accum_write_against_the_model(pair, mk, name, replace):
    """``out=C, accum=op`` on vectors (``finish`` merges C and T) with every
    mask kind, with and without ``replace``."""
    C, T = pair
    M = T if T.nvals else C
    op = getattr(binary, name)
    empty = Vector.from_coo(np.zeros(0, np.int64), None if T.values is None
                            else np.zeros(0, T.values.dtype), size=T.size)
    got = spla.ewise_add(T, empty, mask=mask_of(mk, M), out=C, accum=op, replace=replace)
    want = ref_write(pydict(T), pydict(C), mk, M, OPS[name], replace)
    assert pydict(got) == want


@SET
@given(vector_pair(), st.sampled_from(["S", "V"]), st.booleans(),
       st.sampled_from([3, 2.5, np.float32(1.5), np.int32(4)]))
def test_assign_scalar_masked_same_as_general_path(pair, kind, replace, value):
    """``assign(C, scalar, mask=M)`` on a whole vector (the merge) equals the
    general path (rows given) in keys, values and dtype, for every dtype of
    C, empty and all-masked vectors included."""
    C, M = pair
    mask = M.S if kind == "S" else M.V
    got = spla.assign(C, value, mask=mask, replace=replace)
    general = spla.assign(C, value, np.arange(C.size), mask=mask, replace=replace)
    assert got.isequal(general)
    assert got.values.dtype == general.values.dtype
    allowed = {k for k in range(C.size) if mask_allows(kind, M, k)}
    want = {k: value for k in allowed}
    if not replace:
        want.update({k: x for k, x in pydict(C).items() if k not in allowed})
    assert pydict(got) == pytest.approx(want)


@pytest.mark.parametrize("n", [0, 1, 7, 300])
def test_key_flags(n):
    from kernels.cpu.vector import key_flags
    rs = np.random.RandomState(n)
    keys = np.flatnonzero(rs.rand(n) < 0.4).astype(np.int64)
    keys.flags.writeable = False  # as spla passes it: no signature of its own
    want = np.zeros(n, np.bool_)
    want[keys] = True
    assert np.array_equal(key_flags(keys, n, False), want)
    assert np.array_equal(key_flags(keys, n, True), ~want)


def test_all_masked_bfs_step_finds_nothing():
    """A complemented mask that covers every position (a BFS with all
    vertices visited) lets no entry through, pushed or pulled."""
    A = Matrix.from_coo([0, 1, 2], [1, 2, 0], shape=(3, 3))
    seen = Vector.from_coo([0, 1, 2], [0, 0, 1], size=3)
    u = Vector.from_coo([0, 2], [5, 6], size=3)
    for sr in ("any_secondi", "plus_times"):
        assert spla.vxm(u, A, sr, mask=~seen.S).nvals == 0
        assert spla.mxv(A, u, sr, mask=~seen.S).nvals == 0
    assert spla.vxm(u, A, "any_secondi", mask=seen.S).indices.tolist() == [0, 1]


@SET
@given(st.integers(0, 2**31 - 1), st.sampled_from(["S", "~S", "V", "~V", "all-masked", "none"]),
       st.sampled_from(["plus_times", "any_secondi"]))
def test_vxm_push_mask_search_and_flags_agree(seed, kind, name):
    """The push ``vxm`` tests its mask per edge by a search of the mask's
    keys (few edges) or by flags of the mask's size: both equal plain
    Python (values small integers: exact sums)."""
    import spla.graphblas as G
    rs = np.random.RandomState(seed)
    m, n = 9, 40
    D = (rs.rand(m, n) < 0.15) * rs.randint(1, 4, size=(m, n)).astype(np.float64)
    A = Matrix.from_dense(D)
    ids = np.flatnonzero(rs.rand(m) < 0.4)
    u = Vector.from_coo(ids, rs.randint(1, 5, ids.size).astype(np.float64), size=m)
    mv = rs.randint(0, 2, n).astype(np.float64)
    M = Vector.from_coo(np.flatnonzero(rs.rand(n) < 0.8), size=n) if kind.endswith("S") \
        else Vector.from_coo(np.arange(n), mv, size=n)
    mask = {"S": M.S, "~S": ~M.S, "V": M.V, "~V": ~M.V, "none": None,
            "all-masked": ~Vector.from_coo(np.arange(n), size=n).S}[kind]
    allowed = [True] * n if mask is None else mask.allows(np.arange(n)).tolist()
    uu = dict(zip(u.indices.tolist(), u.values.tolist()))
    want = {}
    for j in range(n):
        terms = [(k, x * D[k, j]) for k, x in sorted(uu.items()) if D[k, j] != 0]
        if terms and allowed[j]:
            want[j] = terms[0][0] if name == "any_secondi" else sum(t for _, t in terms)
    got = []
    for share in (0, 10**9):  # a search wherever the mask has keys; flags
        old = G.SEARCH_SHARE, G.PUSH_EDGES
        G.SEARCH_SHARE, G.PUSH_EDGES = share, 10**9
        try:
            got.append(pydict(spla.vxm(u, A, getattr(spla.semiring, name), mask=mask)))
        finally:
            G.SEARCH_SHARE, G.PUSH_EDGES = old
    assert got[0] == want and got[1] == want
