"""Fused node-wise hops on the GPU: sample, relabel and emit blocks without host reads.

One hop of node-wise sampling, for ``G`` stacked groups of frontier vertices
(one group per minibatch), computes what ``sample_rows`` of the row
selection ``Q @ A`` followed by ``compact_columns_blockwise`` computes: per
row ``i`` (vertex ``v`` of group ``g``) up to ``W`` picks of row ``v`` of A,
keyed by ``row_key(seed, stream, group_ids[g] * n + v)``; then, per group,
the frontier's vertices followed by the picked columns in order of first
appearance become the group's new columns.  Here that is four device steps
per hop and no host read:

1. ``_hop_sample`` (a thread per row) draws the row's picks with the very
   ``kernels.its.sample_one_row`` the CPU kernels call, into ``W`` padded
   slots, and records each occurrence of a column in a table keyed by
   ``(group, column)``: an atomic minimum keeps the earliest *sequence
   position* of the column in its group.  A group's sequence positions are
   laid out as ``compact_columns_blockwise`` orders them: its rows' own
   vertices first, then each row's slots, row by row.
2. ``_hop_flags`` (a thread per sequence position) marks each occurrence
   that is its column's first (a *head*) and each real pick, packed in one
   int64 per sequence position (heads in the low 32 bits, picks in the
   high 32).
3. One inclusive scan of those flags numbers, at once, every head within
   the bulk (its new column) and every pick (its entry in the output CSR).
4. ``_hop_emit`` (a thread per row) writes the block's row pointers (local to
   each group), its local column ids sorted within the row, the next
   frontier (the heads' columns, group by group) and the per-group pointers.

Step 2 gives a thread to each sequence position rather than to each row:
its work per position is a random read of the table, and a row's ``W``
such reads in one thread would each wait for the last (on an H200, 2.4 to
2.6 times less time for this step in bulks of 1 to 256).  Step 4 keeps a
thread per row, which also sorts the row: a thread per position followed
by a sorting step took longer in all, at every bulk size measured
(``docs/design.rst``).

The table (``kernels.cuda.hop_table``) is either dense (``G * n`` slots,
one per (group, column)) or an open-addressing hash table; a hop's entries
carry a stamp in their high bits that is smaller than every earlier hop's,
so the atomic minimum overrides the last hop's entry and one table serves
all hops of a bulk, and a caller's later bulks, cleared once.

Outputs are sized before the bulk starts, so nothing waits on the device
between hops; the true sizes (the per-group pointers of every hop) come
back in one read at the end.  The sizes are either upper bounds (``W``
slots per row; at most ``rows * (W + 1)`` distinct columns per hop, and
``n`` per group) or, given the frontier growth of an earlier bulk, that
growth with a margin: the bounds are several times the true frontiers
after a few hops, and the scans, tables and grids sized by them are what
a large bulk spends most of its GPU time on.  A bulk that outgrows the
estimate (a frontier, the next frontier or the hash table) raises a flag
on the device, read with the sizes, and runs again at the bounds.  When the bounds would not fit in the device's memory the driver
reads each hop's frontier size instead (one read per hop) and sizes the
next hop exactly.
"""

import contextlib

import numpy as np
from numba import cuda

from kernels import its as _its
from kernels.common import BAD_RANGE, BAD_REPEAT, BadSeeds
from kernels.common import lower_bound as _lower_bound
from kernels.common import row_key as _row_key
from kernels.common import sort_pairs_inplace as _sort_pairs
from kernels.common import sort_range as _sort_range
from kernels.cuda._util import SIM, _xp, device, full, launch, scan, to_host, upload
from kernels.cuda.hop_table import claim as _claim
from kernels.cuda.hop_table import find as _find
from kernels.cuda.hop_table import table_key as _table_key
from kernels.cuda import hop_table

sample_one_row = device(_its.sample_one_row)
row_key = device(_row_key)
lower_bound = device(_lower_bound)
sort_pairs = device(_sort_pairs)
sort_range = device(_sort_range)
_slots = device(_its.slots)
row_draw_params = device(_its.row_draw_params)

#: The largest number of hops of one bulk (``stream_of`` keys at most 256 layers).
MAX_HOPS = 255
#: The low half of a packed flag (heads); the high half counts picks.
LOW = np.int64(2 ** 32 - 1)
PICK = np.int64(2 ** 32)
#: Slots per row above which the fused hop is not used (a row's picks are
#: sorted by one thread).
MAX_SLOTS = 1024
#: The hops check their seeds as they go, their range and their repeats
#: (``BadSeeds``): a caller need not read them back before a bulk.
CHECKS_SEED_REPEATS = True
CHECKS_SEED_RANGE = True


@cuda.jit(device=True)
def _group(gp, i):
    """The group holding row ``i`` (``gp`` the groups' row pointer)."""
    return lower_bound(gp, 0, gp.size, i + 1) - 1


@cuda.jit(cache=True)
def _hop_sample(fr, gp, gid, n, a_indptr, a_indices, a_values, a_has_values, a_prefix,
                a_positives, a_modes, k, W, seed, stream, replace, value_mode, keys, tags,
                bits, by_vertex, stamp, col, pv, ncnt, over, bad):
    """Step 1: each row's picks (columns, values) into its ``W`` slots, and
    every occurrence into the table (earliest sequence position wins).
    A frontier larger than the capacity (``ncnt.size`` rows) sets ``over``;
    a vertex outside ``[0, n)`` (a bad seed) sets bit 1 of ``bad`` and
    ``over``, so that no later step runs."""
    G = gp.size - 1
    F = gp[G]
    if over[0] != 0:
        return
    if F > ncnt.size:
        over[0] = 1
        return
    hv = a_has_values != 0
    rep = replace != 0
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, F, stride):
        g = _group(gp, i)
        v = fr[i]
        if v < 0 or v >= n:
            cuda.atomic.or_(bad, 0, BAD_RANGE)
            over[0] = 1
            continue
        lo, hi, p, m = row_draw_params(v, a_indptr, hv, a_positives, a_modes)
        cnt = _slots(k, p, rep)
        o = i * W
        if cnt:
            key = np.uint64(row_key(seed, stream, gid[g] * n + v))
            sample_one_row(col, o, cnt, lo, hi, a_values, hv, a_prefix, m, p, key, rep)
        d = cnt
        if rep:
            # Sorted positions: repeats are adjacent; fold them into counts.
            d = 0
            for t in range(cnt):
                q = col[o + t]
                if d > 0 and q == col[o + d - 1]:
                    pv[o + d - 1] += 1
                else:
                    col[o + d] = q
                    pv[o + d] = 1
                    d += 1
        base = gp[g] * (W + 1)
        size = gp[g + 1] - gp[g]
        r = i - gp[g]
        ncnt[i] = d
        s = _claim(keys, bits, _table_key(g, v, n, G, by_vertex))
        if s < 0:
            over[0] = 1
            return
        cuda.atomic.min(tags, s, stamp + base + r)
        ent = base + size + r * W
        for t in range(d):
            q = col[o + t]
            if value_mode == 1:
                pv[o + t] = a_values[q]
            c = np.int64(a_indices[q])
            col[o + t] = c
            s = _claim(keys, bits, _table_key(g, c, n, G, by_vertex))
            if s < 0:
                over[0] = 1
                return
            cuda.atomic.min(tags, s, stamp + ent + t)


@cuda.jit(cache=True)
def _hop_flags(fr, gp, n, W, cap, keys, tags, bits, by_vertex, stamp, col, ncnt, hpos, flags,
               over, bad):
    """Step 2: the packed head and pick flags of every sequence position
    (zero past the last row, up to the capacity the scan covers), and each
    pick's head position.  A thread per sequence position, not per row:
    each position's table lookup is a random read, and a row's ``W`` of
    them in one thread would wait on each other.  A frontier vertex that
    is not its column's head appeared earlier in its group: a repeated seed
    (bit 2 of ``bad``; the later hops' frontiers are distinct by
    construction)."""
    if over[0] != 0:
        return
    G = gp.size - 1
    F = gp[G]
    w1 = W + 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for q in range(start, cap * w1, stride):
        if q >= F * w1:
            flags[q] = 0
            continue
        g = _group(gp, q // w1)
        base = gp[g] * w1
        size = gp[g + 1] - gp[g]
        off = q - base
        if off < size:  # the group's row ``off``: its own vertex
            i = gp[g] + off
            c = fr[i]
        else:
            r = (off - size) // W
            t = off - size - r * W
            i = gp[g] + r
            if t >= ncnt[i]:
                flags[q] = 0
                continue
            c = col[i * W + t]
        s = _find(keys, bits, _table_key(g, c, n, G, by_vertex))
        if s < 0:
            over[0] = 1
            return
        h = tags[s] - stamp
        if off < size:
            flags[q] = 1 if h == q else 0
            if h != q:
                cuda.atomic.or_(bad, 0, BAD_REPEAT)
        else:
            hpos[i * W + t] = h
            flags[q] = (1 if h == q else 0) + PICK


@cuda.jit(cache=True)
def _hop_emit(fr, gp, W, col, pv, has_vals, ncnt, hpos, flags, incl, bptr, bidx, bval,
              kept, kp, ep, over):
    """Step 4: the block (local row pointers, local column ids sorted per
    row, values), the next frontier (heads' columns) and the group pointers.
    More heads than ``kept`` holds sets ``over``."""
    if over[0] != 0:
        return
    G = gp.size - 1
    F = gp[G]
    w1 = W + 1
    with_vals = has_vals != 0
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, F, stride):
        g = _group(gp, i)
        base = gp[g] * w1
        size = gp[g + 1] - gp[g]
        r = i - gp[g]
        x0 = incl[base] - flags[base]
        k0 = x0 & LOW
        e0 = x0 >> 32
        sp = base + r
        if flags[sp] & LOW:
            nid = (incl[sp] - flags[sp]) & LOW
            if nid >= kept.size:
                over[0] = 1
                return
            kept[nid] = fr[i]
        ent = base + size + r * W
        e = (incl[ent] - flags[ent]) >> 32
        bptr[i + g] = e - e0
        o = i * W
        d = ncnt[i]
        for t in range(d):
            h = hpos[o + t]
            nid = (incl[h] - flags[h]) & LOW
            if h == ent + t:
                if nid >= kept.size:
                    over[0] = 1
                    return
                kept[nid] = col[o + t]
            bidx[e + t] = nid - k0
            if with_vals:
                bval[e + t] = pv[o + t]
        if with_vals:
            sort_pairs(bidx, bval, e, e + d)
        else:
            sort_range(bidx, e, e + d)
        if r == 0:
            kp[g] = k0
            ep[g] = e0
        if r == size - 1:
            x1 = incl[base + size * w1 - 1]
            bptr[gp[g + 1] + g] = (x1 >> 32) - e0
            if g == G - 1:
                kp[G] = x1 & LOW
                ep[G] = x1 >> 32


def fusable(ks, replace=False, weighted=False, n=0):
    """Whether hops drawing ``ks`` picks per row run fused (each in [1, MAX_SLOTS]).

    Every draw (uniform or weighted, with replacement or not), on any graph
    (``n``, its vertices), runs fused.
    """
    return 0 < len(ks) <= MAX_HOPS and all(1 <= int(k) <= MAX_SLOTS for k in ks)


def _caps(F0, G, n, ks):
    """Upper bounds of each hop's frontier size (the last is the final sources')."""
    caps = [int(F0)]
    for k in ks:
        caps.append(min(caps[-1] * (int(k) + 1), G * n))
    return caps


def _bytes(caps, ks, G, idx_bytes, val_bytes):
    """Bytes the hops' arrays take at the capacities ``caps``."""
    total = 0
    for h, k in enumerate(ks):
        F, W = caps[h], int(k)
        total += F * W * (8 + 8 + idx_bytes + 2 * val_bytes)  # col, hpos, bidx, pv, bval
        total += F * (W + 1) * 16 + F * 8 + (F + G) * 8 + caps[h + 1] * 8
    return total


#: Capacities from a previous bulk's growth: ``MARGIN`` times the frontier
#: that growth predicts, plus ``SLACK`` rows per group.
MARGIN = 1.25
SLACK = 64


def _estimated(bounds, growth, G):
    """Per-hop capacities predicted by ``growth`` (with a margin), within ``bounds``."""
    if growth is None or len(growth) != len(bounds) - 1:
        return bounds
    caps = [bounds[0]]
    for h, r in enumerate(growth):
        guess = int(caps[-1] * max(float(r), 0.0) * MARGIN) + SLACK * G
        caps.append(max(1, min(bounds[h + 1], guess)))
    return caps


def sample_hops(a_indptr, a_indices, a_values, a_has_values, a_prefix, a_positives, a_modes,
                nodes, ptr, group_ids, ks, seed, streams, replace, value_mode, value_dtype,
                index_dtype, budget=None, table=None, growth=None, kept=None):
    """Fused node-wise hops; see the module docstring.

    Parameters
    ----------
    a_indptr, a_indices, a_values, a_has_values, a_prefix, a_positives, a_modes
        The graph A (n x n) as the fused sampler reads it (``a_values``,
        ``a_prefix``, ``a_positives`` and ``a_modes`` empty for uniform
        draws).
    nodes : int64 device array
        The stacked seeds, group by group (distinct within a group).
    ptr : int64 numpy array, shape (G + 1,)
        The groups' pointer (host); every group non-empty.
    group_ids : int64 numpy array, shape (G,)
        Each group's id (the row ids ``group_ids[g] * n + v`` key the draws).
    ks : sequence of int
        Picks per row of each hop, each in ``[1, MAX_SLOTS]``.
    seed : uint64
    streams : sequence of uint64, one per hop
    replace : bool
    value_mode : int
        0: no values; 1: the picked entries' values (``a_values``); 2: the
        number of draws of each pick (``replace``), as ``value_dtype``.
    value_dtype, index_dtype : numpy dtype
        Of the blocks' values and local column ids.
    budget : int, optional
        Bytes the bound-sized arrays may take (default: half the device's
        free memory); beyond, each hop's size is read back.
    table : {None, 'dense', 'hash'}
        Force the occurrence table's kind (tests).
    growth : sequence of float, optional
        Each hop's frontier growth (next frontier / frontier) in an earlier
        bulk, as returned.  The arrays are then sized for that growth with
        a margin instead of for the worst case (far smaller scans, tables
        and grids); a bulk that outgrows them is detected on the device and
        run again at the worst-case sizes, so the blocks never depend on it.
    kept : dict, optional
        A holder the caller keeps between bulks (e.g. with the graph): a
        dense occurrence table is taken from it and left there after the
        bulk, so that the next bulk need not clear one
        (``kernels.cuda.hop_table``).  Bulks in flight at once (other
        threads, queued bulks) each hold their own table meanwhile.

    Returns
    -------
    hops : list of tuple
        Per hop ``(bptr, bidx, bval, dst, dst_ptr, src, src_ptr, entry_ptr)``:
        device arrays (``bval`` None without values) and host int64
        pointers.  Block ``g`` is ``bptr[dst_ptr[g] + g : dst_ptr[g + 1] + g
        + 1]`` (its row pointer), ``bidx[entry_ptr[g]:entry_ptr[g + 1]]``
        (local column ids) and the same range of ``bval``; its destination
        vertices ``dst[dst_ptr[g]:dst_ptr[g + 1]]``, its sources
        ``src[src_ptr[g]:src_ptr[g + 1]]``.
    growth : list of float
        This bulk's growth per hop (for the next bulk's ``growth``).
    """
    return launch_hops(a_indptr, a_indices, a_values, a_has_values, a_prefix, a_positives,
                       a_modes, nodes, ptr, group_ids, ks, seed, streams, replace, value_mode,
                       value_dtype, index_dtype, budget=budget, table=table,
                       growth=growth, kept=kept).finish()


def launch_hops(a_indptr, a_indices, a_values, a_has_values, a_prefix, a_positives, a_modes,
                nodes, ptr, group_ids, ks, seed, streams, replace, value_mode, value_dtype,
                index_dtype, budget=None, table=None, growth=None, kept=None):
    """``sample_hops``'s launches, without its read: a ``LaunchedHops``.

    The arguments are ``sample_hops``'s.  The bulk's kernels are queued on
    the device and the call returns; ``finish()`` then reads the sizes back
    (the bulk's one blocking read) and returns what ``sample_hops`` returns.
    Between the two the host is free: a caller that launches the next bulk
    before finishing this one keeps the device busy while it works on this
    bulk's blocks.  (Bounds too large for the device's memory size each hop
    exactly, which reads each hop's size here.)
    """
    xp = _xp(a_indptr)
    n = a_indptr.size - 1
    G = ptr.size - 1
    bounds = _caps(int(ptr[G]), G, n, ks)
    has_vals = value_mode != 0
    val_bytes = np.dtype(value_dtype).itemsize if has_vals else 0
    idx_bytes = np.dtype(index_dtype).itemsize
    if budget is None:
        budget = _free_bytes(xp) // 2
    args = (a_indptr, a_indices, a_values, a_has_values, a_prefix, a_positives, a_modes,
            nodes, ptr, group_ids, ks, seed, streams, replace, value_mode, value_dtype,
            index_dtype)
    exact = _bytes(bounds, ks, G, idx_bytes, val_bytes) > budget
    caps = _estimated(bounds, growth, G)
    stream = _current_stream(xp)
    if caps != bounds and _bytes(caps, ks, G, idx_bytes, val_bytes) <= budget:
        raw, flat, tab = _run(*args, caps=caps, exact=False, table=table, kept=kept)
        return LaunchedHops(raw, flat, ptr, stream, tab, kept, (args, bounds, exact, table))
    raw, flat, tab = _run(*args, caps=bounds, exact=exact, table=table, kept=kept)
    return LaunchedHops(raw, flat, ptr, stream, tab, kept, None)


def _current_stream(xp):
    """cupy's current stream (the launches' stream), or None for a stand-in without one."""
    get = getattr(getattr(xp, "cuda", None), "get_current_stream", None)
    return get() if get is not None else None


class LaunchedHops:
    """A bulk of fused hops queued on the device (``launch_hops``); ``finish()``
    reads its sizes back and returns ``(hops, growth)`` as ``sample_hops``.

    ``finish()`` reads on the stream the bulk was launched on, so it may be
    called from another thread or outside the launch's stream context.
    """

    def __init__(self, raw, flat, ptr, stream, tab, kept, rerun):
        self._raw, self._flat, self._ptr, self._stream = raw, flat, ptr, stream
        self._tab, self._kept = tab, kept
        # (arguments, bounds, exact, table) when the sizes are an estimate
        # that the bulk may outgrow: it then runs again at the bounds.
        self._rerun = rerun

    def finish(self):
        with self._stream if self._stream is not None else contextlib.nullcontext():
            return self._finish()

    def _finish(self):
        raw, host, tab = self._raw, to_host(self._flat), self._tab
        self._raw = self._flat = self._tab = None
        try:
            _refuse_bad_seeds(host)
            if host[-1] and self._rerun is not None:
                del raw  # outgrown: the worst-case sizes (a dense table carries on)
                args, bounds, exact, table = self._rerun
                raw, flat, tab = _run(*args, caps=bounds, exact=exact, table=table, tab=tab)
                host = to_host(flat)
                _refuse_bad_seeds(host)
        finally:  # read back: no kernel of the bulk uses the table any more
            hop_table.give_back(tab, self._kept)
        return _trimmed(raw, host, self._ptr)


def _refuse_bad_seeds(host):
    """Raise ``kernels.common.BadSeeds`` when the kernels flagged a seed (``host[-2]``)."""
    if host[-2]:
        raise BadSeeds(int(host[-2]))





def _run(a_indptr, a_indices, a_values, a_has_values, a_prefix, a_positives, a_modes, nodes,
         ptr, group_ids, ks, seed, streams, replace, value_mode, value_dtype, index_dtype, *,
         caps, exact, table, kept=None, tab=None):
    """The hops' launches at capacities ``caps``: (raw outputs, the device array of
    their sizes, bad-seed and overflow flags, to read back once, and the
    occurrence table: ``tab`` when it is a dense one with stamps left, else
    one from ``hop_table.table_for``)."""
    xp = _xp(a_indptr)
    n = a_indptr.size - 1
    G = ptr.size - 1
    L = len(ks)
    has_vals = value_mode != 0
    if tab is None or not tab.serves(G * n, L):
        tab = hop_table.table_for(xp, G, n, L, sum(caps[1:]), table, kept)
    keys, tags, bits, by_vertex = tab.keys, tab.tags, np.int64(tab.bits), tab.by_vertex
    # Every hop's group pointers, the bad-seed flag and, last, the overflow
    # flag: one read.
    flat = full(xp, L * 2 * (G + 1) + 2, 0, np.int64)
    sizes = flat[:-2].reshape(L, 2, G + 1)
    bad = flat[-2:-1]
    over = flat[-1:]
    gp, gid = upload(xp, ptr, group_ids)
    empty_v = xp.empty(0, value_dtype if has_vals else np.float32)
    fr = nodes
    cap = caps[0]
    raw = []
    for h, k in enumerate(ks):
        W = int(k)
        w1 = W + 1
        stamp = tab.next_stamp()
        col = xp.empty(cap * W, np.int64)
        pv = xp.empty(cap * W, value_dtype) if has_vals else empty_v
        ncnt = xp.empty(cap, np.int64)
        launch(_hop_sample, cap, fr, gp, gid, np.int64(n), a_indptr, a_indices, a_values,
               np.int64(a_has_values), a_prefix, a_positives, a_modes, np.int64(W),
               np.int64(W), np.uint64(seed), np.uint64(streams[h]), np.int64(replace),
               np.int64(value_mode),
               keys, tags, bits, by_vertex, stamp, col, pv, ncnt, over, bad)
        hpos = xp.empty(cap * W, np.int64)
        flags = xp.empty(cap * w1, np.int64)
        launch(_hop_flags, cap * w1, fr, gp, np.int64(n), np.int64(W), np.int64(cap), keys, tags,
               bits, by_vertex, stamp, col, ncnt, hpos, flags, over, bad)
        incl = scan(xp, flags)
        next_cap = caps[h + 1] if not exact else min(cap * w1, G * n)
        bptr = xp.empty(cap + G, np.int64)
        bidx = xp.empty(cap * W, index_dtype)
        bval = xp.empty(cap * W, value_dtype) if has_vals else empty_v
        kept = xp.empty(next_cap, np.int64)
        kp = sizes[h, 0]
        launch(_hop_emit, cap, fr, gp, np.int64(W), col, pv, np.int64(has_vals), ncnt, hpos,
               flags, incl, bptr, bidx, bval, kept, kp, sizes[h, 1], over)
        raw.append((bptr, bidx, bval if has_vals else None, fr, kept))
        fr, gp = kept, kp
        if exact and h + 1 < L:
            cap = int(to_host(kp[G:])[0])
        else:
            cap = next_cap
    return raw, flat, tab


def _trimmed(raw, flat, ptr):
    """Each hop's arrays cut to their true sizes (``flat``: the sizes read back once),
    and each hop's growth."""
    G = ptr.size - 1
    host = flat[:-2].reshape(len(raw), 2, G + 1)
    growth = []
    hops = []
    dst_ptr = np.asarray(ptr, np.int64)
    dst = raw[0][3][:dst_ptr[G]] if raw else None
    for h, (bptr, bidx, bval, _fr, src) in enumerate(raw):
        src_ptr, entry_ptr = host[h, 0], host[h, 1]
        # The next hop's destinations are this hop's sources: the same view.
        src = src[:src_ptr[G]]
        hops.append((bptr, bidx, bval, dst, dst_ptr, src, src_ptr, entry_ptr))
        growth.append(int(src_ptr[G]) / max(int(dst_ptr[G]), 1))
        dst, dst_ptr = src, src_ptr
    return hops, growth


def _free_bytes(xp):
    """Free device memory, counting what cupy's pool holds for reuse."""
    if SIM or xp is np or not hasattr(xp, "cuda"):
        return 1 << 40
    free, _total = xp.cuda.Device().mem_info
    return int(free) + int(xp.get_default_memory_pool().free_bytes())
