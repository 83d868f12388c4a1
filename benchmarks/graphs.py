"""Graphs with real structure for the benchmarks, beside R-MAT's random ids.

R-MAT numbers its vertices at random, so a sampler's reads of a minibatch's
neighbourhoods scatter over the whole graph; real graphs number them with
locality (web crawls by URL, citation and social graphs by crawl or
publication order), and a method's lead can change with that.  Every
sampler benchmark therefore also runs on:

* ``bfs_renumbered(A)``: R-MAT's degrees with the ids of a breadth-first
  crawl from its highest-degree vertex;
* ``pubmed_graph(PUBMED)``: PubMed's real citation graph, ids as published
  (``../shared/data/pubmed.npz``, outside the repository).

Importing this module imports neither numba nor spla (the benchmarks set
their thread counts before those load).
"""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
#: PubMed's symmetric CSR archive (``indptr``, ``indices``), beside the repository.
PUBMED = os.path.join(os.path.dirname(HERE), "..", "shared", "data", "pubmed.npz")


def bfs_renumbered(A):
    """A with its vertices renumbered in BFS order from its highest-degree
    vertex (the unreached ones after, in id order): neighbours get nearby
    ids, as in a crawl-ordered web or social graph, with R-MAT's degrees."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order

    import spla
    S = sp.csr_matrix((np.ones(A.nnz, np.float32), np.asarray(A.indices), np.asarray(A.indptr)),
                      shape=A.shape)
    start = int(np.argmax(np.asarray(A.row_degrees())))
    order = breadth_first_order(S, start, directed=False, return_predecessors=False)
    seen = np.zeros(A.nrows, bool)
    seen[order] = True
    order = np.concatenate([order, np.flatnonzero(~seen)])
    S = S[order][:, order].tocsr()
    S.sort_indices()
    return spla.Matrix.from_csr(S.indptr.astype(np.int64), S.indices.astype(np.int64), None,
                                A.shape)


def pubmed_graph(path=PUBMED):
    """PubMed's real citation graph (symmetric CSR, ids as published)."""
    import spla
    z = np.load(path, allow_pickle=False)
    n = z["indptr"].size - 1
    return spla.Matrix.from_csr(z["indptr"], z["indices"], None, (n, n))


def locality_graphs(scale, pubmed=PUBMED):
    """``[(label, A)]``: R-MAT of ``scale`` (edge factor 16, seed 0), the same in
    BFS order, and PubMed when its archive exists at ``pubmed`` ('' skips it)."""
    from spla.generators import rmat
    R = rmat(scale, 16, seed=0)
    graphs = [(f"R-MAT {scale}", R), (f"R-MAT {scale}, BFS order", bfs_renumbered(R))]
    if pubmed and os.path.exists(pubmed):
        graphs.append(("PubMed", pubmed_graph(pubmed)))
    return graphs
