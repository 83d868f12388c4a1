"""What the layer-wise samplers' trusted inputs skip: ``sample_rows(check=False)``
draws the checked call's picks without the weights' check (a blocking read
on a GPU), and host ``row_ids`` cost no read.  The ``test_sim_*`` tests run
in the simulator child of ``tests/kernels/test_cuda_kernels.py`` (this file
is in its ``SIM_FILES``)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
from spla import sample_rows

from sim_marks import sim


def _weights(rng, m, n):
    W = rng.random((m, n)) * (rng.random((m, n)) < 0.6)
    return spla.Matrix.from_dense(W.astype(np.float32))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 8), st.integers(1, 12), st.integers(1, 5), st.integers(0, 2 ** 32 - 1))
def test_unchecked_sampling_draws_the_checked_picks(m, n, k, seed):
    P = _weights(np.random.default_rng(seed), m, n)
    ids = np.arange(m, dtype=np.int64) * 7
    want = sample_rows(P, k, seed=seed, stream=3, row_ids=ids)
    got = sample_rows(P, k, seed=seed, stream=3, row_ids=ids, check=False)
    assert got.isequal(want)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 8), st.integers(1, 12), st.integers(1, 5), st.integers(0, 2 ** 32 - 1),
       st.booleans(), st.booleans())
def test_structure_only_sampling_draws_the_same_picks(m, n, k, seed, lazy, replace):
    """values=False: the structure of the valued call's picks (and its counts)."""
    rng = np.random.default_rng(seed)
    P = _weights(rng, m, n)
    if lazy:   # a row selection: the fused path
        P = spla.Matrix.from_coo(np.arange(m), rng.integers(0, m, m), shape=(m, m)) @ P
    want = sample_rows(P, k, seed=seed, replace=replace, return_counts=True)
    got = sample_rows(P, k, seed=seed, replace=replace, return_counts=True, values=False)
    assert got[0].values is None and got[0].isequal(want[0].structure())
    assert np.array_equal(got[1], want[1])


def test_the_check_is_on_by_default():
    P = spla.Matrix.from_dense(np.array([[1.0, -1.0]], np.float32))
    with pytest.raises(spla.InvalidValue, match="sample_rows: argument 'P'"):
        sample_rows(P, 1, seed=0)
    with pytest.raises(spla.InvalidValue, match="sample_rows: argument 'P'"):
        sample_rows(P.with_values(np.array([np.inf, 1.0], np.float32)), 1, seed=0)


@pytest.fixture(scope="module")
def cp():
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


@sim
def test_sim_unchecked_sampling_skips_the_weights_read(cp):
    """Host row ids and check=False: the sizes' read only, the CPU's picks."""
    import fake_cupy
    P = _weights(np.random.default_rng(4), 4, 9)
    ids = np.arange(4, dtype=np.int64) + 10
    want = sample_rows(P, 3, seed=5, row_ids=ids)
    G = P.to("cuda")
    reads = {}
    for check in (True, False):
        fake_cupy.reset()
        got = sample_rows(G, 3, seed=5, row_ids=ids, check=check)
        reads[check] = fake_cupy.STATS["reads"]
        assert got.to("cpu").isequal(want)
    assert reads == {True: 2, False: 1}, reads


@sim
def test_sim_blocks_of_an_extraction_cost_one_read(cp):
    """extract_blockwise's one read brings its row pointer to the host;
    split_blocks (also after normalize_scaled_rows, which keeps the pointer)
    cuts the blocks by it: the CPU's blocks, no second read."""
    import fake_cupy
    from spla import extract_blockwise, split_blocks
    from spla.layer_ops import normalize_scaled_rows
    rng = np.random.default_rng(6)
    A = _weights(rng, 10, 10)
    rows, rp = np.array([3, 1, 4, 1, 5, 9]), np.array([0, 2, 6])
    cols, cpt = np.array([2, 7, 1, 8, 2, 9, 0]), np.array([0, 3, 7])
    d = rng.random(7).astype(np.float32)
    want = extract_blockwise(A, rows, rp, cols, cpt)
    want_n = normalize_scaled_rows(want, d)
    G = A.to("cuda")
    fake_cupy.reset()
    M = extract_blockwise(G, cp.asarray(rows), rp, cp.asarray(cols), cpt, check=False)
    Mn = normalize_scaled_rows(M, cp.asarray(d))
    got = split_blocks(M, rp, cpt, check=False) + split_blocks(Mn, rp, cpt, check=False)
    assert fake_cupy.STATS["reads"] == 1, fake_cupy.STATS
    expected = (split_blocks(want, rp, cpt, check=False)
                + split_blocks(want_n, rp, cpt, check=False))
    for g, w in zip(got, expected):
        assert g.to("cpu").isequal(w)


@sim
@pytest.mark.parametrize("lazy", [False, True])
def test_sim_a_small_sample_keeps_its_row_pointer_on_the_host(cp, lazy, monkeypatch):
    """``sample_rows`` of a few rows brings its whole row pointer back in its
    one read and keeps it (the next layer-wise step then reads nothing for
    it); a sample of more rows than ``HOST_PTR_ROWS`` reads its size only.
    Either way the picks are the CPU's."""
    import fake_cupy
    from spla import sample as sample_module
    from spla.matrix import HOST_INDPTR
    rng = np.random.default_rng(8)
    W = _weights(rng, 7, 9)
    Q = spla.Matrix.from_coo(np.arange(4), np.array([6, 0, 3, 0]), shape=(4, 7))

    def draw(M):
        return sample_rows(Q.to(M.device) @ M if lazy else M, 3, seed=5, check=False)
    want = draw(W)
    G = W.to("cuda")
    draw(G)   # a weighted graph's prefix sums, computed once and kept
    reads = []
    for limit in (sample_module.HOST_PTR_ROWS, 3):
        monkeypatch.setattr(sample_module, "HOST_PTR_ROWS", limit)
        fake_cupy.reset()
        S = draw(G)
        reads.append(fake_cupy.STATS["reads"])
        assert S.to("cpu").isequal(want)
        host = S._cache.get(HOST_INDPTR)
        if limit >= S.nrows:
            assert host is not None
            assert np.array_equal(host, spla.backend.to_host(S.indptr))
        else:
            assert host is None
    # The same reads either way (lazy: the selection's row check too).
    assert reads == [1, 1] if not lazy else reads[0] == reads[1], reads
