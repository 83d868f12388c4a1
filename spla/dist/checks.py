"""The argument checks that the entry points of ``spla.dist`` share.

Each ``fail``s with the entry point's name (``func``); those marked
*Collective* agree between the ranks (``spla.comm.check_same``).  The entry
points (``spla.dist.core``) call them inside ``spla.comm.collective_checks``
before their first message.
"""

import dataclasses
import numbers

import numpy as np

from spla import comm as C
from spla.backend import to_host
from spla.checks import as_index_array, as_shape, describe, fail, xp_array
from spla.dist.fetch import STRATEGIES
from spla.exceptions import (DimensionMismatch, DTypeError, IndexOutOfRange, InvalidValue,
                             LayoutError)
from spla.layout import layout_code, show_layout
from spla.partition import Partition

_INT64_MAX = 2 ** 63 - 1


def check_strategy(func, strategy):
    if not (isinstance(strategy, str) and strategy in STRATEGIES):
        fail(InvalidValue, func, "strategy", " or ".join(repr(s) for s in STRATEGIES),
             describe(strategy))


def as_rows(func, rows, n):
    """Distinct ascending host int64 row ids, each in ``[0, n)``."""
    if isinstance(rows, (list, tuple)) and rows and all(
            isinstance(r, numbers.Integral) and not isinstance(r, bool) for r in rows):
        # Python ints may exceed int64 (numpy would make an object array
        # or raise OverflowError): range-check them before converting.
        lo, hi = min(rows), max(rows)
        if lo < 0 or hi >= n:
            fail(IndexOutOfRange, func, "rows", f"row ids in [0, {n})", lo if lo < 0 else hi)
    _, a = xp_array(rows)
    if a.dtype == object:
        fail(DTypeError, func, "rows", "integer row ids", describe(rows))
    a = as_index_array(func, "rows", a, bound=n)
    return np.unique(to_host(a))


def as_dist_shape(func, shape):
    """``(n, m)``: a shape whose dimensions fit int64."""
    n, m = as_shape(func, shape)
    for arg, v in (("shape[0]", n), ("shape[1]", m)):
        if v > _INT64_MAX:
            fail(InvalidValue, func, arg, "an integer below 2**63", v)
    return n, m


def agree_layout(func, comm, L):
    C.check_same(comm, func, "layout/replication/replicate_graph", layout_code(L),
                 show=show_layout)


def show_meta(v):
    n, m, nnz, code = (int(x) for x in v)
    dt = C.code_dtype(code)
    return f"shape ({n}, {m}), nnz {nnz}, dtype {'structural' if dt is None else dt}"


def check_partition_type(func, partition):
    if partition is not None and not isinstance(partition, Partition):
        fail(DTypeError, func, "partition", "a spla.partition.Partition or None",
             describe(partition))


def partitioned(func, comm, L, partition, n, m):
    """Collective: ``L`` with the row blocks of ``partition`` (agreed by every rank).

    ``n, m`` is the agreed global shape.  Ranks must all pass a partition,
    the same one, or all pass None.
    """
    with C.collective_checks(comm):
        if partition is not None:
            # The partition places rows only (columns keep their ids), so a
            # rectangular matrix, a relation between two vertex types, is
            # placed by a partition of its row type.
            if partition.n != n:
                fail(DimensionMismatch, func, "partition",
                     f"a Partition of the matrix's {n} rows", f"one of {partition.n}")
            if not L.replicated and partition.parts != L.grid_rows:
                fail(LayoutError, func, "partition",
                     f"a Partition in p/c = {L.grid_rows} parts (one per process row)",
                     f"{partition.parts} parts")
    code = [-1, -1, 0] if partition is None else [partition.n, partition.parts,
                                                  partition.fingerprint()]
    C.check_same(comm, func, "partition", code, show=show_partition)
    if partition is None or L.replicated:
        return L
    return dataclasses.replace(L, bounds=tuple(int(b) for b in partition.bounds))


def show_partition(v):
    n, parts, digest = (int(x) for x in v)
    if n < 0:
        return "no partition"
    return f"a partition of {n} vertices in {parts} parts (fingerprint {digest:#x})"


__all__ = ["check_strategy", "as_rows", "as_dist_shape", "agree_layout", "show_meta",
           "check_partition_type", "partitioned", "show_partition"]
