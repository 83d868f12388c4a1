"""The algorithms of docs/graphblas.rst, run as written there, against
scipy.sparse.csgraph and plain numpy on random graphs."""

import itertools
import re

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

import spla
from graphblas_doc import DOC, doc_algorithms


@pytest.fixture(scope="module")
def algo():
    return doc_algorithms()


def spla_lines(fn_name):
    """Lines of code (no docstring, blank or comment lines) of a documented function."""
    text = DOC.read_text(encoding="utf-8")
    body = re.search(rf"   def {fn_name}\(.*?(?=\n   def |\nOn a small graph)", text, re.S)[0]
    lines = [ln.strip() for ln in body.splitlines()[1:]]
    return [ln for ln in lines if ln and not ln.startswith(("#", '"""'))]


def random_graph(seed, n, p, weighted=False, symmetric=True):
    rs = np.random.RandomState(seed)
    D = (rs.rand(n, n) < p).astype(np.float64)
    np.fill_diagonal(D, 0)
    if symmetric:
        D = np.maximum(D, D.T)
    if weighted:
        W = rs.randint(1, 9, size=(n, n)).astype(np.float64)
        D = D * (np.minimum(W, W.T) if symmetric else W)
    return D


SEEDS = range(6)


@pytest.mark.parametrize("name", ["bfs", "sssp", "triangles", "components", "pagerank"])
def test_each_algorithm_is_at_most_20_lines(name):
    assert 0 < len(spla_lines(name)) <= 20


@pytest.mark.parametrize("seed", SEEDS)
def test_bfs(algo, seed):
    D = random_graph(seed, 30, 0.06, symmetric=seed % 2 == 0)
    A = spla.Matrix.from_dense(D, structural=True)
    level, parent = algo["bfs"](A, 0)
    dist = csgraph.shortest_path(sp.csr_matrix(D), unweighted=True, indices=0)
    np.testing.assert_array_equal(level, np.where(np.isinf(dist), -1, dist).astype(int))
    assert parent[0] == 0
    for v in np.flatnonzero(level > 0):
        assert D[parent[v], v] != 0 and level[parent[v]] == level[v] - 1


@pytest.mark.parametrize("seed", SEEDS)
def test_sssp(algo, seed):
    D = random_graph(seed, 25, 0.12, weighted=True, symmetric=seed % 2 == 1)
    got = algo["sssp"](spla.Matrix.from_dense(D), 0)
    want = csgraph.shortest_path(sp.csr_matrix(D), method="BF", indices=0)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", SEEDS)
def test_triangles(algo, seed):
    D = random_graph(seed, 20, 0.3)
    n = D.shape[0]
    want = sum(1 for i, j, k in itertools.combinations(range(n), 3)
               if D[i, j] and D[j, k] and D[i, k])
    assert algo["triangles"](spla.Matrix.from_dense(D, structural=True)) == want


@pytest.mark.parametrize("seed", SEEDS)
def test_components(algo, seed):
    D = random_graph(seed, 40, 0.04)
    got = algo["components"](spla.Matrix.from_dense(D, structural=True))
    _, lab = csgraph.connected_components(sp.csr_matrix(D), directed=False)
    want = np.array([np.flatnonzero(lab == lab[v]).min() for v in range(D.shape[0])])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", SEEDS)
def test_pagerank(algo, seed):
    D = random_graph(seed, 30, 0.1, symmetric=False)
    got = algo["pagerank"](spla.Matrix.from_dense(D, structural=True))
    n = D.shape[0]
    deg = D.sum(1)
    P = np.divide(D, deg[:, None], out=np.zeros_like(D), where=deg[:, None] > 0)
    r = np.full(n, 1.0 / n)
    for _ in range(1000):
        r = 0.85 * (r @ P) + (0.85 * r[deg == 0].sum() + 0.15) / n
    np.testing.assert_allclose(got, r, rtol=1e-9, atol=1e-12)
    assert abs(got.sum() - 1) < 1e-9
