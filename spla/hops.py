"""Node-wise multi-hop sampling of stacked vertex groups: ``sample_hops``.

One hop is the composition the method describes, for the stacked frontier
of ``G`` groups (one group per minibatch of a bulk)::

    Q = selection(frontier)                       # a row per frontier vertex
    S = sample_rows(Q @ A, k, seed=seed, stream=streams[hop],
                    row_ids=group_id * n + frontier)
    adj, src, src_ptr = compact_columns_blockwise(S, ptr, first=frontier, first_ptr=ptr)

and the next hop's frontier is ``src``.  ``sample_hops`` runs all hops and
returns each one's diagonal blocks.  On a GPU it runs them fused (sample,
relabel and emit in a few launches per hop, ``kernels.cuda.hops``), with no
host read between hops and one at the end; on the CPU, uniform hops without
replacement on graphs of up to ``kernels.cpu.hops.FUSED_MAX_VERTICES``
vertices run fused too (each row's picks relabelled while in cache,
``kernels.cpu.hops``); the others, and distributed graphs, run the
composition above, operator by operator.  All give the same blocks.
"""

import numpy as np

from kernels.common import BadSeeds, Finished
from spla import backend
from spla.arrays import readonly
from spla.checks import as_int, as_u64, describe, fail, grouped_ids_stats, index_dtype
from spla.exceptions import DimensionMismatch, DTypeError, IndexOutOfRange, InvalidValue
from spla.matrix import Matrix
from spla.mxm import mxm
from spla.pending import Pending
from spla import semiring
from spla.sample import K_ALL, draw_arrays, sample_rows
from spla.structure import compact_columns_blockwise, split_blocks

#: A per-hop pick count meaning "every entry of the row" (PyG's -1).
ALL = -1
#: Bulks of at least this many groups size the fused hops by the last bulk's growth.
GROWTH_MIN_GROUPS = 4
#: ``Matrix._cache`` key of the fused hops' scratch kept between bulks.
HOP_SCRATCH = "hop_scratch"


def selection(vertices, n):
    """The structural ``len(vertices) x n`` matrix whose row i selects column ``vertices[i]``.

    ``selection(vertices, n) @ A`` holds the rows ``vertices`` of A, in
    that order: the sampler matrix Q of a node-wise hop.  The vertices are
    trusted (in ``[0, n)``; ``spla.generators.selection_matrix`` checks
    them).

    Examples
    --------
    >>> import numpy as np
    >>> from spla.hops import selection
    >>> selection(np.array([2, 0]), 3).to_dense()
    array([[0., 0., 1.],
           [1., 0., 0.]])
    """
    xp = backend.xp_of_array(vertices)
    ptr = xp.arange(vertices.size + 1, dtype=np.int64)
    return Matrix.from_csr(ptr, vertices, None, (int(vertices.size), n), check=False, copy=False)


def sample_hops(A, seeds, seeds_ptr, ks, *, seed, streams, group_ids=None, replace=False,
                weighted=None, materialize=False, check=True, wait=True):
    """Sample several node-wise hops from stacked groups of seed vertices.

    Parameters
    ----------
    A : Matrix or DistMatrix
        Square, ``n x n``; row ``v`` holds the vertices ``v`` draws from.
    seeds : int array
        The groups' seed vertices, group after group, distinct within a
        group, on A's device (on the host for a DistMatrix).
    seeds_ptr : int array, shape (G + 1,)
        Group ``g`` is ``seeds[seeds_ptr[g]:seeds_ptr[g + 1]]``; every group
        non-empty.
    ks : sequence of int
        Picks per vertex of each hop, in hop order: at least 1, or -1
        (``spla.hops.ALL``) for every entry of the row.
    seed : int
        User seed, ``0 <= seed < 2**64``.
    streams : sequence of int
        The ``sample_rows`` stream of each hop (``sampling.stream_of``).
    group_ids : sequence of int, optional
        Each group's id (default ``0 .. G-1``): vertex ``v`` of group ``g``
        draws with row id ``group_ids[g] * n + v``, so a group's draws do
        not depend on the other groups.
    replace : bool, default False
        Draw with replacement; a block's values then count the draws of
        each edge (float32).  A hop of -1 takes each entry once.
    weighted : bool, optional
        Draw by A's values (default: when A has values); else uniformly.
    materialize : bool, default False
        Form each ``Q @ A`` before sampling it (the method's literal reading;
        the same blocks, more work).
    check : bool, default True
        Check ``seeds`` (range, distinct within a group).  Samplers that
        checked them already pass False.  On a GPU the fused hops check
        them as they go, at no cost (a check before the hops would read
        the seeds back); elsewhere they are checked first.
    wait : bool, default True
        False: return a ``spla.Pending`` at once, whose ``wait()`` returns
        the hops.  On a GPU the fused hops are then queued on the device
        and their one blocking read (the sizes) waits for ``wait()``: launch
        the next bulk before waiting for this one and the device samples it
        while the host cuts this one's blocks.  Elsewhere the hops are
        computed by the call (the ``Pending`` is ``done``).  A seed that the
        device finds out of range or repeated raises in ``wait()``.

    Returns
    -------
    list of tuple
        Per hop ``(blocks, dst, dst_ptr, src, src_ptr)``: ``blocks[g]`` is
        group ``g``'s block (``Matrix``, ``|dst_g| x |src_g|``), ``dst`` and
        ``src`` the stacked destination and source vertices (``src`` of a
        group begins with its ``dst``, then the new vertices in order of
        first appearance) and ``dst_ptr``, ``src_ptr`` their group pointers
        as host int64 arrays.  The next hop's ``dst`` is this hop's ``src``.

    Raises
    ------
    InvalidValue
        A k of 0 or below -1, a seed or stream out of range, an empty
        group, a repeated seed within a group.
    DimensionMismatch
        A non-square A, ``streams`` or ``group_ids`` of the wrong length.
    IndexOutOfRange
        A seed outside ``[0, n)``.

    Examples
    --------
    >>> import numpy as np, spla
    >>> A = spla.Matrix.from_dense(np.ones((5, 5)) - np.eye(5))
    >>> hops = spla.sample_hops(A, np.array([0, 3, 1]), [0, 2, 3], [2, 1], seed=7,
    ...                         streams=[0, 1])
    >>> blocks, dst, dst_ptr, src, src_ptr = hops[0]
    >>> [b.shape for b in blocks], dst_ptr.tolist(), src_ptr.tolist()
    ([(2, 5), (1, 3)], [0, 2, 3], [0, 5, 8])
    >>> src.tolist()          # each group's sources start with its seeds
    [0, 3, 1, 2, 4, 1, 2, 3]
    >>> blocks[1].row_degrees().tolist()                # vertex 1 drew 2 neighbours
    [2]
    >>> hops[1][1].tolist() == src.tolist()             # hop 2 starts from hop 1's sources
    True
    >>> p = spla.sample_hops(A, np.array([0, 3, 1]), [0, 2, 3], [2, 1], seed=7,
    ...                      streams=[0, 1], wait=False)
    >>> p.wait()[0][4].tolist() == src_ptr.tolist()      # the same hops, when waited for
    True
    """
    func = "sample_hops"
    from spla.dist import DistMatrix
    D = A if isinstance(A, DistMatrix) else None
    M = A.local if D is not None else A
    if not isinstance(M, Matrix):
        fail(DTypeError, func, "A", "a spla.Matrix or spla.DistMatrix", describe(A))
    if A.shape[0] != A.shape[1]:
        fail(DimensionMismatch, func, "A", "a square matrix", f"shape {A.shape}")
    n = A.shape[1]
    seed = as_u64(func, "seed", seed)
    ks = _as_ks(func, ks)
    streams = _as_streams(func, streams, len(ks))
    ptr = _as_ptr(func, seeds_ptr)
    G = ptr.size - 1
    ids = _as_group_ids(func, group_ids, G, n)
    xp = np if D is not None else M.xp
    seeds = xp.asarray(seeds)
    if seeds.ndim != 1 or seeds.dtype.kind not in "iu":
        fail(DTypeError, func, "seeds", "a 1-D integer array", describe(seeds))
    if seeds.size != int(ptr[-1]):
        fail(DimensionMismatch, func, "seeds", f"{int(ptr[-1])} vertices (seeds_ptr[-1])",
             seeds.size)
    seeds = seeds.astype(np.int64, copy=False)
    weighted = (M.values is not None) if weighted is None else bool(weighted)
    if weighted and M.values is None:
        fail(InvalidValue, func, "weighted", "False for a structural A", True)
    replace = bool(replace)
    hops = None
    if D is None and not materialize:
        hops = backend.kernels_for(M.device).hops
        if not hops.fusable(ks, replace=replace, weighted=weighted, n=n):
            hops = None
    # Fused hops find a seed repeated in its group as they relabel (the
    # GPU's a seed out of range too, reported with their sizes): the seeds
    # are not sorted, nor read back from a device, before the bulk.
    if check:
        if hops is None or not hops.CHECKS_SEED_REPEATS:
            _check_seeds(func, seeds, ptr, n)
        elif not hops.CHECKS_SEED_RANGE:
            _check_seed_range(func, seeds, n)
    if G == 0 and D is None:
        out = Pending.ready([([], seeds, ptr, seeds, ptr) for _ in ks])
    elif hops is not None:
        out = _fused(hops, M, seeds, ptr, ids, ks, seed, streams, replace, weighted,
                     lambda: _check_seeds(func, seeds, ptr, n))
    else:
        # (A rank of a distributed graph with no group still takes part in
        # each hop's collective row fetch.)
        out = Pending.ready(_composed(M, D, seeds, ptr, ids, ks, seed, streams, replace,
                                      weighted, materialize))
    return out.wait() if wait else out


def _as_ks(func, ks):
    if isinstance(ks, (str, bytes)) or not hasattr(ks, "__iter__"):
        fail(InvalidValue, func, "ks", "a non-empty list of pick counts", describe(ks))
    ks = [as_int(func, f"ks[{h}]", k) for h, k in enumerate(ks)]
    if not ks:
        fail(InvalidValue, func, "ks", "a non-empty list of pick counts", "an empty list")
    for h, k in enumerate(ks):
        if k < 1 and k != ALL:
            fail(InvalidValue, func, f"ks[{h}]", "a count >= 1, or -1 for every entry", k)
    return ks


def _as_streams(func, streams, hops):
    if isinstance(streams, (str, bytes)) or not hasattr(streams, "__len__"):
        fail(InvalidValue, func, "streams", f"a list of {hops} streams", describe(streams))
    if len(streams) != hops:
        fail(DimensionMismatch, func, "streams", f"{hops} streams (one per hop)", len(streams))
    return [as_u64(func, f"streams[{h}]", s) for h, s in enumerate(streams)]


def _as_ptr(func, seeds_ptr):
    ptr = np.asarray(backend.to_host(seeds_ptr) if hasattr(seeds_ptr, "shape")
                     else seeds_ptr)
    if ptr.ndim != 1 or ptr.size < 1 or ptr.dtype.kind not in "iu":
        fail(InvalidValue, func, "seeds_ptr", "a 1-D integer array of group offsets",
             describe(ptr))
    ptr = ptr.astype(np.int64)
    if ptr[0] != 0:
        fail(InvalidValue, func, "seeds_ptr", "offsets starting at 0", int(ptr[0]))
    if ptr.size > 1 and (np.diff(ptr) <= 0).any():
        g = int(np.flatnonzero(np.diff(ptr) <= 0)[0])
        fail(InvalidValue, func, "seeds_ptr", "non-empty groups (increasing offsets)",
             f"group {g} of {int(ptr[g + 1] - ptr[g])} seeds")
    return ptr


def _as_group_ids(func, group_ids, G, n):
    if group_ids is None:
        return np.arange(G, dtype=np.int64)
    if isinstance(group_ids, (tuple, list)) and all(type(b) is int for b in group_ids):
        # The samplers' own ids (Python ints): no per-id check to call, which
        # for a bulk of hundreds of groups is host time the bulk waits on.
        ids = list(group_ids)
        bad = next((g for g, b in enumerate(ids) if b < 0), None)
        if bad is not None:
            as_int(func, f"group_ids[{bad}]", ids[bad], minimum=0)
    else:
        ids = [as_int(func, f"group_ids[{g}]", b, minimum=0) for g, b in enumerate(group_ids)]
    if len(ids) != G:
        fail(DimensionMismatch, func, "group_ids", f"{G} ids (one per group)", len(ids))
    # Checked as Python ints: a numpy conversion would overflow first.
    if ids and (max(ids) + 1) * n >= 2 ** 63:
        fail(InvalidValue, func, "group_ids", "ids with id * n < 2**63", max(ids))
    return np.array(ids, np.int64)


def _check_seeds(func, seeds, ptr, n):
    """Seeds in range and distinct within their group (one read on a GPU)."""
    if not seeds.size:
        return
    group = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), np.diff(ptr))
    lo, hi, repeat = grouped_ids_stats(seeds, group, n)
    _refuse_range(func, lo, hi, n)
    if repeat is not None:
        fail(InvalidValue, func, "seeds", "distinct seeds within each group",
             f"vertex {repeat[1]} twice in group {repeat[0]}")


def _check_seed_range(func, seeds, n):
    """Seeds in ``[0, n)`` (host seeds: a minimum and a maximum, no sort)."""
    if seeds.size:
        _refuse_range(func, int(seeds.min()), int(seeds.max()), n)


def _refuse_range(func, lo, hi, n):
    if lo < 0 or hi >= n:
        fail(IndexOutOfRange, func, "seeds", f"vertices in [0, {n})", lo if lo < 0 else hi)


def _fused(hops, M, seeds, ptr, ids, ks, seed, streams, replace, weighted, name_bad_seed):
    """The fused hops (GPU, or the CPU's uniform ones) as a ``Pending``: queued on
    a GPU, computed on the CPU; their outputs cut into blocks (views).
    ``name_bad_seed`` raises spla's error naming a seed the kernels flagged."""
    a_vals, prefix, _guide, positives, modes = draw_arrays(M, weighted)
    if replace:
        value_mode, value_dtype = 2, np.dtype(np.float32)
    elif weighted:
        value_mode, value_dtype = 1, M.values.dtype
    else:
        value_mode, value_dtype = 0, np.dtype(np.float32)
    # The last bulk's frontier growth sizes this one's arrays (the kernels
    # check it on the device and fall back to worst-case sizes when it is
    # outgrown, so the blocks never depend on it); kept on A like its prefixes.
    # Only for bulks of several minibatches: one minibatch's bounds are close
    # to its true sizes but for the last hop, so an estimate saves it little,
    # and one minibatch strays furthest from the last bulk's growth.
    key = ("hop_growth", tuple(ks), replace, weighted)

    def checked(step):
        try:
            return step()
        except BadSeeds:
            name_bad_seed()  # raises, naming the seed
            raise

    # The kernels' scratch that outlives a bulk (the GPU's occurrence table,
    # which the next bulk then need not clear), kept with A.
    kept = M._cache.setdefault(HOP_SCRATCH, {})
    launched = checked(lambda: hops.launch_hops(
        M.indptr, M.indices, a_vals, weighted, prefix, positives, modes, seeds, ptr, ids, ks,
        seed, streams, replace, value_mode, value_dtype, index_dtype(M.ncols),
        growth=M._cache.get(key) if ptr.size > GROWTH_MIN_GROUPS else None, kept=kept))

    def finish():
        raw, growth = checked(launched.finish)
        M._cache[key] = growth
        return _blocks_of(raw, M.device == backend.CPU)

    return Pending.ready(finish()) if isinstance(launched, Finished) else Pending(finish)


def _blocks_of(raw, host):
    """Per hop ``(blocks, dst, dst_ptr, src, src_ptr)`` from the kernels' outputs:
    each group's block a ``Matrix`` over views of the hop's arrays."""
    layers = []
    new = Matrix._new_device
    for bptr, bidx, bval, dst, dp, src, sp, ep in raw:
        if host:  # a host matrix's arrays are read-only (its blocks are views of these)
            bptr, bidx = readonly(bptr), readonly(bidx)
        # Python ints once per hop: a bulk makes a block per group and hop,
        # and the host's time per block is what large bulks wait on.
        d, e, s = dp.tolist(), ep.tolist(), sp.tolist()
        G = len(d) - 1
        ptrs = backend.views(bptr, [d[g] + g for g in range(G)],
                             [d[g + 1] + g + 1 for g in range(G)])
        idxs = backend.views(bidx, e[:-1], e[1:])
        vals = [None] * G if bval is None else backend.views(bval, e[:-1], e[1:])
        blocks = [new(ptrs[g], idxs[g], vals[g], (d[g + 1] - d[g], s[g + 1] - s[g]))
                  for g in range(G)]
        layers.append((blocks, dst, dp, src, sp))
    return layers


def _composed(M, D, seeds, ptr, ids, ks, seed, streams, replace, weighted, materialize):
    """The hops operator by operator (CPU, distributed graphs, ablations)."""
    n = M.ncols
    xp = backend.xp_of_array(seeds)
    # Group pointers stay on the host: the operators below read their ends
    # from them, where a device pointer would cost a read each time.
    frontier, fptr = seeds, ptr
    layers = []
    for hop, k in enumerate(ks):
        group = xp.asarray(np.repeat(ids, np.diff(fptr)))
        G_rows = M if D is None else D.rows_view(backend.to_host(frontier))
        Q = selection(frontier, n)
        if weighted:
            P = Q @ G_rows
        else:  # uniform: a structural product, no values to carry
            P = mxm(Q, G_rows.structure(), semiring.any_pair)
        if materialize:
            P = P.new()
        every = k == ALL
        # K_ALL: at least any row's degree, so sample_rows keeps whole rows;
        # without replacement, since -1 means each entry once.
        S = sample_rows(P, K_ALL if every else k, seed=seed, stream=streams[hop],
                        row_ids=group * n + frontier, replace=replace and not every,
                        return_counts=replace)
        if replace:
            S, counts = S
            S = S.with_values(counts.astype(np.float32))
        # The frontier is spla's own (the checked seeds, then a hop's sources).
        adj, src, src_ptr = compact_columns_blockwise(S, fptr, first=frontier, first_ptr=fptr,
                                                      check=False)
        sp = np.asarray(backend.to_host(src_ptr), np.int64)
        layers.append((split_blocks(adj, fptr, sp, check=False), frontier, fptr, src, sp))
        frontier, fptr = src, sp
    return layers
