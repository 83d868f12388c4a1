"""``spla.layer_ops.importance_layer``: the fused CPU kernel equals the
composition of the operators it stands for, bit for bit, on generated
inputs; both equal a dense numpy reference of the layer; its errors; and
LADIES / FastGCN sample the same minibatches through it as through the
composition.  Its CUDA twin under the simulator (``test_sim_*``: run in the
simulator child of ``tests/kernels/test_cuda_kernels.py``, where this file
is in ``SIM_FILES``) gives the CPU's layers, bit for bit, in two reads."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spla
from layer_reference import composed_layer
from spla.layer_ops import importance_layer
from sim_marks import sim
from strategies import assert_same_blocks


#: Values that test the arithmetic's corners: signed zeros, negatives (a row
#: may sum to 0, a weight be negative), infinities and NaN.
ODD = np.array([0.0, -0.0, -1.0, -2.5, np.inf, -np.inf, np.nan])


def _odd(rng, values, share):
    """``values`` with about ``share`` of them replaced by corner cases."""
    hit = rng.random(values.size) < share
    values[hit] = rng.choice(ODD, int(hit.sum())).astype(values.dtype)
    return values


def _case(seed, n, groups, per_group, draws, a_dtype, w_dtype, dense_p, odd=0.0, density=None):
    """A graph A, draws S (a row per group), destinations, and W or p;
    ``odd``: the share of A's and the weights' values made corner cases;
    ``density``: A's (default: about 4 entries a row)."""
    rng = np.random.default_rng(seed)
    density = min(1.0, 4.0 / n) if density is None else density
    M = sp.random(n, n, density=density, format="csr", random_state=rng, dtype=np.float64)
    M.data = _odd(rng, (M.data * 10.0 ** rng.integers(-3, 3, M.data.size)).astype(a_dtype), odd)
    A = spla.Matrix.from_scipy(M)
    dst = np.concatenate([rng.choice(n, min(per_group, n), replace=False)
                          for _ in range(groups)]).astype(np.int64)
    ptr = np.arange(groups + 1, dtype=np.int64) * min(per_group, n)
    rows = [np.sort(rng.choice(n, min(draws, n), replace=False)) for _ in range(groups)]
    S = spla.Matrix.from_coo(np.repeat(np.arange(groups), [r.size for r in rows]),
                             np.concatenate(rows), None, (groups, n))
    if dense_p:
        p = _odd(rng, rng.random(n).astype(w_dtype), odd)
        p[rng.random(n) < 0.2] = 0          # columns of probability 0 get scale 0
        return A, S, dst, ptr, dict(p=p)
    Wd = sp.random(groups + 1, n, density=0.5, format="csr", random_state=rng,
                   dtype=np.float64)
    Wd.data = _odd(rng, Wd.data.astype(w_dtype), odd)
    w_rows = rng.integers(0, groups + 1, groups)
    return A, S, dst, ptr, dict(W=spla.Matrix.from_scipy(Wd), w_rows=w_rows)


def _same(x, y):
    (a1, s1, p1), (a2, s2, p2) = x, y
    assert np.array_equal(s1, s2) and np.array_equal(p1, p2)
    assert a1.shape == a2.shape and a1.dtype == a2.dtype
    assert np.array_equal(a1.indptr, a2.indptr)
    assert np.array_equal(a1.indices, a2.indices)
    assert np.asarray(a1.values).tobytes() == np.asarray(a2.values).tobytes()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 31), st.integers(1, 60), st.integers(1, 5), st.integers(1, 20),
       st.integers(0, 30), st.sampled_from([np.float32, np.float64]),
       st.sampled_from([np.float32, np.float64]), st.booleans(), st.integers(1, 40),
       st.sampled_from([0.0, 0.0, 0.1, 0.5]))
def test_fused_equals_the_composition(seed, n, groups, per_group, draws, a_dtype, w_dtype,
                                      dense_p, s, odd):
    A, S, dst, ptr, probs = _case(seed, n, groups, per_group, draws, a_dtype, w_dtype, dense_p,
                                  odd)
    fused = importance_layer(A, S, dst, ptr, s, **probs)
    W = probs.get("W")
    with np.errstate(all="ignore"):    # numpy's warnings on inf and NaN: the values are the test
        composed = composed_layer(A, S, dst, ptr, s, W, probs.get("w_rows"), probs.get("p"))
    _same(fused, composed)


@pytest.mark.parametrize("dense_p", [False, True])
def test_layer_equals_a_dense_reference(dense_p):
    """Against numpy on dense arrays: the columns, the weights 1 / (s p),
    the normalised rows."""
    n, s = 30, 7
    A, S, dst, ptr, probs = _case(5, n, 3, 6, 9, np.float64, np.float64, dense_p)
    adj, src, src_ptr = importance_layer(A, S, dst, ptr, s, **probs)
    Ad, Sd = A.to_dense(), S.to_dense()
    for g in range(3):
        d = dst[ptr[g]:ptr[g + 1]]
        drawn = [int(j) for j in np.flatnonzero(Sd[g]) if j not in set(d.tolist())]
        cols = np.concatenate([d, np.array(drawn, np.int64)])
        assert src[src_ptr[g]:src_ptr[g + 1]].tolist() == cols.tolist()
        if dense_p:
            p = probs["p"][cols]
        else:
            w = probs["W"].to_dense()[probs["w_rows"][g]]
            p = w[cols] / (w.sum() if w.sum() != 0 else 1.0)
        c = np.where(p > 0, 1.0 / (s * np.where(p > 0, p, 1.0)), 0.0)
        block = Ad[np.ix_(d, cols)] * c
        sums = block.sum(axis=1, keepdims=True)
        want = np.divide(block, sums, out=block.copy(), where=sums != 0)
        got = adj.to_dense()[ptr[g]:ptr[g + 1], src_ptr[g]:src_ptr[g + 1]]
        assert np.allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("n, groups, per_group, draws", [
    (3000, 12, 400, 300),    # a bulk: groups shared out, columns in tag arrays
    (3000, 1, 2500, 300),    # one large group: its rows split among the workers
    (60000, 3, 5, 4),        # small groups of a large graph: hash tables
    (60000, 1, 30000, 50),   # one group, rows split, hash tables or tags by work
])
def test_large_layers_equal_the_composition(n, groups, per_group, draws):
    # Sizes past kernels.parallel's threshold run the parallel twin.
    for dense_p in (False, True):
        A, S, dst, ptr, probs = _case(11, n, groups, per_group, draws, np.float32, np.float32,
                                      dense_p)
        _same(importance_layer(A, S, dst, ptr, 300, **probs),
              composed_layer(A, S, dst, ptr, 300, probs.get("W"), probs.get("w_rows"),
                             probs.get("p")))


def test_errors():
    A, S, dst, ptr, probs = _case(1, 10, 2, 3, 4, np.float32, np.float32, True)
    with pytest.raises(spla.InvalidValue, match="importance_layer: argument 'W'"):
        importance_layer(A, S, dst, ptr, 2)
    with pytest.raises(spla.InvalidValue, match="importance_layer: argument 'W'"):
        importance_layer(A, S, dst, ptr, 2, p=probs["p"], W=A, w_rows=[0, 0])
    with pytest.raises(spla.DimensionMismatch, match="argument 'p'"):
        importance_layer(A, S, dst, ptr, 2, p=np.ones(3))
    with pytest.raises(spla.DTypeError, match="argument 'p'"):
        importance_layer(A, S, dst, ptr, 2, p=np.ones(10, np.float16))
    with pytest.raises(spla.DimensionMismatch, match="argument 'W'"):
        importance_layer(A, S, dst, ptr, 2, W="W", w_rows=[0, 0])
    # A list of probabilities is an array of them.
    _same(importance_layer(A, S, dst, ptr, 2, p=probs["p"].tolist()),
          importance_layer(A, S, dst, ptr, 2, p=probs["p"].astype(np.float64)))
    with pytest.raises(spla.DimensionMismatch, match="argument 'S'"):
        importance_layer(A, spla.Matrix.from_dense(np.ones((3, 10))), dst, ptr, 2, **probs)
    with pytest.raises(spla.IndexOutOfRange, match="argument 'dst'"):
        importance_layer(A, S, np.array([0, 1, 99, 2, 3, 4]), ptr, 2, **probs)
    with pytest.raises(spla.InvalidValue, match="argument 'dst'"):
        importance_layer(A, S, np.array([0, 0, 1, 2, 3, 4]), ptr, 2, **probs)
    with pytest.raises(spla.InvalidCSR, match="argument 'dst_ptr'"):
        importance_layer(A, S, dst, [0, 4, 5], 2, **probs)
    with pytest.raises(spla.InvalidValue, match="argument 's'"):
        importance_layer(A, S, dst, ptr, 0, **probs)
    with pytest.raises(spla.InvalidValue, match="argument 'w_rows'"):
        importance_layer(A, S, dst, ptr, 2, W=A, w_rows=[0, 10])
    with pytest.raises(spla.DTypeError, match="argument 'A'"):
        importance_layer(A.astype(np.int64), S, dst, ptr, 2, **probs)
    with pytest.raises(spla.DTypeError, match="argument 'S'"):
        importance_layer(A, "S", dst, ptr, 2, **probs)


def test_kernel_limit_is_an_invalid_value(monkeypatch):
    """More destinations and draws than 32-bit local ids hold: a clear error
    (the limit lowered here; no workload nears 2**32)."""
    import kernels.cpu.layer_blocks as blocks
    A, S, dst, ptr, probs = _case(1, 10, 2, 3, 4, np.float32, np.float32, True)
    real = blocks.importance_layer

    def limited(*args, **kwargs):
        from kernels.common import KernelLimitError
        raise KernelLimitError("importance_layer", "S", "fewer than 8 columns in all", "10")

    monkeypatch.setattr(blocks, "importance_layer", limited)
    with pytest.raises(spla.InvalidValue, match="importance_layer: argument 'S'"):
        importance_layer(A, S, dst, ptr, 2, **probs)
    monkeypatch.setattr(blocks, "importance_layer", real)
    importance_layer(A, S, dst, ptr, 2, **probs)


def test_integer_weights_are_divided_in_float64():
    A, S, dst, ptr, _ = _case(2, 12, 2, 3, 5, np.float32, np.float32, True)
    W = spla.Matrix.from_dense(np.arange(24).reshape(2, 12) % 5)
    got = importance_layer(A, S, dst, ptr, 3, W=W, w_rows=[1, 0])
    want = composed_layer(A, S, dst, ptr, 3, W.astype(np.float64), np.array([1, 0]), None)
    _same(got, want)


@pytest.mark.parametrize("sampler", ["LADIES", "FastGCN"])
@pytest.mark.parametrize("normalize", [True, False])
def test_samplers_draw_the_composition_s_minibatches(monkeypatch, sampler, normalize):
    """The samplers' layers through the fused operator equal those of the
    composition, entry for entry (the composition put in its place)."""
    import sampling
    import sampling.samplers.layerwise as layerwise
    from spla.generators import rmat
    A = rmat(9, 8, seed=2)
    if not normalize:   # a weighted graph, sampled from its own values
        rng = np.random.default_rng(1)
        A = A.with_values(rng.random(A.nnz).astype(np.float32) + np.float32(0.01))
    rng = np.random.default_rng(3)
    batches = [rng.choice(A.nrows, 15, replace=False) for _ in range(3)]
    cls = getattr(sampling, sampler)
    fused = cls(A, [40, 30], normalize=normalize).sample(batches, seed=9)

    def composed(A, S, dst, dst_ptr, s, *, W=None, w_rows=None, p=None, check=True,
                 host_src=False):
        out = composed_layer(A, S, spla.backend.xp_of(A.device).asarray(dst),
                             np.asarray(dst_ptr), s, W,
                             None if w_rows is None else np.asarray(w_rows), p)
        return (*out, None) if host_src else out   # no host copy: the sampler's other path

    monkeypatch.setattr(layerwise, "importance_layer", composed)
    assert_same_blocks(fused, cls(A, [40, 30], normalize=normalize).sample(batches, seed=9))


@pytest.fixture(scope="module")
def cp():
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


def _on_device(cp, A, S, dst, probs, host_ptr=False):
    """The arguments on the device; with ``host_ptr`` the draws keep a host
    copy of their row pointer (as ``sample_rows`` of a few rows leaves
    them), which sizes the block's tables before the columns are counted."""
    moved = {k: (v.to("cuda") if isinstance(v, spla.Matrix) else
                 cp.asarray(v) if k == "p" else v) for k, v in probs.items()}
    dS = S.to("cuda")
    if host_ptr:
        dS = spla.Matrix.from_csr(dS.indptr, dS.indices, dS.values, dS.shape,
                                  host_indptr=np.asarray(S.indptr))
    return A.to("cuda"), dS, cp.asarray(dst), moved


def _same_on_host(got, want):
    adj, src, src_ptr = got
    assert adj.device == "cuda" and isinstance(src_ptr, np.ndarray)
    _same((adj.to("cpu"), np.asarray(spla.backend.to_host(src)), src_ptr), want)


@sim
# The simulator runs the kernels' arithmetic in numpy, which warns on the
# corner cases (in its threads, out of np.errstate's reach).
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 31), st.integers(1, 40), st.integers(1, 4), st.integers(1, 12),
       st.integers(0, 20), st.sampled_from([np.float32, np.float64]),
       st.sampled_from([np.float32, np.float64]), st.booleans(), st.integers(1, 40),
       st.sampled_from([0.0, 0.2]), st.sampled_from([None, 0.6]), st.booleans())
def test_sim_gpu_layer_equals_the_cpu(cp, seed, n, groups, per_group, draws, a_dtype, w_dtype,
                                      dense_p, s, odd, density, host_ptr):
    """Dense graphs give rows longer than a thread takes (a block's, in the
    extraction, the weights' totals and the normalisation)."""
    A, S, dst, ptr, probs = _case(seed, n, groups, per_group, draws, a_dtype, w_dtype, dense_p,
                                  odd, density)
    want = importance_layer(A, S, dst, ptr, s, **probs)
    dA, dS, ddst, dprobs = _on_device(cp, A, S, dst, probs, host_ptr)
    _same_on_host(importance_layer(dA, dS, ddst, ptr, s, **dprobs), want)


@sim
@pytest.mark.parametrize("host_ptr", [False, True])
@pytest.mark.parametrize("dense_p", [False, True])
def test_sim_gpu_layer_reads_twice_in_a_few_launches(cp, dense_p, host_ptr):
    """Two blocking reads (the columns' pointer, the block's), one when the
    draws' row pointer is on the host too, and a third fewer device
    operations than the composition or better; a dense graph, so that long
    rows take their blocks too."""
    import fake_cupy
    A, S, dst, ptr, probs = _case(3, 60, 3, 12, 30, np.float32, np.float32, dense_p,
                                  density=0.7)
    want = importance_layer(A, S, dst, ptr, 5, **probs)
    dA, dS, ddst, dprobs = _on_device(cp, A, S, dst, probs, host_ptr)
    importance_layer(dA, dS, ddst, ptr, 5, check=False, **dprobs)   # compiled
    fake_cupy.reset()
    got = importance_layer(dA, dS, ddst, ptr, 5, check=False, **dprobs)
    stats = dict(fake_cupy.STATS)
    _same_on_host(got, want)
    assert stats["reads"] == (1 if host_ptr else 2), stats
    assert stats["launches"] <= LAYER_LAUNCHES[dense_p], stats
    fake_cupy.reset()
    composed_layer(dA, dS, ddst, ptr, 5, dprobs.get("W"), probs.get("w_rows"),
                    dprobs.get("p"))
    assert fake_cupy.STATS["launches"] >= 1.5 * stats["launches"], (fake_cupy.STATS, stats)


@sim
def test_sim_gpu_layer_edge_cases(cp):
    """No groups; groups without destinations or draws; probabilities all 0."""
    A = spla.Matrix.from_dense(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]))
    p = np.array([0.5, 0.25, 0.25])
    none = spla.Matrix.from_coo(np.zeros(0, int), np.zeros(0, int), None, (0, 3))
    one = spla.Matrix.from_coo(np.array([1]), np.array([2]), None, (2, 3))
    no_dst = np.zeros(0, np.int64)
    for S, dst, ptr, probs in ((none, no_dst, [0], dict(p=p)),
                               (none, no_dst, [0], dict(W=A, w_rows=no_dst)),
                               (one, no_dst, [0, 0, 0], dict(p=p)),
                               (one, np.array([1]), [0, 0, 1], dict(W=A, w_rows=np.array([0, 2]))),
                               (one, np.array([1]), [0, 1, 1], dict(p=np.zeros(3)))):
        want = importance_layer(A, S, dst, ptr, 2, **probs)
        for host_ptr in (False, True):
            dA, dS, ddst, dprobs = _on_device(cp, A, S, dst, probs, host_ptr)
            _same_on_host(importance_layer(dA, dS, ddst, ptr, 2, **dprobs), want)


#: Device operations of one layer (with W, with p), counted by the stand-in:
#: ceilings that only come down.
LAYER_LAUNCHES = {False: 16, True: 14}


@pytest.mark.parametrize("dense_p", [False, True])
def test_gpu_layer_equals_the_cpu(backend, dense_p):
    """On a real GPU, with rows long enough for every block path (the
    block's rows, the weights' rows) and corner-case values."""
    if backend.name != "cupy":
        pytest.skip("the GPU case runs where cupy and a GPU are present")
    import cupy
    for a_dtype, seed in ((np.float32, 1), (np.float64, 2)):
        A, S, dst, ptr, probs = _case(seed, 3000, 3, 50, 2500, a_dtype, np.float32, dense_p,
                                      odd=0.05, density=0.5)
        want = importance_layer(A, S, dst, ptr, 512, **probs)
        moved = _on_device(cupy, A, S, dst, probs)
        _same_on_host(importance_layer(*moved[:3], ptr, 512, **moved[3]), want)
