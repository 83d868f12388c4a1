"""Seeded random matrices: R-MAT graphs, uniform random CSR, selection matrices.

Randomness is counter-based, like the rest of spla: every random choice is a
pure function of the user seed and a global counter (an edge number, a row
id), computed inside the kernel.  Consequences:

* the same seed gives the same matrix whatever the thread count;
* a block of rows (``rows=(start, stop)``) is exactly that block of the
  full matrix, so a distributed factory can let each rank build its own rows
  and the union equals the matrix one process builds;
* no global RNG state is read or changed.

The generators run on the CPU (numba); move a result with ``.to('cuda')``.

Sizes
-----
``rmat(20, 16, seed=s)`` (Graph500's scale 20, the default R-MAT
probabilities, symmetric, no self loops) generates 16,777,216 edges and
stores about 31.4 M entries after deduplication and symmetrisation
(31,406,640 for ``seed=0``, 6.4 % below twice the generated edges; maximum
degree 64,655, mean 30.0, E[d^2]/E[d] about 2,230).  ``rmat(18, 8, seed=0)``
stores 3,939,614 entries (262,144 vertices).  Scale 20 peaks at about
0.4 GB above the interpreter's memory; build times are in docs/design.rst
("Measurements behind the kernels' choices").
"""

import numbers

import numpy as np

from spla import backend
from spla.checks import as_index_array, as_int, as_u64, describe, fail, index_dtype
from spla.exceptions import DTypeError, InvalidValue
from spla.matrix import Matrix

MAX_SCALE = 40


def _kernels():
    # The generators build on the host, whose kernels alone have them (a GPU
    # user moves the matrix with ``.to("cuda")``).
    return backend.kernels_for(backend.CPU).generate


def _as_seed(func, seed):
    return as_u64(func, "seed", seed)


def _as_prob(func, arg, x):
    if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        fail(InvalidValue, func, arg, "a real number in [0, 1)", describe(x))
    x = float(x)
    if not np.isfinite(x) or x < 0.0 or x >= 1.0:
        fail(InvalidValue, func, arg, "a real number in [0, 1)", repr(x))
    return x


def _as_bool(func, arg, x):
    if not isinstance(x, (bool, np.bool_)):
        fail(InvalidValue, func, arg, "True or False", describe(x))
    return bool(x)


def _as_row_range(func, rows, nrows):
    """(start, stop) from None or a pair with 0 <= start <= stop <= nrows."""
    if rows is None:
        return 0, nrows
    if not isinstance(rows, (tuple, list)) or len(rows) != 2:
        fail(InvalidValue, func, "rows", "None or a pair (start, stop)", describe(rows))
    start = as_int(func, "rows[0]", rows[0], minimum=0)
    stop = as_int(func, "rows[1]", rows[1], minimum=0)
    if start > stop or stop > nrows:
        fail(InvalidValue, func, "rows",
             f"a pair (start, stop) with 0 <= start <= stop <= {nrows}",
             f"({start}, {stop})")
    return start, stop


def _index_dtype(ncols):
    return index_dtype(ncols).type


def _chunks():
    import numba
    return 8 * numba.get_num_threads()


def rmat(scale, edge_factor=16, *, seed, a=0.57, b=0.19, c=0.19, symmetric=True,
         self_loops=False, weighted=False, rows=None):
    """A Graph500-style R-MAT graph as an ``n x n`` adjacency matrix, ``n = 2**scale``.

    ``edge_factor * n`` edges are generated.  Edge ``e`` descends ``scale``
    levels of the adjacency matrix, choosing at each level the quadrant
    top-left, top-right, bottom-left, bottom-right with probabilities ``a``,
    ``b``, ``c``, ``d = 1 - a - b - c``; its endpoints are a pure function of
    ``(seed, e)``.  Vertex ids are then relabelled by a seeded bijection of
    ``[0, n)`` so that degree is not correlated with id (without it vertex 0
    would be the largest hub).  Repeated edges are stored once, so the number
    of stored entries is a little below ``edge_factor * n`` (or twice that,
    symmetrised).  Unlike the Graph500 generator, the probabilities are not
    perturbed per level.

    Parameters
    ----------
    scale : int
        ``log2`` of the number of vertices, ``0 <= scale <= 40``.
    edge_factor : int, default 16
        Generated edges per vertex (>= 1).
    seed : int
        User seed, ``0 <= seed < 2**64``.
    a, b, c : float, default 0.57, 0.19, 0.19
        Quadrant probabilities (Graph500's); each >= 0 with ``a + b + c < 1``.
    symmetric : bool, default True
        Store each edge ``{u, v}`` both ways (an undirected graph); otherwise
        the directed edge ``u -> v`` only, as entry ``(u, v)``.
    self_loops : bool, default False
        Keep generated edges ``u -> u`` (removed by default).
    weighted : bool, default False
        float32 values in ``(0, 1]``: the weight of ``{u, v}`` is a pure
        function of ``(seed, min(u, v), max(u, v))``, so the matrix stays
        symmetric.  By default the matrix is structural (no values).
    rows : (int, int), optional
        Build only rows ``[start, stop)``: a ``(stop - start) x n`` matrix
        equal to that block of the full matrix.  Every edge is still
        generated (twice: a counting pass, then a filling pass) but only the
        block's entries are stored, so memory is proportional to the block.

    Returns
    -------
    Matrix
        Canonical CSR, int32 column indices (int64 beyond ``2**31 - 1``
        vertices), structural or float32.

    Raises
    ------
    InvalidValue
        ``scale`` outside ``[0, 40]``, a non-integer ``scale`` /
        ``edge_factor`` / ``seed``, probabilities out of range or summing to
        1 or more, a bad ``rows`` range.

    Notes
    -----
    Memory: 8 bytes per stored entry before deduplication (the packed
    coordinates), plus the output (4 bytes per entry, 8 with weights).  The
    time is linear in the generated edges.  A block of rows costs the full
    generation time (every edge is drawn to find the block's ones) but only
    the block's memory.

    Examples
    --------
    >>> from spla.generators import rmat
    >>> G = rmat(6, 8, seed=1)
    >>> G.shape, G.is_structural
    ((64, 64), True)
    >>> G.isequal(G.T)                        # symmetric by default
    True
    >>> G.isequal(rmat(6, 8, seed=1))         # reproducible
    True
    >>> top = rmat(6, 8, seed=1, rows=(0, 32))
    >>> top.shape
    (32, 64)
    """
    func = "rmat"
    scale = as_int(func, "scale", scale, minimum=0)
    if scale > MAX_SCALE:
        fail(InvalidValue, func, "scale", f"an integer in [0, {MAX_SCALE}]", scale)
    edge_factor = as_int(func, "edge_factor", edge_factor, minimum=1)
    seed = _as_seed(func, seed)
    a = _as_prob(func, "a", a)
    b = _as_prob(func, "b", b)
    c = _as_prob(func, "c", c)
    if a + b + c >= 1.0:
        fail(InvalidValue, func, "a, b, c",
             "probabilities with a + b + c < 1 (d = 1 - a - b - c > 0)",
             f"a + b + c = {a + b + c!r}")
    symmetric = _as_bool(func, "symmetric", symmetric)
    self_loops = _as_bool(func, "self_loops", self_loops)
    weighted = _as_bool(func, "weighted", weighted)
    n = 1 << scale
    start, stop = _as_row_range(func, rows, n)
    n_edges = edge_factor * n
    if n_edges >= 2 ** 62:
        fail(InvalidValue, func, "edge_factor",
             "a value with edge_factor * 2**scale < 2**62", edge_factor)
    indptr, indices, values = _kernels().rmat_csr(
        seed, scale, n_edges, a, b, c, symmetric, self_loops, start, stop,
        weighted, _chunks(), _index_dtype(n), np.float32)
    return Matrix._new(indptr, indices, values, (stop - start, n))


def random_csr(nrows, ncols, nnz_per_row, *, seed, dtype=np.float32, rows=None):
    """A random matrix with exactly ``nnz_per_row`` distinct columns per row.

    Each row's columns are a uniform random subset of ``range(ncols)``
    (Floyd's algorithm: exactly ``nnz_per_row`` draws per row, so the cost is
    ``O(nnz_per_row**2)`` per row; meant for ``nnz_per_row << ncols``).
    Values are uniform in ``(0, 1]``.  Row ``i`` depends only on
    ``(seed, i)``.

    Parameters
    ----------
    nrows, ncols : int
        Shape (>= 0).
    nnz_per_row : int
        Entries per row, ``0 <= nnz_per_row <= ncols``.
    seed : int
        User seed, ``0 <= seed < 2**64``.
    dtype : {numpy.float32, numpy.float64, None}, default float32
        Value dtype; ``None`` for a structural matrix.
    rows : (int, int), optional
        Build only rows ``[start, stop)`` (equal to that block of the full
        matrix).

    Returns
    -------
    Matrix
        Canonical CSR of shape ``(nrows, ncols)`` (or ``(stop - start, ncols)``)
        with ``nnz_per_row`` entries in every row.

    Raises
    ------
    InvalidValue
        Negative sizes, ``nnz_per_row > ncols``, a bad seed or ``rows``.
    DTypeError
        ``dtype`` other than float32, float64 or None.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.generators import random_csr
    >>> A = random_csr(4, 10, 3, seed=0)
    >>> A.row_degrees()
    array([3, 3, 3, 3])
    >>> bool(((A.values > 0) & (A.values <= 1)).all())
    True
    >>> A.isequal(random_csr(4, 10, 3, seed=0))
    True
    """
    func = "random_csr"
    nrows = as_int(func, "nrows", nrows, minimum=0)
    ncols = as_int(func, "ncols", ncols, minimum=0)
    k = as_int(func, "nnz_per_row", nnz_per_row, minimum=0)
    if k > ncols:
        fail(InvalidValue, func, "nnz_per_row", f"at most ncols = {ncols}", k)
    seed = _as_seed(func, seed)
    if dtype is not None:
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            fail(DTypeError, func, "dtype", "float32, float64 or None", describe(dtype))
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            fail(DTypeError, func, "dtype", "float32, float64 or None", f"dtype {dtype}")
    start, stop = _as_row_range(func, rows, nrows)
    hv = dtype is not None
    indptr, indices, values = _kernels().random_csr(
        np.uint64(seed), start, stop - start, ncols, k, hv,
        np.empty(0, _index_dtype(ncols)), np.empty(0, dtype if hv else np.float32))
    return Matrix._new(indptr, indices, values if hv else None, (stop - start, ncols))


def selection_matrix(rows, ncols):
    """The structural matrix with one entry per row, at column ``rows[i]``.

    ``selection_matrix(rows, A.nrows) @ A`` is ``A[rows, :]``: GraphSAGE's
    ``Q`` (one row per seed vertex), which ``sample_rows`` samples fused.

    Parameters
    ----------
    rows : array_like of int, shape (m,)
        Column of each row's entry, ``0 <= rows[i] < ncols`` (may repeat).
    ncols : int

    Returns
    -------
    Matrix
        Structural, shape ``(m, ncols)``.

    Raises
    ------
    IndexOutOfRange
        An entry of ``rows`` negative or not below ``ncols``.

    Examples
    --------
    >>> from spla.generators import selection_matrix
    >>> selection_matrix([2, 0, 2], 3).to_dense()
    array([[0., 0., 1.],
           [1., 0., 0.],
           [0., 0., 1.]])
    """
    func = "selection_matrix"
    ncols = as_int(func, "ncols", ncols, minimum=0)
    r = as_index_array(func, "rows", rows, ncols)
    xp = backend.xp_of_array(r)
    indptr = xp.arange(r.size + 1, dtype=np.int64)
    return Matrix._new(indptr, r.astype(_index_dtype(ncols)), None, (r.size, ncols))


__all__ = ["rmat", "random_csr", "selection_matrix"]
