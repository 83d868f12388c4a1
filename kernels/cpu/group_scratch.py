"""Scratch of the per-group kernels (``kernels.cpu.groups``): column maps and row order.

A worker of ``compact_groups`` or ``extract_groups`` maps a group's columns
to local ids through a tag array over all the columns or a hash table of
the group's (``scratch``; ``DENSE_FACTOR`` decides), takes a share of the
groups (``group_bounds``), and puts each output row's kept entries in column
order (``order_row``).  ``kernels.cpu.groups`` re-exports ``DENSE_FACTOR``.
"""

import numba
import numpy as np

from kernels.common import clear_table, pop_set_bits, set_bit, sort_pairs, table_bits, zero_bitmap


@numba.njit(cache=True, nogil=True)
def group_bounds(n_groups, parts):
    parts = max(1, min(n_groups, parts))
    b = np.empty(parts + 1, np.int64)
    for c in range(parts + 1):
        b[c] = (n_groups * c) // parts
    return b


#: A worker relabels through a dense tag array over the input columns, rather
#: than a hash table, when its largest group's work is at least
#: ``ncols / DENSE_FACTOR``: then the tag array (4 bytes a column) is no
#: larger than ``4 * DENSE_FACTOR`` bytes per unit of work, needs no clearing
#: between groups (``extract_groups`` reads a tag only for a column in the
#: bitmap of the current group's columns, ``compact_groups``' tags carry a
#: count of the earlier groups' columns), and its random
#: accesses span no more memory than a hash table for that group would (16
#: bytes a slot, half empty).  Hashing a large group's entries (the third hop
#: of bulk GraphSAGE) is what made relabelling the slowest step; small groups
#: keep their cache-resident hash tables.
DENSE_FACTOR = 8


@numba.njit(cache=True, inline="always")
def dense_map(work, ncols):
    """Whether a worker of this ``work`` maps columns by a tag array over
    all ``ncols`` (see ``DENSE_FACTOR``) rather than by a hash table."""
    return work * DENSE_FACTOR >= ncols


@numba.njit(cache=True, inline="always")
def scratch(work, most, ncols):
    """A worker's column maps: ``(dense, tags, table, slot, marks)``.

    A tag array over the whole column space when the worker's ``work`` is
    within ``DENSE_FACTOR`` of it (one load per lookup), else a hash table
    for its ``most`` columns; ``slot`` holds the entry of each local column
    of the current row, and ``marks`` a bitmap of them, for rows keeping
    many of their group's columns (see ``order_row``).
    """
    dense = dense_map(work, ncols)
    # The tags are left unset: a tag is read only for a column of the current
    # group (set in the bitmap of its columns), after the group wrote it,
    # so no call pays for writing 4 bytes per column of a large graph.
    tags = np.empty(ncols if dense else 0, np.uint32)
    table = np.empty(0 if dense else np.int64(2) << table_bits(most), np.int64)
    return dense, tags, table, np.empty(most, np.int64), zero_bitmap(most)


@numba.njit(cache=True, inline="always")
def start_group(dense, tags, table, w, tag_base, tag_limit):
    """A worker's map made ready for a group of work ``w``: its hash table's
    first ``2**bits`` slots freed, or its tags refilled once the counts of
    the worker's columns (``tag_base``) would pass ``tag_limit``.  Returns
    ``(bits, tag_base)``."""
    bits = table_bits(w)
    if not dense:
        clear_table(table, bits)
    elif tag_base + np.uint64(w) >= np.uint64(tag_limit):
        tags[:] = 0
        tag_base = np.uint64(0)
    return bits, tag_base


@numba.njit(cache=True, inline="always")
def order_row(keys, vals, lo, hi, m, slot, marks):
    """Sort the kept entries ``keys[lo:hi]``: distinct local column ids in ``[0, m)``.

    A row keeping many of its group's ``m`` columns is placed by its ids
    through ``slot`` and a bitmap of them (``marks``, m bits, left zeroed),
    then read back in order, O(kept + m / 64) with no allocation; a row
    keeping few is sorted (``sort_pairs``).  Reading all ``m`` slots
    instead costs O(m) per row, which dominates when rows keep a small
    share of their group's columns (LADIES' second layer).
    """
    kept = hi - lo
    if kept <= 32 or m > 64 * kept:
        sort_pairs(keys, vals, lo, hi)
        return
    for t in range(lo, hi):
        slot[keys[t]] = vals[t]
        set_bit(marks, keys[t])
    pop_set_bits(marks, 0, m - 1, keys, lo)
    for t in range(lo, hi):
        vals[t] = slot[keys[t]]
