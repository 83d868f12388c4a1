"""Seeded synthetic node-classification datasets with planted communities.

``rmat_dataset(scale)`` builds a graph whose labels can be learned, at any
size, so that accuracy on it means something:

* **labels**: every vertex gets a community (class) from a seeded draw;
* **graph**: an R-MAT graph (``spla.generators.rmat``, label-blind, the
  skewed degrees of real graphs) plus ``intra_degree`` extra edges per
  vertex to random members of its own community (the signal a GNN
  aggregates), symmetrised, without self loops or repeats;
* **features**: sparse binary "bag of words" rows: each class owns a topic
  of ``num_features / num_classes`` features, and each vertex turns on
  ``words`` features, each drawn from its class's topic with probability
  ``signal`` and uniformly otherwise.  Features alone predict the class
  only partly; neighbours sharing the class make the prediction reliable
  (on ``rmat:12``, a 2-layer GraphSAGE reaches about 0.86 test accuracy
  with the default options, one sampled neighbour in one layer about 0.43;
  chance is 1/8);
* **split**: a seeded random 10 % / 10 % / 20 % train / validation / test
  split (the rest of the vertices are unlabelled for training purposes).

Everything is a pure function of ``(scale, seed, ...)``.
"""

import numpy as np

from spla.checks import as_int, fail
from spla.exceptions import InvalidValue
from spla.matrix import Matrix

from sampling.datasets.dataset import Dataset

SPLIT = (0.10, 0.10, 0.20)


def _rmat_edges(scale, edge_factor, seed):
    """(rows, cols) of a symmetric R-MAT graph: spla.generators.rmat, or a numpy fallback."""
    try:
        from spla.generators import rmat
        G = rmat(scale, edge_factor, seed=seed)
        sp = G.to_scipy().tocoo()
        return sp.row.astype(np.int64), sp.col.astype(np.int64)
    except ImportError:  # pragma: no cover - only without spla.generators
        pass
    n = 1 << scale
    rng = np.random.default_rng([seed, 0x52AA7])
    m = edge_factor * n
    a, b, c = 0.57, 0.19, 0.19
    u = np.zeros(m, np.int64)
    v = np.zeros(m, np.int64)
    for level in range(scale):
        r = rng.random(m)
        right = (r >= a) & (r < a + b) | (r >= a + b + c)
        down = r >= a + b
        u |= down.astype(np.int64) << level
        v |= right.astype(np.int64) << level
    perm = rng.permutation(n)
    u, v = perm[u], perm[v]
    return np.concatenate([u, v]), np.concatenate([v, u])


def rmat_dataset(scale, *, seed=0, num_classes=8, num_features=64, edge_factor=8,
                 intra_degree=4, words=8, signal=0.2):
    """A seeded R-MAT node-classification dataset with planted community labels.

    Parameters
    ----------
    scale : int
        ``2**scale`` vertices (1 to 30).
    seed : int, default 0
    num_classes : int, default 8
    num_features : int, default 64
        At least ``num_classes``.
    edge_factor : int, default 8
        R-MAT edges generated per vertex (before symmetrisation).
    intra_degree : int, default 4
        Extra edges per vertex to its own community (before symmetrisation).
    words : int, default 8
        Features drawn per vertex (repeats collapse).
    signal : float, default 0.2
        Probability that a drawn feature comes from the vertex's class topic.

    Returns
    -------
    sampling.datasets.dataset.Dataset
        Named ``'rmat:SCALE'``; ``x`` is a sparse binary float32 spla.Matrix.

    Examples
    --------
    >>> ds = rmat_dataset(8)
    >>> ds.num_nodes, ds.num_classes, ds.num_features, ds.train_idx.size
    (256, 8, 64, 26)
    >>> ds.A.isequal(ds.A.T)
    True
    """
    func = "rmat_dataset"
    scale = as_int(func, "scale", scale, minimum=1)
    if scale > 30:
        fail(InvalidValue, func, "scale", "an integer in [1, 30]", scale)
    seed = as_int(func, "seed", seed, minimum=0)
    num_classes = as_int(func, "num_classes", num_classes, minimum=2)
    num_features = as_int(func, "num_features", num_features, minimum=num_classes)
    edge_factor = as_int(func, "edge_factor", edge_factor, minimum=1)
    intra_degree = as_int(func, "intra_degree", intra_degree, minimum=0)
    words = as_int(func, "words", words, minimum=1)
    if not 0.0 <= float(signal) <= 1.0:
        fail(InvalidValue, func, "signal", "a probability in [0, 1]", signal)
    n = 1 << scale
    rng = np.random.default_rng([seed, scale, 0x5EED])

    # Planted communities.
    y = rng.integers(0, num_classes, n).astype(np.int64)
    members = np.argsort(y, kind="stable")
    sizes = np.bincount(y, minlength=num_classes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])

    # Label-blind R-MAT edges plus intra-community edges.
    r, c = _rmat_edges(scale, edge_factor, seed)
    src = np.repeat(np.arange(n, dtype=np.int64), intra_degree)
    cls = y[src]
    pick = starts[cls] + (rng.random(src.size) * sizes[cls]).astype(np.int64)
    dst = members[np.minimum(pick, starts[cls] + sizes[cls] - 1)]
    rows = np.concatenate([r, src, dst])
    cols = np.concatenate([c, dst, src])
    keep = rows != cols
    A = Matrix.from_coo(rows[keep], cols[keep], None, shape=(n, n), duplicates="sum")
    A = A.structure()

    # Bag-of-words features with a class topic.
    topic = num_features // num_classes
    vid = np.repeat(np.arange(n, dtype=np.int64), words)
    from_topic = rng.random(vid.size) < signal
    feat = np.where(from_topic, y[vid] * topic + rng.integers(0, topic, vid.size),
                    rng.integers(0, num_features, vid.size))
    x = Matrix.from_coo(vid, feat, None, shape=(n, num_features)).structure()
    x = x.astype(np.float32)

    # Split.
    order = rng.permutation(n)
    n_tr, n_va, n_te = (max(1, int(round(f * n))) for f in SPLIT)
    train = np.sort(order[:n_tr])
    val = np.sort(order[n_tr:n_tr + n_va])
    test = np.sort(order[n_tr + n_va:n_tr + n_va + n_te])
    return Dataset(f"rmat:{scale}", A, x, y, train, val, test, classes=num_classes)


__all__ = ["rmat_dataset"]
