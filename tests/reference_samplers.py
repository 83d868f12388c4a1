"""Plain reference samplers, written vertex by vertex from the papers.

These are the yardsticks of ``test_samplers.py`` and
``test_sampler_distribution.py``.  They deliberately share nothing with
``spla`` or ``sampling``: the graph comes in as a ``scipy.sparse`` matrix,
every loop over vertices is a Python loop, and the randomness is a
``numpy.random.Generator`` passed by the caller.  Because their random
numbers differ from the library's counter-based draws, they are compared
with the library *in distribution*, never pick by pick.

Conventions (the same as the library's):

* layer sizes are given **output layer first** (``fanouts[0]`` is drawn for
  the seeds) and blocks are returned **input layer first**;
* a block's ``adj`` is ``n_dst x n_src`` (rows = destinations), and
  ``src`` starts with ``dst``, followed by the newly sampled vertices in
  order of first appearance (destination by destination, ascending vertex
  id within a destination);
* GraphSAGE with replacement stores in ``adj`` how many times each
  neighbour was drawn; without replacement it stores the edge value of A
  (1 for a structural graph).

Layer-wise samplers follow Zou et al. (LADIES, 2019) and Chen et al.
(FastGCN, 2018): ``Â = D⁻¹(A + I)`` (``D`` the row sums of ``A + I``);
LADIES draws vertex ``j`` with ``p_j ∝ Σ_{i ∈ dst} Â[i, j]²``, FastGCN with
``p_j ∝ Σ_i Â[i, j]²``; ``s`` vertices without replacement (sequential
sampling: each draw ∝ p over the vertices not drawn yet; all of the support
when it has at most ``s`` vertices); the layer's adjacency is
``Â[dst, src]`` with column ``j`` scaled by ``1 / (s p_j)``, then each row
divided by its sum (an all-zero row stays zero).
"""

import itertools

import numpy as np
import scipy.sparse as sp


class RefBlock:
    """One layer: ``dst``, ``src`` (int64 arrays) and ``adj``.

    ``adj`` is a scipy CSR matrix ``len(dst) x len(src)``, built on first
    use from ``rows`` (per destination, a dict local source -> value) or
    from ``adj`` when that is a function.
    """

    def __init__(self, dst, src, rows=None, adj=None):
        self.dst = np.asarray(dst, np.int64)
        self.src = np.asarray(src, np.int64)
        self.rows = rows
        self._adj = adj

    def edges(self):
        """The set of ``(dst vertex, src vertex, value)`` in global ids."""
        if self.rows is None:
            A = self.adj
            return {(int(self.dst[i]), int(self.src[A.indices[e]]), float(A.data[e]))
                    for i in range(A.shape[0]) for e in range(A.indptr[i], A.indptr[i + 1])}
        return {(int(self.dst[i]), int(self.src[j]), float(val))
                for i, row in enumerate(self.rows) for j, val in row.items()}

    @property
    def adj(self):
        if callable(self._adj):
            self._adj = self._adj()
        if self._adj is None:
            r, c, x = [], [], []
            for i, row in enumerate(self.rows):
                for j, val in row.items():
                    r.append(i)
                    c.append(j)
                    x.append(val)
            adj = sp.csr_matrix((np.array(x, np.float64),
                                 (np.array(r, np.int64), np.array(c, np.int64))),
                                shape=(self.dst.size, self.src.size))
            adj.sort_indices()
            self._adj = adj
        return self._adj


# ---------------------------------------------------------------------------
# Helpers on one probability vector
# ---------------------------------------------------------------------------

def draw_one(weights, rng):
    """One index drawn with probability ``weights[j] / sum(weights)``."""
    total = 0.0
    for w in weights:
        total += w
    x = rng.random() * total
    acc, last = 0.0, -1
    for j, w in enumerate(weights):
        if w > 0:
            acc += w
            last = j
            if acc > x:
                return j
    return last   # x rounded up to the total


def sequential_without_replacement(weights, k, rng):
    """Indices of ``k`` draws without replacement, each ∝ the weight left.

    Entries of weight 0 are never drawn; when at most ``k`` entries have a
    positive weight, all of them are returned.  The result is in draw order.
    """
    w = [float(x) for x in weights]
    positive = [j for j in range(len(w)) if w[j] > 0]
    if len(positive) <= k:
        return positive
    picks = []
    for _ in range(k):
        left = list(w)
        for j in picks:
            left[j] = 0.0
        picks.append(draw_one(left, rng))
    return picks


def with_replacement_counts(weights, k, rng):
    """How many of ``k`` independent draws (∝ weight) hit each entry."""
    w = [float(x) for x in weights]
    counts = [0] * len(w)
    if sum(w) <= 0:
        return counts
    for _ in range(k):
        counts[draw_one(w, rng)] += 1
    return counts


def subset_law(weights, k):
    """Exact law of the *set* drawn by ``sequential_without_replacement``.

    Enumerates every ordered sequence of ``k`` distinct positive entries and
    multiplies the conditional probabilities ``w_{i_t} / (W - Σ_{u<t} w_{i_u})``.

    Returns
    -------
    dict
        ``frozenset of indices -> probability`` (the probabilities sum to 1).
    """
    w = [float(x) for x in weights]
    positive = [j for j in range(len(w)) if w[j] > 0]
    if len(positive) <= k:
        return {frozenset(positive): 1.0}
    law = {}
    total = sum(w[j] for j in positive)
    for order in itertools.permutations(positive, k):
        prob, left = 1.0, total
        for j in order:
            prob *= w[j] / left
            left -= w[j]
        key = frozenset(order)
        law[key] = law.get(key, 0.0) + prob
    return law


def multinomial_law(weights, k):
    """Exact law of the count vector of ``k`` draws with replacement.

    Returns ``tuple of counts -> probability`` over every composition of
    ``k`` into ``len(weights)`` parts with positive probability.
    """
    w = np.array(weights, dtype=np.float64)
    p = w / w.sum()
    d = w.size
    law = {}
    for draws in itertools.product(range(d), repeat=k):
        counts = [0] * d
        prob = 1.0
        for j in draws:
            counts[j] += 1
            prob *= p[j]
        if prob > 0:
            law[tuple(counts)] = law.get(tuple(counts), 0.0) + prob
    return law


# ---------------------------------------------------------------------------
# GraphSAGE (Hamilton et al., 2017)
# ---------------------------------------------------------------------------

def _neighbours(A, v):
    lo, hi = A.indptr[v], A.indptr[v + 1]
    return A.indices[lo:hi].tolist(), A.data[lo:hi].astype(np.float64).tolist()


def _csr(A):
    """A canonical scipy CSR view of A (no copy when it already is one)."""
    if not (sp.isspmatrix_csr(A) and A.has_sorted_indices):
        A = sp.csr_matrix(A)
        A.sort_indices()
    return A


def graphsage(A, seeds, fanouts, rng, *, replace=False, weighted=False):
    """Node-wise sampling: ``fanouts[h]`` neighbours of every vertex of hop h.

    Parameters
    ----------
    A : scipy.sparse matrix
        Square; row ``v`` lists the neighbours of ``v`` (with their weights).
    seeds : sequence of int
    fanouts : sequence of int
        Output layer first.
    rng : numpy.random.Generator
    replace, weighted : bool

    Returns
    -------
    list of RefBlock
        Input layer first.
    """
    A = _csr(A)
    dst = [int(v) for v in seeds]
    blocks = []
    for fanout in fanouts:
        rows = []  # per destination: {local column -> value}
        src = list(dst)
        where = {v: t for t, v in enumerate(src)}
        for v in dst:
            nbrs, wts = _neighbours(A, v)
            probs = wts if weighted else [1.0] * len(nbrs)
            if replace:
                counts = with_replacement_counts(probs, fanout, rng)
                picked = {t: float(c) for t, c in enumerate(counts) if c > 0}
            else:
                picked = {t: wts[t] if weighted else 1.0
                          for t in sequential_without_replacement(probs, fanout, rng)}
            row = {}
            for t in sorted(picked):
                u = nbrs[t]
                if u not in where:
                    where[u] = len(src)
                    src.append(u)
                row[where[u]] = picked[t]
            rows.append(row)
        blocks.append(RefBlock(dst, src, rows=rows))
        dst = src
    return blocks[::-1]


# ---------------------------------------------------------------------------
# LADIES (Zou et al., 2019) and FastGCN (Chen et al., 2018)
# ---------------------------------------------------------------------------

def normalized_adjacency(A, normalize=True):
    """``Â = D⁻¹(A + I)`` (float64 CSR); ``normalize=False`` returns A's values."""
    A = sp.csr_matrix(A, dtype=np.float64)
    n = A.shape[0]
    if not normalize:
        out = A.copy()
    else:
        M = (A + sp.identity(n, format="csr")).tocsr()
        out = M.copy()
        for i in range(n):
            lo, hi = M.indptr[i], M.indptr[i + 1]
            total = M.data[lo:hi].sum()
            if total > 0:
                out.data[lo:hi] = M.data[lo:hi] / total
    out.sort_indices()
    return out


def ladies_probabilities(Ahat, dst):
    """``p_j ∝ Σ_{i ∈ dst} Â[i, j]²`` (dense, normalised; zeros if the rows are empty)."""
    n = Ahat.shape[1]
    p = np.zeros(n)
    for i in dst:
        lo, hi = Ahat.indptr[i], Ahat.indptr[i + 1]
        for j, a in zip(Ahat.indices[lo:hi], Ahat.data[lo:hi]):
            p[j] += a * a
    return p / p.sum() if p.sum() > 0 else p


def fastgcn_probabilities(Ahat):
    """``p_j ∝ ‖Â[:, j]‖²`` (dense, normalised)."""
    return ladies_probabilities(Ahat, range(Ahat.shape[0]))


def layerwise_adjacency(Ahat, dst, src, p, s):
    """``Â[dst, src]`` with column j scaled by ``1 / (s p_j)``, rows renormalised."""
    dense = np.zeros((len(dst), len(src)))
    col = {int(v): t for t, v in enumerate(src)}
    for r, i in enumerate(dst):
        lo, hi = Ahat.indptr[i], Ahat.indptr[i + 1]
        for j, a in zip(Ahat.indices[lo:hi], Ahat.data[lo:hi]):
            if int(j) in col:
                t = col[int(j)]
                dense[r, t] = a / (s * p[j]) if p[j] > 0 else 0.0
    for r in range(dense.shape[0]):
        total = dense[r].sum()
        if total > 0:
            dense[r] /= total
    # Keep the pattern of Â[dst, src] (an entry scaled by p_j > 0 is never 0).
    return sp.csr_matrix(dense)


def _layerwise(A, seeds, layer_sizes, rng, normalize, probabilities, Ahat):
    if Ahat is None:
        Ahat = normalized_adjacency(A, normalize)
    dst = [int(v) for v in seeds]
    blocks = []
    for s in layer_sizes:
        p = probabilities(Ahat, dst)
        picks = sorted(sequential_without_replacement(p, s, rng))
        src = list(dst) + [j for j in picks if j not in set(dst)]
        adj = (lambda dst=dst, src=src, p=p, s=s: layerwise_adjacency(Ahat, dst, src, p, s))
        blocks.append(RefBlock(dst, src, adj=adj))
        dst = src
    return blocks[::-1]


def ladies(A, seeds, layer_sizes, rng, *, normalize=True, Ahat=None):
    """LADIES: per layer, ``s`` vertices ∝ the batch's column sums of Â∘Â.

    ``Ahat`` may pass ``normalized_adjacency(A, normalize)`` computed once.
    Returns a list of ``RefBlock``, input layer first.
    """
    return _layerwise(A, seeds, layer_sizes, rng, normalize, ladies_probabilities, Ahat)


def fastgcn(A, seeds, layer_sizes, rng, *, normalize=True, Ahat=None):
    """FastGCN: per layer, ``s`` vertices ∝ the global column norms of Â, squared."""
    return _layerwise(A, seeds, layer_sizes, rng, normalize,
                      lambda Ahat, dst: fastgcn_probabilities(Ahat), Ahat)
