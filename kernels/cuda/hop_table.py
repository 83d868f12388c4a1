"""The fused hops' occurrence table: its slots, claims and lookups, and its reuse.

A bulk of fused hops (``kernels.cuda.hops``) records every occurrence of a
column ``v`` in a group ``g`` (a minibatch) in one table of int64 entries:
the earliest *sequence position* of the column in its group (the low
``POS_BITS`` bits) under the hop's *stamp* (the bits above).  A hop's stamp
is smaller than every earlier one's, so an atomic minimum overrides
whatever an earlier hop, or an earlier bulk, left in a slot, and no slot
needs clearing between hops.

The table is dense (``G * n`` slots, the slot of ``(g, v)`` its key) when
that fits ``DENSE_SLOTS``, else an open-addressing hash table of keys
beside the entries.  A dense table's slots are group-major (``g * n + v``)
or vertex-major (``v * G + g``), as ``TABLE_ORDER`` says.

Clearing a dense table is a write of ``8 G n`` bytes per bulk (2 GiB for
a bulk of 256 minibatches of a 2^20-vertex graph), which a caller that
samples bulk after bulk need not pay: given a ``kept`` holder (a dict the
caller keeps, e.g. with the graph), a bulk takes the table left there by
the last one and carries on with the stamps below its last, and puts it
back after its read.  Only when the stamps run out (``STAMP_TOP`` of them,
thousands of bulks) is it cleared again.
"""

import numpy as np
from numba import cuda

from kernels.common import hash_slot as _hash_slot
from kernels.cuda._util import _xp, device, full

hash_slot = device(_hash_slot)

#: A free slot of the hash table's keys.
EMPTY = np.int64(-1)
#: Sequence positions take the low 48 bits of an entry, the stamp the bits
#: above: at most ``STAMP_TOP + 1`` hops between two clearings of a table.
POS_BITS = 48
STAMP_TOP = (1 << (63 - POS_BITS)) - 2
#: An entry no hop has written (above every stamped one).
UNSET = np.int64(2 ** 63 - 1)
#: Dense tables up to this many slots (8 bytes each); hash tables beyond.
DENSE_SLOTS = 1 << 28
#: How a dense table lays its slots out: ``"group"`` (a group's columns
#: together) or ``"vertex"`` (a column's groups together).  The picks of a
#: bulk's minibatches meet on the same high-degree vertices, whose entries a
#: vertex-major table keeps in common memory sectors (fewer sectors a hop
#: touches, counted on the CPU by ``benchmarks/hop_table.py``), but whose
#: atomics then meet on fewer lines.  Which is faster is for a device to
#: measure (``benchmarks/hop_table.py --gpu``); the blocks are the same
#: either way.
TABLE_ORDER = "group"
#: Kept dense tables up to this share of the device's memory, or of cupy's
#: pool limit when one caps it (a larger one is cleared and allocated per
#: bulk, as without a holder).
KEEP_SHARE = 1 / 16
#: The keys of a ``kept`` holder: the table waiting for the next bulk, and
#: the device's memory in bytes (asked once).
_KEPT = "occurrence_table"
_TOTAL = "device_bytes"


@cuda.jit(device=True)
def table_key(g, v, n, G, by_vertex):
    """The key of column ``v`` in group ``g`` (a dense table's slot), for ``G``
    groups of columns in ``[0, n)``: vertex-major or group-major."""
    if by_vertex != 0:
        return v * G + g
    return g * n + v


@cuda.jit(device=True)
def claim(keys, bits, key):
    """The table slot of ``key``, taken for it if free (dense: the key itself);
    -1 when the table is full (a bulk that outgrew its estimated sizes)."""
    if keys.size == 0:
        return key
    mask = (np.int64(1) << bits) - 1
    s = hash_slot(key, bits)
    for _ in range(keys.size):
        k = cuda.atomic.cas(keys, s, EMPTY, key)
        if k == EMPTY or k == key:
            return s
        s = (s + 1) & mask
    return -1


@cuda.jit(device=True)
def find(keys, bits, key):
    """The table slot holding ``key`` (claimed earlier in the hop), or -1."""
    if keys.size == 0:
        return key
    mask = (np.int64(1) << bits) - 1
    s = hash_slot(key, bits)
    for _ in range(keys.size):
        if keys[s] == key:
            return s
        s = (s + 1) & mask
    return -1


class Table:
    """One bulk's occurrence table: ``keys`` (empty when dense), ``tags`` (the
    entries), ``bits`` (the hash table's size), ``by_vertex`` (the dense slot
    order, an int64 flag for the kernels) and ``top``, the next hop's stamp."""

    __slots__ = ("keys", "tags", "bits", "by_vertex", "top")

    def __init__(self, keys, tags, bits, by_vertex):
        self.keys, self.tags, self.bits, self.by_vertex = keys, tags, bits, by_vertex
        self.top = STAMP_TOP

    @property
    def dense(self):
        return self.keys.size == 0

    def serves(self, slots, hops):
        """Whether this table can go on serving ``hops`` more hops over ``slots``
        dense slots without a clear (a hash table's claimed keys cannot)."""
        return self.dense and self.tags.size >= slots and self.top + 1 >= hops

    def next_stamp(self):
        """The next hop's stamp (high bits of its entries), below every earlier one."""
        if self.top < 0:
            raise RuntimeError("hop_table: more hops than stamps; the table was not cleared")
        stamp = np.int64(self.top << POS_BITS)
        self.top -= 1
        return stamp


def table_for(xp, G, n, hops, distinct, table=None, kept=None):
    """The occurrence table of a bulk of ``hops`` hops over ``G`` groups.

    Parameters
    ----------
    xp : module
        cupy (or its stand-in).
    G, n : int
        Groups, and columns (vertices) per group.
    hops : int
        The hops the table must serve (their stamps), at most ``STAMP_TOP + 1``.
    distinct : int
        An upper bound of the (group, column) pairs of the bulk (sizes a hash table).
    table : {None, 'dense', 'hash'}
        Force the kind (tests); None: dense up to ``DENSE_SLOTS`` slots.
    kept : dict, optional
        The caller's holder: a dense table left there by an earlier bulk (large
        enough, with ``hops`` stamps left) is taken and not cleared; ``give_back``
        returns it after the bulk.

    Returns
    -------
    Table
    """
    by_vertex = np.int64(TABLE_ORDER == "vertex")
    if table == "dense" or (table is None and G * n <= DENSE_SLOTS):
        found = kept.pop(_KEPT, None) if kept is not None else None
        if found is not None and found.serves(G * n, hops):
            found.by_vertex = by_vertex  # stale entries of either order lose to new stamps
            return found
        return Table(xp.empty(0, np.int64), full(xp, G * n, UNSET, np.int64), 0, by_vertex)
    bits = 4
    while (1 << bits) < 2 * min(distinct, G * n):
        bits += 1
    return Table(full(xp, 1 << bits, EMPTY, np.int64), full(xp, 1 << bits, UNSET, np.int64),
                 bits, by_vertex)


def give_back(tab, kept):
    """Leave a dense table in ``kept`` for the next bulk (after this bulk's read:
    no kernel of it still runs), unless it is over ``KEEP_SHARE`` of the
    device's memory or a larger one is there."""
    if kept is None or tab is None or not tab.dense:
        return
    total = kept.get(_TOTAL)
    if total is None:
        total = kept[_TOTAL] = _device_total(_xp(tab.tags))
    if tab.tags.nbytes > KEEP_SHARE * total:
        return
    there = kept.get(_KEPT)
    if there is None or there.tags.size <= tab.tags.size:
        kept[_KEPT] = tab


def _device_total(xp):
    """The device's memory in bytes (cupy's ``Device().mem_info``), or cupy's
    memory pool limit when one is set and lower (a device-memory cap: a kept
    table must not crowd out what the cap leaves the rest of the job)."""
    device_ = getattr(getattr(xp, "cuda", None), "Device", None)
    total = int(device_().mem_info[1]) if device_ is not None else 1 << 40
    pool = getattr(xp, "get_default_memory_pool", None)
    limit = getattr(pool(), "get_limit", None) if pool is not None else None
    cap = int(limit()) if limit is not None else 0
    return min(total, cap) if cap > 0 else total
