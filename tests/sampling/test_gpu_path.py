"""The samplers' GPU path end to end, under the CUDA simulator, with cupy stood in for.

``tests/fake_cupy.py`` plays cupy (its arrays are host arrays that spla
takes for device arrays), so a sampler built on ``A.to("cuda")`` runs the
whole GPU path: the array-module orchestration, ``spla.sample_hops``' fused
hops and the numba.cuda kernels (under numba's simulator).  The tests check
that it gives the CPU's minibatches, and that the fused path keeps its
budget of device launches and blocking device-to-host reads, counted by the
stand-in itself (every read of a device value into Python, every array
operation and kernel launch), independently of the library's own counter.

They run in the simulator child of ``tests/kernels/test_cuda_kernels.py`` (this
file is in its ``SIM_FILES``) and skip elsewhere.  Inputs are tiny: the
simulator runs each GPU thread as a Python thread.
"""

import numpy as np
import pytest

from sim_marks import sim

pytestmark = sim

#: The fused path's budget (issue: at most 6 launches per hop, 2 reads per bulk;
#: the hops check the seeds as they go, so one read is the sizes').
LAUNCHES_PER_HOP = 6
READS_PER_BULK = 1
#: Rows up to this long are sorted by a network or insertion sort
#: (``kernels.common.sort_range``), longer ones by heap sort.
SHORT_SORT = 32


@pytest.fixture(scope="module")
def cp():
    """The cupy stand-in, installed for this module's tests only."""
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


def _graph(n=48, m=300, seed=0):
    import spla
    rng = np.random.default_rng(seed)
    A = spla.Matrix.from_coo(rng.integers(0, n, m), rng.integers(0, n, m), shape=(n, n))
    A = spla.ewise_add(A, spla.transpose(A)).structure()
    # Weights with zeros, equal rows and a spread of magnitudes.
    w = rng.random(A.nnz) * (rng.random(A.nnz) < 0.8) * 10.0 ** rng.integers(-2, 3, A.nnz)
    return A, A.with_values(w.astype(np.float32))


def _seeds(n, k=3, b=5, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.choice(n, b, replace=False) for _ in range(k)]


def _host(a):
    from spla.backend import to_host
    return np.asarray(to_host(a))


def assert_same_minibatches(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.index == w.index and len(g.blocks) == len(w.blocks)
        for bg, bw in zip(g.blocks, w.blocks):
            assert bg.adj.device == "cuda"
            want_adj = bw.adj.to("cpu")
            assert bg.adj.to("cpu").isequal(want_adj), (bg.adj.to("cpu").to_dense(),
                                                        want_adj.to_dense())
            assert np.array_equal(_host(bg.dst_nodes), _host(bw.dst_nodes))
            assert np.array_equal(_host(bg.src_nodes), _host(bw.src_nodes))


MODES = {
    "uniform": dict(fanouts=[3, 2]),
    "replace": dict(fanouts=[3, 2], replace=True),
    "weighted": dict(fanouts=[3, 2], weighted=True),
    "weighted-replace": dict(fanouts=[4, 2], weighted=True, replace=True),
    "all-neighbours": dict(fanouts=[-1, 2]),
    "three-hops": dict(fanouts=[2, 2, 2]),
}


@pytest.mark.parametrize("order", ["group", "vertex"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_sim_graphsage_gpu_equals_cpu(cp, mode, order, monkeypatch):
    """Every draw mode, with the occurrence table in either slot order."""
    from sampling import GraphSAGE
    monkeypatch.setattr("kernels.cuda.hop_table.TABLE_ORDER", order)
    A, W = _graph()
    kw = dict(MODES[mode])
    G = W if kw.get("weighted") else A
    seeds = _seeds(A.nrows)
    want = GraphSAGE(G, **kw).sample(seeds, seed=3, epoch=2)
    got = GraphSAGE(G.to("cuda"), **kw).sample([cp.asarray(s) for s in seeds], seed=3,
                                               epoch=2)
    assert_same_minibatches(got, want)


@pytest.mark.parametrize("kw", [dict(fanouts=[40, 20], weighted=True),
                                dict(fanouts=[100, 20], replace=True),
                                dict(fanouts=[40, 20])])
def test_sim_graphsage_wide_rows_gpu_equals_cpu(cp, kw):
    """Rows of more picks than the short-row sorts take (``kernels.common``:
    32; longer rows are heap-sorted) and of fewer, with their values: the
    GPU's blocks are the CPU's."""
    from sampling import GraphSAGE
    A, W = _graph(n=60, m=6000, seed=4)
    G = W if kw.get("weighted") else A
    assert int(np.diff(A.indptr).max()) > 40 > SHORT_SORT
    seeds = _seeds(A.nrows, k=2, b=6)
    want = GraphSAGE(G, **kw).sample(seeds, seed=5)
    got = GraphSAGE(G.to("cuda"), **kw).sample([cp.asarray(s) for s in seeds], seed=5)
    assert max(int(np.diff(_host(b.adj.indptr)).max()) for b in got[0].blocks) > SHORT_SORT
    assert_same_minibatches(got, want)


def test_sim_graphsage_one_minibatch_equals_its_bulk(cp):
    from sampling import GraphSAGE
    A, _ = _graph()
    seeds = [cp.asarray(s) for s in _seeds(A.nrows, k=4)]
    s = GraphSAGE(A.to("cuda"), [3, 2])
    bulk = s.sample(seeds, seed=9)
    for i in (0, 3):
        alone, = s.sample([seeds[i]], seed=9, batch_ids=[i])
        assert_same_minibatches([alone], [bulk[i]])


@pytest.mark.parametrize("order", ["group", "vertex"])
@pytest.mark.parametrize("table, exact", [("hash", False), ("dense", False), ("dense", True),
                                          ("hash", True)])
def test_sim_hop_tables_and_exact_sizes(cp, table, exact, order, monkeypatch):
    """Both occurrence tables in both slot orders, and the exact sizing taken
    when the bounds do not fit."""
    import spla
    from kernels import opcount
    monkeypatch.setattr("kernels.cuda.hop_table.TABLE_ORDER", order)
    A, W = _graph(seed=4)
    seeds = _seeds(A.nrows, k=2, b=6, seed=5)
    ks = [3, 2, 2]
    want = spla.sample_hops(W, np.concatenate(seeds), [0, 6, 12], ks, seed=1,
                            streams=[4, 5, 6], replace=True)
    Wg = W.to("cuda")
    spla.sample_hops(Wg, cp.asarray(seeds[0]), [0, 6], [1], seed=0, streams=[0])  # prefixes
    import kernels.cuda.hops as hops
    hops_call = hops.launch_hops

    def forced(*args, **kw):
        return hops_call(*args, **{**kw, "table": table, "budget": 0 if exact else None,
                                   "growth": None})

    hops.launch_hops = forced
    try:
        with opcount.counting() as tally:
            got = spla.sample_hops(Wg, cp.asarray(np.concatenate(seeds)),
                                   [0, 6, 12], ks, seed=1, streams=[4, 5, 6], replace=True,
                                   check=False)
    finally:
        hops.launch_hops = hops_call
    # Exact sizing reads each hop's frontier size but the last's, then the sizes.
    assert tally.reads == (len(ks) if exact else 1)
    for (gb, gd, gdp, gs, gsp), (wb, wd, wdp, ws, wsp) in zip(got, want):
        assert gdp.tolist() == wdp.tolist() and gsp.tolist() == wsp.tolist()
        assert np.array_equal(_host(gd), wd) and np.array_equal(_host(gs), ws)
        for x, y in zip(gb, wb):
            assert x.to("cpu").isequal(y)


def _hop_bulks(A, Ag, cp, bulks, ks=(3, 2, 2)):
    """``bulks`` bulks of three minibatches (other seeds each), on the CPU and on
    ``Ag`` (A on the 'GPU'), one after another: (cpu blocks, gpu blocks, fills).
    ``fills`` counts the dense tables the GPU's bulks allocated."""
    import spla
    import kernels.cuda.hop_table as hop_table
    fills = []
    made = hop_table.Table.__init__

    def counted(self, keys, tags, *rest):
        if keys.size == 0:  # dense
            fills.append(tags.size)
        made(self, keys, tags, *rest)

    hop_table.Table.__init__ = counted
    try:
        got, want = [], []
        for b in range(bulks):
            seeds = _seeds(A.nrows, k=3, b=5, seed=20 + b)
            nodes, ptr = np.concatenate(seeds), [0, 5, 10, 15]
            streams = [3 * b, 3 * b + 1, 3 * b + 2]
            want.append(spla.sample_hops(A, nodes, ptr, list(ks), seed=4, streams=streams))
            got.append(spla.sample_hops(Ag, cp.asarray(nodes), ptr, list(ks), seed=4,
                                        streams=streams))
    finally:
        hop_table.Table.__init__ = made
    return want, got, fills


def _assert_same_hops(got, want):
    for g_bulk, w_bulk in zip(got, want):
        for (gb, gd, gdp, gs, gsp), (wb, wd, wdp, ws, wsp) in zip(g_bulk, w_bulk):
            assert gdp.tolist() == wdp.tolist() and gsp.tolist() == wsp.tolist()
            assert np.array_equal(_host(gd), wd) and np.array_equal(_host(gs), ws)
            assert all(x.to("cpu").isequal(y) for x, y in zip(gb, wb))


@pytest.mark.parametrize("order", ["group", "vertex", "both"])
def test_sim_later_bulks_reuse_the_occurrence_table(cp, order, monkeypatch):
    """A graph keeps its dense occurrence table between bulks: later bulks
    neither allocate nor clear one, carry on with smaller stamps, and give
    the CPU's blocks (an entry a bulk left behind never counts in the next),
    whichever slot order each bulk takes."""
    import kernels.cuda.hop_table as hop_table
    A, _ = _graph(seed=12)
    Ag = A.to("cuda")
    if order == "both":  # the order changes between bulks on the same table
        orders = iter(["group", "vertex"] * 3)
        taken = hop_table.table_for

        def alternating(*args, **kw):
            monkeypatch.setattr(hop_table, "TABLE_ORDER", next(orders))
            return taken(*args, **kw)

        monkeypatch.setattr(hop_table, "table_for", alternating)
    else:
        monkeypatch.setattr(hop_table, "TABLE_ORDER", order)
    want, got, fills = _hop_bulks(A, Ag, cp, bulks=4)
    _assert_same_hops(got, want)
    assert len(fills) == 1                   # the first bulk's table only
    kept = Ag._cache["hop_scratch"]["occurrence_table"]
    assert kept.top == hop_table.STAMP_TOP - 4 * 3


def test_sim_a_kept_table_is_cleared_when_its_stamps_run_out(cp, monkeypatch):
    """With 7 stamps a table serves two bulks of three hops; the third bulk
    clears a new one.  Blocks equal the CPU's throughout."""
    import kernels.cuda.hop_table as hop_table
    monkeypatch.setattr(hop_table, "STAMP_TOP", 6)
    A, _ = _graph(seed=13)
    want, got, fills = _hop_bulks(A, A.to("cuda"), cp, bulks=5)
    _assert_same_hops(got, want)
    assert len(fills) == 3                   # bulks 1, 3 and 5


def test_sim_no_table_is_kept_past_its_share_of_the_device(cp, monkeypatch):
    """A dense table over ``KEEP_SHARE`` of the device's memory (or of the cap on
    cupy's memory pool) is dropped after its bulk (each bulk clears its own),
    as is every hash table."""
    import kernels.cuda.hop_table as hop_table
    A, _ = _graph(seed=14)
    monkeypatch.setattr(hop_table, "KEEP_SHARE", 1e-12)
    _, _, fills = _hop_bulks(A, A.to("cuda"), cp, bulks=2)
    assert len(fills) == 2
    # A cap on cupy's pool (``placement.cap_device_memory``) is the memory.
    import fake_cupy
    monkeypatch.setattr(hop_table, "KEEP_SHARE", 1 / 16)
    monkeypatch.setattr(fake_cupy._Pool, "get_limit", lambda self: 1000, raising=False)
    _, _, fills = _hop_bulks(A, A.to("cuda"), cp, bulks=2)
    assert len(fills) == 2
    monkeypatch.setattr(fake_cupy._Pool, "get_limit", lambda self: 1 << 30)
    _, _, fills = _hop_bulks(A, A.to("cuda"), cp, bulks=2)
    assert len(fills) == 1
    monkeypatch.setattr(hop_table, "KEEP_SHARE", 1 / 16)
    monkeypatch.setattr(hop_table, "DENSE_SLOTS", 0)
    Ag = A.to("cuda")
    want, got, fills = _hop_bulks(A, Ag, cp, bulks=2)
    _assert_same_hops(got, want)
    assert fills == [] and "occurrence_table" not in Ag._cache["hop_scratch"]


def test_sim_fused_hops_keep_their_budget(cp):
    """Counted by the stand-in: per hop at most 6 launches, per bulk one read."""
    import fake_cupy
    import spla
    from kernels import opcount
    from sampling import GraphSAGE
    A, _ = _graph(seed=6)
    seeds = [cp.asarray(s) for s in _seeds(A.nrows, k=4)]
    fanouts = [3, 2, 2]
    s = GraphSAGE(A.to("cuda"), fanouts)
    s.sample(seeds, seed=2)          # the graph's one-off work (degrees) is done
    fake_cupy.reset()
    with opcount.counting() as tally:
        mbs = s.sample(seeds, seed=2, epoch=1)
    reads = fake_cupy.STATS["reads"]
    assert reads <= READS_PER_BULK, fake_cupy.STATS
    assert tally.reads == reads      # the library's counter sees them all
    # The hops alone, seeds trusted (as the samplers call them).
    nodes = cp.concatenate(seeds)
    ptr = np.cumsum([0] + [x.size for x in seeds])
    Ag = A.to("cuda")
    counted = []
    for _ in range(2):
        fake_cupy.reset()
        with opcount.counting() as tally:
            spla.sample_hops(Ag, nodes, ptr, fanouts, seed=2, streams=[0, 1, 2], check=False)
        counted.append(fake_cupy.STATS["launches"])
        assert fake_cupy.STATS["reads"] == 1
        assert fake_cupy.STATS["uploads"] == 1   # group pointer and ids together
        assert tally.launches == counted[-1]
    # The first bulk fills the table, a later one finds it kept; then the hops.
    assert counted[0] <= 1 + LAUNCHES_PER_HOP * len(fanouts), fake_cupy.STATS
    assert counted[1] == counted[0] - 1
    assert len(mbs) == 4


@pytest.mark.parametrize("bad", ["negative", "too large", "repeated", "repeated late"])
@pytest.mark.parametrize("table", ["dense", "hash"])
def test_sim_bad_seeds_raise_as_on_the_cpu(cp, bad, table, monkeypatch):
    """The GPU's hops check the seeds as they go; a bad one raises the very
    error the CPU's check before sampling raises (same class, same message),
    from the sampler and from ``spla.sample_hops``."""
    import kernels.cuda.hop_table as hop_table
    import spla
    from sampling import GraphSAGE
    from spla.exceptions import SplaError
    monkeypatch.setattr(hop_table, "DENSE_SLOTS", 1 << 28 if table == "dense" else 0)
    A, _ = _graph(seed=4)
    n = A.nrows
    seeds = _seeds(n, k=3)
    g, pos = 1, 3
    if bad == "negative":
        seeds[g][pos] = -2
    elif bad == "too large":
        seeds[g][pos] = n + 5
    elif bad == "repeated":
        seeds[g][pos] = seeds[g][0]
    else:
        seeds[2][-1] = seeds[2][-2]

    def error(fn):
        with pytest.raises(SplaError) as info:
            fn()
        return type(info.value), str(info.value)

    for make in (lambda G: GraphSAGE(G, [3, 2]).sample,):
        want = error(lambda: make(A)(seeds, seed=1))
        got = error(lambda: make(A.to("cuda"))([cp.asarray(x) for x in seeds], seed=1))
        assert got == want
    nodes = np.concatenate(seeds)
    ptr = np.cumsum([0] + [x.size for x in seeds])
    want = error(lambda: spla.sample_hops(A, nodes, ptr, [3, 2], seed=1, streams=[0, 1]))
    got = error(lambda: spla.sample_hops(A.to("cuda"), cp.asarray(nodes), ptr, [3, 2], seed=1,
                                         streams=[0, 1]))
    assert got == want


@pytest.mark.parametrize("table", ["dense", "hash"])
@pytest.mark.parametrize("growth", ["measured", "outgrown"])
def test_sim_fused_hops_sized_by_growth(cp, table, growth, monkeypatch):
    """Arrays sized by an earlier bulk's growth give the worst-case sizing's
    blocks; a growth the bulk outgrows (the frontier, the next frontier or
    the hash table too small) is caught on the device and the bulk runs
    again at worst-case sizes: one more read, the same blocks."""
    import fake_cupy
    import kernels.cuda.hops as hops
    from kernels import opcount
    A, W = _graph(seed=8)
    seeds = _seeds(A.nrows, k=3, b=5, seed=9)
    nodes = cp.asarray(np.concatenate(seeds))
    ptr = np.array([0, 5, 10, 15])
    Wg = W.to("cuda")
    import spla
    spla.sample_hops(Wg, nodes[:5], ptr[:2], [1], seed=0, streams=[0])  # prefixes
    args = (Wg.indptr, Wg.indices, Wg.values, True) + spla.sample.draw_arrays(Wg, True)[1:2] \
        + spla.sample.draw_arrays(Wg, True)[3:] + (nodes, ptr, np.arange(3), [3, 2, 2], 5,
                                                   [1, 2, 3], False, 1, np.dtype(np.float32),
                                                   np.dtype(np.int32))
    _, measured = hops.sample_hops(*args, table=table, growth=None)
    hint = measured if growth == "measured" else [0.01] * 3
    monkeypatch.setattr(hops, "SLACK", 0)  # tiny inputs: no rows of slack
    fake_cupy.reset()
    with opcount.counting() as tally:
        got, again = hops.sample_hops(*args, table=table, growth=hint)
    assert again == measured
    assert tally.reads == (1 if growth == "measured" else 2)
    assert fake_cupy.STATS["reads"] == tally.reads
    # The blocks (the arrays' true ranges) are the CPU composition's.
    cpu = spla.sample_hops(W, np.concatenate(seeds), ptr, [3, 2, 2], seed=5, streams=[1, 2, 3])
    for h, (bptr, bidx, bval, dst, dp, src, sp, ep) in enumerate(got):
        blocks, cdst, cdp, csrc, csp = cpu[h]
        assert dp.tolist() == cdp.tolist() and sp.tolist() == csp.tolist()
        assert np.array_equal(_host(src), csrc) and np.array_equal(_host(dst), cdst)
        for g, b in enumerate(blocks):
            e0, e1 = int(ep[g]), int(ep[g + 1])
            r0, r1 = int(dp[g]), int(dp[g + 1])
            assert np.array_equal(_host(bidx)[e0:e1], b.indices)
            assert np.array_equal(_host(bptr)[r0 + g:r1 + g + 1], b.indptr)
            assert np.array_equal(_host(bval)[e0:e1], b.values)


def test_sim_sample_hops_remembers_the_growth(cp):
    """spla.sample_hops keeps each bulk's growth on the matrix for the next one."""
    import spla
    A, _ = _graph(seed=10)
    Ag = A.to("cuda")
    seeds = _seeds(A.nrows, k=2, b=4, seed=11)
    nodes, ptr = cp.asarray(np.concatenate(seeds)), [0, 4, 8]
    first = spla.sample_hops(Ag, nodes, ptr, [2, 2], seed=1, streams=[0, 1])
    kept = [v for k, v in Ag._cache.items() if k[0] == "hop_growth"]
    assert len(kept) == 1 and len(kept[0]) == 2 and all(r >= 1 for r in kept[0])
    second = spla.sample_hops(Ag, nodes, ptr, [2, 2], seed=1, streams=[0, 1])
    for (b1, *_), (b2, *_) in zip(first, second):
        assert all(x.to("cpu").isequal(y.to("cpu")) for x, y in zip(b1, b2))


#: Blocking reads of one LADIES / FastGCN bulk of two layers, whatever its size
#: (the operators' sizes; counted by the stand-in, which counts the reads
#: hidden in data-sized operations such as boolean indexing too).  A ceiling
#: that only comes down: each read drains the GPU's queue.  Minibatches
#: given on the host (as ``NodeLoader`` gives them) cost less: no check read
#: on the device, and LADIES counts its first layer's sums on the host.
LAYERWISE_READS = {"ladies": 8, "fastgcn": 5}
LAYERWISE_READS_HOST = {"ladies": 6, "fastgcn": 4}
#: Device operations of the same bulk of one minibatch (kernels, cupy calls),
#: and the most each further minibatch may add (one block per layer cut from
#: its rows: a subtraction each).  Ceilings that only come down: each costs
#: 10-13 us of host time on a GPU (``benchmarks/results/gpu_h200.md``).
LAYERWISE_LAUNCHES = {"ladies": 72, "fastgcn": 48}
LAUNCHES_PER_MINIBATCH = 4
#: Host-to-device copies of the same bulk, minibatches given on the host:
#: each is a staging buffer and a queued copy of host time.  A ceiling that
#: only comes down.
LAYERWISE_UPLOADS = {"ladies": 20, "fastgcn": 14}


@pytest.mark.parametrize("sampler", ["ladies", "fastgcn"])
def test_sim_layerwise_reads_per_bulk(cp, sampler, monkeypatch):
    """A layer-wise bulk's blocking reads stay under their ceiling and do not
    grow with the number of minibatches in it; its device operations stay
    under theirs and grow by a few per minibatch."""
    import fake_cupy
    import kernels.cuda._util as cuda_util
    from sampling import FastGCN, LADIES
    # A GPU's chunks of expanded rows (2**26 items): the simulator's tiny
    # ones would add a read per chunk, a count that grows with the input.
    monkeypatch.setattr(cuda_util, "CHUNK_ITEMS", 1 << 26)
    A, _ = _graph(seed=7)
    cls = LADIES if sampler == "ladies" else FastGCN
    host = _seeds(A.nrows, k=2)
    seeds = [cp.asarray(s) for s in host]
    s = cls(A.to("cuda"), [6, 5])
    s.sample(seeds[:1], seed=3)            # the graph's one-off work is done
    reads, launches = [], []
    for k in (1, 2):
        fake_cupy.reset()
        s.sample(seeds[:k], seed=3, epoch=1)
        reads.append(fake_cupy.STATS["reads"])
        launches.append(fake_cupy.STATS["launches"])
    assert reads[0] == reads[1], reads
    assert reads[0] <= LAYERWISE_READS[sampler], reads
    assert launches[0] <= LAYERWISE_LAUNCHES[sampler], launches
    assert launches[1] - launches[0] <= LAUNCHES_PER_MINIBATCH, launches
    fake_cupy.reset()
    s.sample(host, seed=3, epoch=1)
    assert fake_cupy.STATS["reads"] <= LAYERWISE_READS_HOST[sampler], fake_cupy.STATS
    assert fake_cupy.STATS["uploads"] <= LAYERWISE_UPLOADS[sampler], fake_cupy.STATS


@pytest.mark.parametrize("sampler", ["ladies", "fastgcn"])
def test_sim_layerwise_gpu_equals_cpu(cp, sampler):
    from sampling import FastGCN, LADIES
    A, _ = _graph(seed=7)
    cls = LADIES if sampler == "ladies" else FastGCN
    seeds = _seeds(A.nrows)
    want = cls(A, [6, 5]).sample(seeds, seed=3)
    gpu = cls(A.to("cuda"), [6, 5])
    assert_same_minibatches(gpu.sample([cp.asarray(s) for s in seeds], seed=3), want)
    # Given on the host (the destinations counted there, layer by layer).
    assert_same_minibatches(gpu.sample(seeds, seed=3), want)


def test_sim_graph_in_mapped_host_memory(cp):
    """``to('cuda', memory='host')``: the column indices and values sit in
    (stand-in) pinned host memory, copied there byte for byte, the row pointer
    in device memory, and the graph samples as the device copy does."""
    import fake_cupy
    from sampling import GraphSAGE
    _, W = _graph(seed=8)
    before = fake_cupy.STATS.get("mapped", 0)
    H = W.to("cuda", memory="host")
    assert fake_cupy.STATS.get("mapped", 0) - before >= W.indices.nbytes + W.values.nbytes
    assert any(H.indices.ctypes.data == ptr for ptr in fake_cupy._HOST)
    assert any(H.values.ctypes.data == ptr for ptr in fake_cupy._HOST)
    assert not any(H.indptr.ctypes.data == ptr for ptr in fake_cupy._HOST)
    assert isinstance(H.indptr, cp.ndarray)
    assert H.to("cpu").isequal(W)
    seeds = _seeds(W.nrows)
    want = GraphSAGE(W, [3, 2], weighted=True).sample(seeds, seed=5)
    got = GraphSAGE(H, [3, 2], weighted=True).sample([cp.asarray(s) for s in seeds], seed=5)
    assert_same_minibatches(got, want)


@pytest.mark.parametrize("mode", ["uniform", "replace", "weighted"])
def test_sim_hetero_graphsage_gpu_equals_cpu(cp, mode):
    """HeteroGraphSAGE on relations in device memory gives the CPU's minibatches
    (the relation hops' composition on the GPU, the fused kernel on the CPU)."""
    from sampling import HeteroGraph, HeteroGraphSAGE
    from sampling.datasets.mag import mag_dataset
    H = mag_dataset(5).to_undirected()
    rng = np.random.default_rng(3)
    rels = {r: (A.with_values(rng.random(A.nnz).astype(np.float32) + 0.1)
                if mode == "weighted" else A) for r, A in H.relations.items()}
    kw = dict(replace=mode == "replace", weighted=mode == "weighted")
    seeds = [rng.choice(H.split("train", "paper"), 5, replace=False) for _ in range(2)]
    want = HeteroGraphSAGE(HeteroGraph(H.num_nodes, rels), [3, 2], **kw).sample(
        seeds, node_type="paper", seed=3)
    dev = HeteroGraph(H.num_nodes, {r: A.to("cuda") for r, A in rels.items()})
    got = HeteroGraphSAGE(dev, [3, 2], **kw).sample([cp.asarray(s) for s in seeds],
                                                     node_type="paper", seed=3)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for lg, lw in zip(g.layers, w.layers):
            assert sorted(lg.blocks) == sorted(lw.blocks)
            for r, bw in lw.blocks.items():
                bg = lg.blocks[r]
                assert bg.adj.device == "cuda"
                assert bg.adj.to("cpu").isequal(bw.adj)
                assert np.array_equal(_host(bg.dst_nodes), _host(bw.dst_nodes))
                assert np.array_equal(_host(bg.src_nodes), _host(bw.src_nodes))


def test_sim_hetero_relations_on_two_devices_are_refused(cp):
    from sampling import HeteroGraph, HeteroGraphSAGE
    from sampling.datasets.mag import mag_dataset
    from spla.exceptions import InvalidValue
    H = mag_dataset(4).to_undirected()
    rels = dict(H.relations)
    first = next(iter(rels))
    rels[first] = rels[first].to("cuda")
    with pytest.raises(InvalidValue, match="relations on one device"):
        HeteroGraphSAGE(HeteroGraph(H.num_nodes, rels), [2])


def test_sim_block_operator_and_edge_index_read_nothing(cp):
    """A device block's mean weights (``BlockOperator`` on a structural block)
    and its edge index: the CPU's values, bit for bit, without a blocking read
    (each would drain the GPU's queue in every training step)."""
    import fake_cupy
    pytest.importorskip("torch")
    from sampling import GraphSAGE
    from sampling.models.layers import BlockOperator
    A, _ = _graph(seed=7)
    seeds = _seeds(A.nrows, k=1)
    want, = GraphSAGE(A, [3, 2]).sample(seeds, seed=1)
    got, = GraphSAGE(A.to("cuda"), [3, 2]).sample([cp.asarray(s) for s in seeds], seed=1)
    for bg, bw in zip(got.blocks, want.blocks):
        assert bg.adj.is_structural and bg.adj.nnz
        fake_cupy.reset()
        op = BlockOperator(bg)
        edges = bg.edge_index()
        assert fake_cupy.STATS["reads"] == 0, fake_cupy.STATS
        assert np.array_equal(_host(op.matrix.values), BlockOperator(bw).matrix.values)
        assert op.matrix.values.dtype == np.float32
        assert np.array_equal(_host(edges), bw.edge_index())

