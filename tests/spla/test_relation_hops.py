"""RelationStack.sample_hop: the fused CPU hop equals the composition, block for block.

The reference is the composition the module describes, written here with
public operators only (``sample_rows`` per relation on ``selection @ A``,
rows minibatch-major and relation-minor, one ``compact_columns_blockwise``),
on hypothesis-generated relations: several into one source type, empty
rows and empty frontiers, fanouts -1, 0 and >= 1, on 1 and 2 numba threads
(fewer minibatches than threads take the kernel's pre-drawn path).  Laws
checked independently of both: every entry an edge of its relation, every
row ``min(k, degree)`` entries, each minibatch's columns its ``first``
vertices then distinct new ones.
"""

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spla
from spla import compact_columns_blockwise, extract_rows, sample_rows, split_blocks, vstack
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla import semiring
from spla.hops import selection
from spla.mxm import mxm
from spla.relation_hops import RelationStack
from spla.sample import K_ALL


def reference(mats, rel_ids, R, frontiers, ks, first, fptr, seed, stream, ids, replace=False):
    """The composition, operator by operator (structural blocks unless replace)."""
    G, n = fptr.size - 1, mats[0].ncols
    parts = []
    for j, A in enumerate(mats):
        nodes, p = frontiers[j]
        if ks[j] == 0 or nodes.size == 0:
            vals = np.zeros(0, np.float32) if replace else None
            parts.append(spla.Matrix.from_csr(np.zeros(nodes.size + 1, np.int64),
                                              np.zeros(0, np.int64), vals, (nodes.size, n)))
            continue
        P = mxm(selection(nodes, A.nrows), A.structure(), semiring.any_pair)
        rid = (np.repeat(ids, np.diff(p)) * R + rel_ids[j]) * A.nrows + nodes
        every = ks[j] == -1
        S = sample_rows(P, K_ALL if every else ks[j], seed=seed, stream=stream,
                        row_ids=rid, replace=replace and not every, return_counts=replace)
        if replace:
            S = S[0].with_values(S[1].astype(np.float32))
        parts.append(S)
    grp = np.concatenate([np.repeat(np.arange(G), np.diff(p)) for _, p in frontiers])
    rel = np.concatenate([np.full(nodes.size, j) for j, (nodes, _) in enumerate(frontiers)])
    order = np.lexsort((rel, grp))
    C = extract_rows(vstack(parts), order)
    row_ptr = np.concatenate([[0], np.cumsum(np.bincount(grp, minlength=G))])
    M, src, sp = compact_columns_blockwise(C, row_ptr, first=first, first_ptr=fptr)
    sp = np.asarray(sp, np.int64)
    blocks = [split_blocks(extract_rows(M, np.flatnonzero(rel[order] == j)), frontiers[j][1],
                           sp, check=False) for j in range(len(mats))]
    return blocks, np.asarray(src, np.int64), sp


@st.composite
def hops(draw):
    n = draw(st.integers(1, 12))  # the source type's vertices (columns)
    J = draw(st.integers(1, 3))
    G = draw(st.integers(1, 3))
    mats, frontiers = [], []
    for _ in range(J):
        m = draw(st.integers(1, 8))
        dense = np.array(draw(st.lists(st.booleans(), min_size=m * n, max_size=m * n)))
        dense = dense.reshape(m, n)
        if m > 1:
            dense[draw(st.integers(0, m - 1))] = False  # an empty row
        mats.append(spla.Matrix.from_dense(dense.astype(np.float64)))
        groups = [draw(st.lists(st.integers(0, m - 1), unique=True, max_size=m))
                  for _ in range(G)]
        frontiers.append((np.array(sum(groups, []), np.int64),
                          np.cumsum([0] + [len(g) for g in groups]).astype(np.int64)))
    firsts = [draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n)) for _ in range(G)]
    first = np.array(sum(firsts, []), np.int64)
    fptr = np.cumsum([0] + [len(f) for f in firsts]).astype(np.int64)
    ks = draw(st.lists(st.sampled_from([-1, 0, 1, 2, 3]), min_size=J, max_size=J))
    R = J + draw(st.integers(0, 2))
    rel_ids = draw(st.permutations(range(R)))[:J]
    ids = np.array(draw(st.lists(st.integers(0, 50), unique=True, min_size=G, max_size=G)))
    return mats, list(rel_ids), R, frontiers, ks, first, fptr, ids, draw(st.integers(0, 3))


def check_laws(mats, frontiers, ks, first, fptr, blocks, src, sp):
    for g in range(fptr.size - 1):
        cols = src[sp[g]:sp[g + 1]].tolist()
        assert cols[:fptr[g + 1] - fptr[g]] == first[fptr[g]:fptr[g + 1]].tolist()
        assert len(set(cols)) == len(cols)
        for j, A in enumerate(mats):
            nodes, p = frontiers[j]
            dense = A.to_dense() != 0
            b = blocks[j][g]
            assert b.shape == (p[g + 1] - p[g], len(cols))
            for i, v in enumerate(nodes[p[g]:p[g + 1]]):
                row = np.asarray(b.indices[b.indptr[i]:b.indptr[i + 1]])
                deg = int(dense[v].sum())
                assert row.size == (deg if ks[j] == -1 else min(ks[j], deg))
                assert all(dense[v, cols[c]] for c in row) and (np.diff(row) > 0).all()


@pytest.mark.parametrize("threads", [1, 2])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=hops())
def test_fused_equals_composition(threads, case):
    mats, rel_ids, R, frontiers, ks, first, fptr, ids, seed = case
    stack = RelationStack(mats, rel_ids, R)
    assert stack.fused()
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        blocks, src, sp = stack.sample_hop(frontiers, ks, first, fptr, seed=seed, stream=5,
                                           group_ids=ids)
    finally:
        numba.set_num_threads(before)
    ref_blocks, ref_src, ref_sp = reference(mats, rel_ids, R, frontiers, ks, first, fptr,
                                            seed, 5, ids)
    assert src.tolist() == ref_src.tolist() and sp.tolist() == ref_sp.tolist()
    for j in range(len(mats)):
        for b, r in zip(blocks[j], ref_blocks[j]):
            assert b.shape == r.shape
            assert np.asarray(b.indptr).tolist() == np.asarray(r.indptr).tolist()
            assert np.asarray(b.indices).tolist() == np.asarray(r.indices).tolist()
            assert b.values is None
    check_laws(mats, frontiers, ks, first, fptr, blocks, src, sp)


@settings(max_examples=15, deadline=None)
@given(case=hops())
def test_composition_with_replacement(case):
    mats, rel_ids, R, frontiers, ks, first, fptr, ids, seed = case
    stack = RelationStack(mats, rel_ids, R)
    assert not stack.fused(replace=True)
    blocks, src, sp = stack.sample_hop(frontiers, ks, first, fptr, seed=seed, stream=1,
                                       group_ids=ids, replace=True)
    ref_blocks, ref_src, ref_sp = reference(mats, rel_ids, R, frontiers, ks, first, fptr,
                                            seed, 1, ids, replace=True)
    assert src.tolist() == ref_src.tolist() and sp.tolist() == ref_sp.tolist()
    for j in range(len(mats)):
        for b, r in zip(blocks[j], ref_blocks[j]):
            assert (b.to_dense() == r.to_dense()).all()


def test_bad_input():
    A = spla.Matrix.from_coo([0], [1], shape=(2, 3))
    B = spla.Matrix.from_coo([0], [1], shape=(2, 4))
    with pytest.raises(DTypeError, match="RelationStack.*mats"):
        RelationStack(A, [0], 1)
    with pytest.raises(DimensionMismatch, match="mats\\[1\\].*3 columns"):
        RelationStack([A, B], [0, 1], 2)
    with pytest.raises(InvalidValue, match="relation_ids\\[0\\]"):
        RelationStack([A], [2], 2)
    st_ = RelationStack([A], [0], 1)
    ptr = np.array([0, 1])
    with pytest.raises(DimensionMismatch, match="sample_hop.*frontiers"):
        st_.sample_hop([], [1], np.array([0]), ptr, seed=0, stream=0)
    with pytest.raises(DimensionMismatch, match="sample_hop.*frontiers\\[0\\]"):
        st_.sample_hop([(np.array([0]), np.array([0, 1, 1]))], [1], np.array([0]), ptr,
                       seed=0, stream=0)
    with pytest.raises(InvalidValue, match="ks\\[0\\]"):
        st_.sample_hop([(np.array([0]), ptr)], [-2], np.array([0]), ptr, seed=0, stream=0)
    with pytest.raises(DimensionMismatch, match="group_ids"):
        st_.sample_hop([(np.array([0]), ptr)], [1], np.array([0]), ptr, seed=0, stream=0,
                       group_ids=[0, 1])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("ncols", [200, 20000])
def test_fused_equals_composition_on_wide_rows(threads, ncols):
    """Rows around the short-row limits of the fused hop (a row of at most 64
    entries draws as the bits of a word; rows of up to 16 picks sort by
    networks or rank), picks of every count up to 20 and whole rows, and
    both column maps: a tag array over 200 columns, a hash table over 20,000."""
    rng = np.random.default_rng(ncols)
    mats, frontiers = [], []
    for m in (40, 30):
        deg = rng.choice([1, 5, 16, 17, 62, 63, 64, 65, 66, 130], size=m)
        dense = np.zeros((m, ncols), bool)
        for i, d in enumerate(deg):
            dense[i, rng.choice(ncols, size=min(d, ncols), replace=False)] = True
        mats.append(spla.Matrix.from_dense(dense.astype(np.float64)))
        groups = [rng.choice(m, size=m // 2, replace=False).tolist() for _ in range(2)]
        frontiers.append((np.array(sum(groups, []), np.int64),
                          np.cumsum([0] + [len(g) for g in groups]).astype(np.int64)))
    firsts = [rng.choice(ncols, size=5, replace=False).tolist() for _ in range(2)]
    first = np.array(sum(firsts, []), np.int64)
    fptr = np.array([0, 5, 10], np.int64)
    ids = np.array([3, 8])
    for ks in ([1, 3], [7, 20], [-1, 16], [2, -1]):
        stack = RelationStack(mats, [0, 1], 2)
        before = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            blocks, src, sp = stack.sample_hop(frontiers, ks, first, fptr, seed=11, stream=2,
                                               group_ids=ids)
        finally:
            numba.set_num_threads(before)
        ref_blocks, ref_src, ref_sp = reference(mats, [0, 1], 2, frontiers, ks, first, fptr,
                                                11, 2, ids)
        assert src.tolist() == ref_src.tolist() and sp.tolist() == ref_sp.tolist(), ks
        for j in range(len(mats)):
            for b, r in zip(blocks[j], ref_blocks[j]):
                assert np.asarray(b.indptr).tolist() == np.asarray(r.indptr).tolist(), ks
                assert np.asarray(b.indices).tolist() == np.asarray(r.indices).tolist(), ks
        check_laws(mats, frontiers, ks, first, fptr, blocks, src, sp)
