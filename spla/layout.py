"""Distributed layouts as data: ``chunk`` and the frozen ``Layout``.

``chunk(n, parts, i)`` is the one rule that says which rows block ``i`` of
``parts`` holds; factories, kernels, feature stores and tests all use it, so
owners are computed, never communicated.  Blocks differ in size by at most
one row and no row is ever dropped.

A layout on ``p`` ranks with replication ``c`` (``c`` divides ``p``) is a
``(p/c) x c`` process grid: rank ``r`` sits at process row ``r // c`` and
process column ``r % c``; the matrix is split into ``p/c`` block rows and
block ``i`` is held by every rank of process row ``i``.  ``'1d'`` is the
case ``c = 1``; ``replicated`` layouts hold the whole matrix on every rank.

A layout may instead carry explicit block boundaries (``bounds``, from a
``spla.partition.Partition`` of the renumbered graph): block ``i`` is then
rows ``[bounds[i], bounds[i + 1])``.  ``Layout.block_rows``,
``Layout.row_bounds`` and ``Layout.owner`` answer for both kinds, so code
that asks the layout never needs to know which.
"""

from dataclasses import dataclass

import numpy as np

from spla.checks import as_int, describe, fail
from spla.exceptions import InvalidValue, LayoutError


def chunk(n, parts, i):
    """Row range ``(start, stop)`` of block ``i`` when ``n`` rows are cut in ``parts``.

    The first ``n % parts`` blocks get one extra row.

    Examples
    --------
    >>> from spla.layout import chunk
    >>> [chunk(10, 4, i) for i in range(4)]
    [(0, 3), (3, 6), (6, 8), (8, 10)]
    >>> chunk(2, 4, 3)
    (2, 2)
    """
    n = as_int("chunk", "n", n, minimum=0)
    parts = as_int("chunk", "parts", parts, minimum=1)
    i = as_int("chunk", "i", i, minimum=0)
    if i >= parts:
        fail(LayoutError, "chunk", "i", f"a block index below parts = {parts}", i)
    q, r = divmod(n, parts)
    start = i * q + min(i, r)
    return start, start + q + (1 if i < r else 0)


def chunk_bounds(n, parts):
    """All block boundaries: int64 array of length ``parts + 1``.

    Examples
    --------
    >>> from spla.layout import chunk_bounds
    >>> chunk_bounds(10, 4).tolist()
    [0, 3, 6, 8, 10]
    """
    return np.array([chunk(n, parts, i)[0] for i in range(parts)] + [n], np.int64)


def owner_of(rows, n, parts):
    """The block index holding each global row (vectorised ``chunk`` inverse).

    Examples
    --------
    >>> import numpy as np
    >>> from spla.layout import owner_of
    >>> owner_of(np.array([0, 2, 3, 9]), 10, 4).tolist()
    [0, 0, 1, 3]
    """
    b = chunk_bounds(n, parts)
    return np.searchsorted(b, np.asarray(rows), side="right") - 1


_KINDS = ("local", "1d", "1.5d")


@dataclass(frozen=True, repr=False)
class Layout:
    """How a matrix's rows are spread over ``p`` ranks.

    Attributes
    ----------
    kind : {'local', '1d', '1.5d'}
    p : int
        Number of ranks.
    c : int
        Replication factor (ranks per process row); 1 for '1d' and 'local'.
    replicated : bool
        Every rank holds the whole matrix (the graph-replicated mode).
    bounds : tuple of int, optional
        Explicit block boundaries (``p/c + 1`` non-decreasing ints from 0 to
        the number of rows): block ``i`` is rows ``[bounds[i],
        bounds[i + 1])``.  ``None`` (the default): the blocks of ``chunk``.

    Examples
    --------
    >>> from spla.layout import Layout
    >>> L = Layout("1.5d", p=6, c=2)
    >>> L.grid_rows, L.position(5), L.block_rows(10, 5)
    (3, (2, 1), (7, 10))
    >>> M = Layout("1d", p=2, bounds=(0, 7, 10))          # e.g. from a METIS partition
    >>> M.block_rows(10, 0), M.owner([6, 7], 10).tolist()
    ((0, 7), [0, 1])
    """

    kind: str
    p: int = 1
    c: int = 1
    replicated: bool = False
    bounds: tuple = None

    def __repr__(self):
        extra = "" if self.bounds is None else f", bounds={self.bounds}"
        return (f"Layout(kind={self.kind!r}, p={self.p}, c={self.c}, "
                f"replicated={self.replicated}{extra})")

    def __post_init__(self):
        func = "Layout"
        if self.kind not in _KINDS:
            fail(LayoutError, func, "kind", f"one of {_KINDS}", repr(self.kind))
        p = as_int(func, "p", self.p, minimum=1)
        c = as_int(func, "c (replication)", self.c, minimum=1)
        if self.kind in ("local", "1d") and c != 1:
            fail(LayoutError, func, "replication", f"1 for layout {self.kind!r} (use '1.5d')", c)
        if self.kind == "local" and p != 1:
            fail(LayoutError, func, "p", "1 for a local layout", p)
        if p % c:
            fail(LayoutError, func, "replication",
                 f"a divisor of the number of ranks p = {p}", c)
        if self.bounds is not None:
            b = self.bounds
            want = f"{p // c + 1} non-decreasing row boundaries from 0 (one block per process row)"
            if not isinstance(b, (tuple, list, np.ndarray)) or len(b) != p // c + 1:
                fail(LayoutError, func, "bounds", want, describe(b))
            b = tuple(as_int(func, "bounds", x, minimum=0) for x in b)
            if b[0] != 0 or any(x > y for x, y in zip(b, b[1:])):
                fail(LayoutError, func, "bounds", want, describe(b))
            object.__setattr__(self, "bounds", b)

    @property
    def grid_rows(self):
        """Number of process rows (= number of row blocks), ``p / c``."""
        return self.p // self.c

    def position(self, rank):
        """(process row, process column) of a rank."""
        return divmod(rank, self.c)

    def _check_rows(self, n):
        if self.bounds is not None and self.bounds[-1] != n:
            fail(LayoutError, "Layout", "bounds",
                 f"boundaries of the matrix's {n} rows", f"boundaries of {self.bounds[-1]} rows")

    def block_rows(self, n, rank):
        """Global row range held by ``rank`` (all rows when replicated)."""
        if self.replicated or self.kind == "local":
            return 0, n
        self._check_rows(n)
        i = rank // self.c
        if self.bounds is not None:
            return self.bounds[i], self.bounds[i + 1]
        return chunk(n, self.grid_rows, i)

    def row_bounds(self, n):
        """The boundaries of the ``p/c`` row blocks of ``n`` rows (int64, ``p/c + 1``).

        Examples
        --------
        >>> from spla.layout import Layout
        >>> Layout("1d", p=3).row_bounds(10).tolist()
        [0, 4, 7, 10]
        """
        self._check_rows(n)
        if self.bounds is not None:
            return np.asarray(self.bounds, np.int64)
        return chunk_bounds(n, self.grid_rows)

    def owner(self, rows, n):
        """The block (process row) holding each global row of an ``n``-row matrix.

        Examples
        --------
        >>> import numpy as np
        >>> from spla.layout import Layout
        >>> Layout("1d", p=2, bounds=(0, 0, 4)).owner(np.array([0, 3]), 4).tolist()
        [1, 1]
        """
        # side='right' skips empty blocks: a row belongs to the last block
        # starting at or before it, which is the non-empty one.
        return np.searchsorted(self.row_bounds(n), np.asarray(rows), side="right") - 1


#: the distributed layout kinds a user passes as ``layout=``
DIST_KINDS = ("1d", "1.5d")


def layout_of(func, layout, p, replication, replicate_graph):
    """The ``Layout`` a user's arguments ask for on ``p`` ranks (pure, no MPI).

    Checks every argument with messages that name ``func`` and the user's
    argument names; the distributed factories run it inside
    ``spla.comm.collective_checks`` so that every rank raises together.

    Raises
    ------
    LayoutError
        ``layout`` is not '1d' or '1.5d'; ``replication`` does not divide
        ``p``, or is not 1 for '1d'.
    InvalidValue
        ``replication`` is not an integer >= 1; ``replicate_graph`` is not
        a bool (or 0/1).

    Examples
    --------
    >>> from spla.layout import layout_of
    >>> layout_of("f", "1.5d", 6, 2, False)
    Layout(kind='1.5d', p=6, c=2, replicated=False)
    >>> from spla.exceptions import LayoutError
    >>> try:
    ...     layout_of("f", "1.5d", 6, 4, False)
    ... except LayoutError as e:
    ...     print(e)
    f: argument 'replication' must be a divisor of the number of ranks p = 6; got 4
    """
    if not isinstance(layout, str) or layout not in DIST_KINDS:
        fail(LayoutError, func, "layout", " or ".join(repr(k) for k in DIST_KINDS),
             describe(layout))
    c = as_int(func, "replication", replication, minimum=1)
    if layout == "1d" and c != 1:
        fail(LayoutError, func, "replication", "1 for layout '1d' (use '1.5d')", c)
    if p % c:
        fail(LayoutError, func, "replication", f"a divisor of the number of ranks p = {p}", c)
    if not (isinstance(replicate_graph, (bool, np.bool_))
            or (isinstance(replicate_graph, (int, np.integer)) and replicate_graph in (0, 1))):
        fail(InvalidValue, func, "replicate_graph", "a bool", describe(replicate_graph))
    return Layout(layout, p=p, c=c, replicated=bool(replicate_graph))


def layout_code(L):
    """Integers that identify a layout, for checking that ranks agree on it.

    Examples
    --------
    >>> from spla.layout import Layout, layout_code
    >>> layout_code(Layout("1.5d", p=4, c=2))
    [1, 2, 0]
    """
    return [_KINDS.index(L.kind) - 1, L.c, int(L.replicated)]


def show_layout(values):
    """The inverse of ``layout_code`` for messages (a row of integers)."""
    kind, c, replicated = (int(v) for v in values)
    return (f"layout={_KINDS[kind + 1]!r}, replication={c}, "
            f"replicate_graph={bool(replicated)}")
