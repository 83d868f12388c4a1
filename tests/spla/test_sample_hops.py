"""``spla.sample_hops``: node-wise hops as one operator.

Its definition is the per-hop composition ``sample_rows(selection(frontier) @
A)`` then ``compact_columns_blockwise``; these tests write that composition
out with the public operators and compare, on hypothesis-drawn graphs,
groups and pick counts, and check the invariants of its blocks and its
argument errors.  The GPU's fused hops are compared with it in
``tests/sampling/test_gpu_path.py`` (CUDA simulator) and ``benchmarks/bench_gpu.py``
(a real GPU).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
import spla.generators
from spla import semiring
from spla.exceptions import DimensionMismatch, DTypeError, IndexOutOfRange, InvalidValue
from spla.hops import selection


def reference_hops(A, seeds, ptr, ks, seed, streams, ids, replace, weighted):
    """The composition, written out with public operators only."""
    n = A.ncols
    frontier, fptr = np.asarray(seeds, np.int64), np.asarray(ptr, np.int64)
    out = []
    for h, k in enumerate(ks):
        group = np.repeat(np.asarray(ids, np.int64), np.diff(fptr))
        Q = spla.Matrix.from_csr(np.arange(frontier.size + 1), frontier, None,
                                 (frontier.size, n))
        P = Q @ A if weighted else spla.mxm(Q, A.structure(), semiring.any_pair)
        every = k == -1
        S = spla.sample_rows(P, 2 ** 62 if every else k, seed=seed, stream=streams[h],
                             row_ids=group * n + frontier, replace=replace and not every,
                             return_counts=replace)
        if replace:
            S, counts = S
            S = S.with_values(counts.astype(np.float32))
        adj, src, sptr = spla.compact_columns_blockwise(S, fptr, first=frontier,
                                                        first_ptr=fptr)
        out.append((spla.split_blocks(adj, fptr, sptr), frontier, fptr, src, sptr))
        frontier, fptr = src, sptr
    return out


@st.composite
def problems(draw):
    n = draw(st.integers(2, 14))
    mask = draw(st.lists(st.booleans(), min_size=n * n, max_size=n * n))
    rows, cols = np.nonzero(np.array(mask).reshape(n, n))
    weighted = draw(st.booleans())
    vals = None
    if weighted:
        vals = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 1e-3]),
                                      min_size=rows.size, max_size=rows.size)), np.float32)
    A = spla.Matrix.from_coo(rows, cols, vals, shape=(n, n))
    G = draw(st.integers(1, 3))
    groups = [draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
              for _ in range(G)]
    ks = draw(st.lists(st.sampled_from([-1, 1, 2, 3, 5]), min_size=1, max_size=3))
    ids = draw(st.lists(st.integers(0, 50), min_size=G, max_size=G))
    return (A, groups, ks, ids, draw(st.booleans()), weighted and A.values is not None,
            draw(st.integers(0, 2 ** 64 - 1)))


@settings(max_examples=60)
@given(problems())
def test_sample_hops_is_the_composition(problem):
    A, groups, ks, ids, replace, weighted, seed = problem
    seeds = np.concatenate([np.array(g, np.int64) for g in groups])
    ptr = np.cumsum([0] + [len(g) for g in groups])
    streams = [3 * h + 1 for h in range(len(ks))]
    got = spla.sample_hops(A, seeds, ptr, ks, seed=seed, streams=streams, group_ids=ids,
                           replace=replace, weighted=weighted)
    want = reference_hops(A, seeds, ptr, ks, seed, streams, ids, replace, weighted)
    assert len(got) == len(want)
    for (gb, gd, gdp, gs, gsp), (wb, wd, wdp, ws, wsp) in zip(got, want):
        assert gdp.tolist() == wdp.tolist() and gsp.tolist() == list(wsp)
        assert gd.tolist() == wd.tolist() and gs.tolist() == ws.tolist()
        assert len(gb) == len(wb)
        for x, y in zip(gb, wb):
            assert x.isequal(y)


_SPARSE = spla.generators.rmat(12, 4, seed=5).structure()


@st.composite
def sparse_problems(draw):
    """Groups small next to the graph (the CPU's fused hops then relabel by
    hash tables, or by tags once a hop takes every entry of the hubs),
    rows of hundreds of entries, picks past the Floyd scan's limit (32)."""
    n = _SPARSE.nrows
    G = draw(st.integers(1, 5))
    groups = [draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=40, unique=True))
              for _ in range(G)]
    ks = draw(st.lists(st.sampled_from([-1, 1, 3, 40]), min_size=1, max_size=3))
    ids = draw(st.lists(st.integers(0, 50), min_size=G, max_size=G))
    return groups, ks, ids, draw(st.integers(0, 2 ** 64 - 1)), draw(st.sampled_from([1, 2]))


@settings(max_examples=30)
@given(sparse_problems())
def test_fused_cpu_hops_are_the_composition_on_a_sparse_graph(problem):
    """The CPU's fused hops (uniform draws) against the composition, on any
    thread count: the groups a worker takes do not change their blocks."""
    import numba

    groups, ks, ids, seed, threads = problem
    seeds = np.concatenate([np.array(g, np.int64) for g in groups])
    ptr = np.cumsum([0] + [len(g) for g in groups])
    streams = [5 * h + 2 for h in range(len(ks))]
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got = spla.sample_hops(_SPARSE, seeds, ptr, ks, seed=seed, streams=streams,
                               group_ids=ids)
    finally:
        numba.set_num_threads(before)
    want = reference_hops(_SPARSE, seeds, ptr, ks, seed, streams, ids, False, False)
    for (gb, gd, gdp, gs, gsp), (wb, wd, wdp, ws, wsp) in zip(got, want, strict=True):
        assert gdp.tolist() == wdp.tolist() and gsp.tolist() == list(wsp)
        assert gd.tolist() == wd.tolist() and gs.tolist() == ws.tolist()
        for x, y in zip(gb, wb, strict=True):
            assert x.isequal(y)
            assert not x.indices.flags.writeable


@pytest.mark.parametrize("groups", [1, 3])
def test_fused_cpu_hops_on_large_bulks(groups):
    """Bulks of many rows (shared out by groups, or, for one group, by rows),
    on 1 and 2 threads."""
    import numba

    rng = np.random.default_rng(7)
    seeds = np.concatenate([rng.choice(_SPARSE.nrows, 3000, replace=False)
                            for _ in range(groups)])
    ptr = np.arange(groups + 1) * 3000
    ks, streams = [6, -1, 3], [1, 2, 3]
    want = reference_hops(_SPARSE, seeds, ptr, ks, 11, streams, range(groups), False, False)
    before = numba.get_num_threads()
    for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        numba.set_num_threads(threads)
        try:
            got = spla.sample_hops(_SPARSE, seeds, ptr, ks, seed=11, streams=streams)
        finally:
            numba.set_num_threads(before)
        for (gb, gd, _, gs, gsp), (wb, wd, _, ws, wsp) in zip(got, want, strict=True):
            assert gs.tolist() == ws.tolist() and gsp.tolist() == list(wsp)
            assert all(x.isequal(y) for x, y in zip(gb, wb, strict=True))



@pytest.mark.parametrize("ks", [[1, 7], [63, 16], [64, 17], [5, -1]])
def test_fused_cpu_hops_at_the_word_and_sort_limits(ks):
    """Rows of 62 to 67 entries (the CPU hop keeps the draws of a row of at
    most 64 entries as the bits of one word, longer rows keep a scan) and
    rows of 1 to 20 picks (sorted by networks, by rank, or by sort_range),
    against the composition."""
    rng = np.random.default_rng(3)
    n = 300
    degrees = np.concatenate([np.arange(62, 68), rng.integers(1, 21, n - 6)])
    cols = [np.sort(rng.choice(n, d, replace=False)) for d in degrees]
    A = spla.Matrix.from_csr(np.concatenate([[0], np.cumsum(degrees)]), np.concatenate(cols),
                             None, (n, n))
    seeds = np.concatenate([np.arange(6), rng.choice(np.arange(6, n), 40, replace=False),
                            np.arange(8)])
    ptr = np.array([0, 46, 54])
    got = spla.sample_hops(A, seeds, ptr, ks, seed=9, streams=[1, 2], group_ids=[4, 0])
    want = reference_hops(A, seeds, ptr, ks, 9, [1, 2], [4, 0], False, False)
    for (gb, _, _, gs, gsp), (wb, _, _, ws, wsp) in zip(got, want, strict=True):
        assert gs.tolist() == ws.tolist() and gsp.tolist() == list(wsp)
        assert all(x.isequal(y) for x, y in zip(gb, wb, strict=True))

def test_blocks_hold_sampled_edges_of_the_graph():
    """Invariants: every edge exists, at most k per row, sources start with the
    destinations and are distinct within a group, the next hop starts there."""
    A = spla.generators.rmat(8, 8, seed=3)
    rng = np.random.default_rng(0)
    groups = [rng.choice(A.nrows, 20, replace=False) for _ in range(3)]
    seeds = np.concatenate(groups)
    ptr = np.cumsum([0] + [g.size for g in groups])
    hops = spla.sample_hops(A, seeds, ptr, [4, 3], seed=1, streams=[0, 1])
    dense = A.to_dense() != 0
    for h, (blocks, dst, dp, src, sp) in enumerate(hops):
        if h:
            assert dst.tolist() == hops[h - 1][3].tolist()
        for g, B in enumerate(blocks):
            d, s = dst[dp[g]:dp[g + 1]], src[sp[g]:sp[g + 1]]
            assert s[:d.size].tolist() == d.tolist()
            assert np.unique(s).size == s.size
            assert B.shape == (d.size, s.size)
            assert (B.row_degrees() <= [4, 3][h]).all()
            r = np.repeat(np.arange(B.nrows), B.row_degrees())
            assert dense[d[r], s[B.indices]].all()


def test_hops_of_a_minibatch_do_not_depend_on_the_others():
    A = spla.generators.rmat(8, 8, seed=4)
    rng = np.random.default_rng(1)
    groups = [rng.choice(A.nrows, 10, replace=False) for _ in range(3)]
    seeds = np.concatenate(groups)
    bulk = spla.sample_hops(A, seeds, [0, 10, 20, 30], [3, 2], seed=5, streams=[7, 8],
                            group_ids=[4, 5, 6])
    alone = spla.sample_hops(A, groups[1], [0, 10], [3, 2], seed=5, streams=[7, 8],
                             group_ids=[5])
    for (bb, *_), (ab, *_) in zip(bulk, alone):
        assert bb[1].isequal(ab[0])


def test_selection_selects_rows():
    A = spla.generators.rmat(6, 4, seed=0)
    v = np.array([5, 2, 5])
    assert (selection(v, A.nrows) @ A).new().structure().isequal(spla.extract(A, rows=v))


@pytest.mark.parametrize("call, exc, text", [
    (lambda A: spla.sample_hops(A, [0, 1], [0, 2], [0], seed=0, streams=[0]),
     InvalidValue, "ks[0]"),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 2], [-2], seed=0, streams=[0]),
     InvalidValue, "ks[0]"),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 2], [], seed=0, streams=[]),
     InvalidValue, "'ks'"),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 2], [2, 2], seed=0, streams=[0]),
     DimensionMismatch, "'streams'"),
    (lambda A: spla.sample_hops(A, [0, 9], [0, 2], [2], seed=0, streams=[0]),
     IndexOutOfRange, "'seeds'"),
    (lambda A: spla.sample_hops(A, [1, 1], [0, 2], [2], seed=0, streams=[0]),
     InvalidValue, "distinct seeds"),
    (lambda A: spla.sample_hops(A, [1, 1], [0, 1, 2], [2], seed=0, streams=[0]),
     None, None),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 0, 2], [2], seed=0, streams=[0]),
     InvalidValue, "non-empty groups"),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 3], [2], seed=0, streams=[0]),
     DimensionMismatch, "'seeds'"),
    (lambda A: spla.sample_hops(A, [0.0, 1.0], [0, 2], [2], seed=0, streams=[0]),
     DTypeError, "'seeds'"),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 2], [2], seed=-1, streams=[0]),
     InvalidValue, "'seed'"),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 2], [2], seed=0, streams=[0],
                                group_ids=[1, 2]),
     DimensionMismatch, "'group_ids'"),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 2], [2], seed=0, streams=[0],
                                group_ids=[-1]),
     InvalidValue, "'group_ids[0]'"),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 1, 2], [2], seed=0, streams=[0],
                                group_ids=(0, True)),
     InvalidValue, "'group_ids[1]'"),
    (lambda A: spla.sample_hops(A, [0, 1], [0, 2], [2], seed=0, streams=[0],
                                group_ids=[2 ** 63]),
     InvalidValue, "'group_ids'"),
    (lambda A: spla.sample_hops(A.structure(), [0, 1], [0, 2], [2], seed=0, streams=[0],
                                weighted=True),
     InvalidValue, "'weighted'"),
    (lambda A: spla.sample_hops(spla.Matrix.from_dense(np.ones((2, 3))), [0], [0, 1], [1],
                                seed=0, streams=[0]),
     DimensionMismatch, "square"),
    (lambda A: spla.sample_hops(np.eye(3), [0], [0, 1], [1], seed=0, streams=[0]),
     DTypeError, "'A'"),
])
def test_sample_hops_errors_name_the_argument(call, exc, text):
    A = spla.Matrix.from_dense(np.ones((4, 4)))
    if exc is None:
        call(A)  # the same vertex in two groups is fine
        return
    with pytest.raises(exc, match="sample_hops: argument") as info:
        call(A)
    assert text in str(info.value)


def test_fast_launch_parameter_format():
    """The packed layout of a direct launch: seven words per array, one per scalar."""
    from numba.core import types as nt

    from kernels.cuda._util import param_format
    arr = nt.Array(nt.float32, 1, "C")
    assert param_format((arr, nt.int64, arr, nt.uint64, nt.float64)) == "<QQqqQqqqQQqqQqqQd"
    assert param_format((nt.Array(nt.int64, 2, "C"),)) is None
    assert param_format((nt.Array(nt.int64, 1, "A"),)) is None
    assert param_format((nt.boolean,)) is None
    # Narrow scalars sit at offsets that are multiples of their size, as a C
    # struct of the same fields lays them out (ctypes: an independent layout).
    import ctypes
    import struct
    c_of = {nt.int32: ctypes.c_int32, nt.float32: ctypes.c_float, nt.int64: ctypes.c_int64,
            nt.uint32: ctypes.c_uint32, nt.float64: ctypes.c_double}
    for types in [(nt.float32, nt.int64), (nt.int32, nt.int32, nt.int64),
                  (nt.int64, nt.uint32, arr, nt.float32), (nt.float32, arr, nt.float64)]:
        fields, codes = [], []
        for i, t in enumerate(types):
            fields.append((f"f{i}", ctypes.c_int64 * 7 if t == arr else c_of[t]))
        layout = type("Params", (ctypes.Structure,), {"_fields_": fields})
        fmt = param_format(types)
        # The offset of each parameter in the packed buffer: the size of the
        # format up to (not including) that parameter's own codes.
        pos, offsets = 1, []
        for t in types:
            while fmt[pos] == "x":
                pos += 1
            offsets.append(struct.calcsize(fmt[:pos]))
            pos += 7 if t == arr else 1
        assert offsets == [getattr(layout, f"f{i}").offset for i in range(len(types))], fmt
    assert param_format((nt.float32, nt.int64)) == "<fxxxxq"


@pytest.mark.parametrize("materialize", [False, True])
def test_wait_false_gives_the_same_hops(materialize):
    """On the CPU, fused or composed, ``wait=False`` computes the hops in the
    call (the Pending is done) and they are ``wait=True``'s."""
    A = _SPARSE
    seeds = np.array([5, 9, 200, 7, 1000], np.int64)
    ptr = np.array([0, 3, 5])
    kw = dict(seed=11, streams=[0, 1], group_ids=[4, 2], materialize=materialize)
    want = spla.sample_hops(A, seeds, ptr, [3, 2], **kw)
    p = spla.sample_hops(A, seeds, ptr, [3, 2], wait=False, **kw)
    assert isinstance(p, spla.Pending) and p.done
    got = p.wait()
    for (gb, gd, gdp, gs, gsp), (wb, wd, wdp, ws, wsp) in zip(got, want):
        assert gdp.tolist() == wdp.tolist() and gsp.tolist() == wsp.tolist()
        assert gd.tolist() == wd.tolist() and gs.tolist() == ws.tolist()
        assert all(x.isequal(y) for x, y in zip(gb, wb))


def test_wait_false_checks_its_arguments_in_the_call():
    A = spla.Matrix.from_dense(np.ones((4, 4)))
    with pytest.raises(InvalidValue, match="sample_hops: argument 'seeds'.*distinct"):
        spla.sample_hops(A, [1, 1], [0, 2], [2], seed=0, streams=[0], wait=False)
