#!/usr/bin/env python
"""Bytes moved by the distributed (1.5D, sparsity-aware) samplers, against a model.

Run under MPI (one JSON of results per run, written by rank 0); each run
samples the bulk with every strategy in ``--strategy`` (default: direct,
the library's default) on the same matrices::

    NUMBA_NUM_THREADS=1 mpiexec -n 4 python benchmarks/bench_dist.py --scale 21 \\
        --c 1,2,4 --strategy direct,pooled --json /tmp/bdd_p4.json
    # P = 8 in two runs, to bound the memory: c = 1, 2 + replicated GraphSAGE;
    # c = 4 + replicated LADIES
    NUMBA_NUM_THREADS=1 mpiexec -n 8 python benchmarks/bench_dist.py --scale 21 \\
        --c 1,2 --strategy direct,pooled --replicated GraphSAGE --json /tmp/bdd_p8a.json
    NUMBA_NUM_THREADS=1 mpiexec -n 8 python benchmarks/bench_dist.py --scale 21 \\
        --c 4 --strategy direct,pooled --replicated LADIES --json /tmp/bdd_p8b.json

then render the tables and the plot from the JSON files (no MPI; the
hand-written conclusion of an existing results file is kept; ``--baseline``
adds the measured bytes of an earlier pooled run as a column)::

    python benchmarks/bench_dist.py --report /tmp/bdd_p4.json /tmp/bdd_p8a.json \\
        /tmp/bdd_p8b.json --out benchmarks/results/dist_bytes.md \\
        --png benchmarks/results/dist_bytes.png

``--scale 14`` runs everything in seconds (a smoke test).

What a run does
---------------
1. Each rank builds its own 1D block of rows of ``rmat(scale, edge_factor,
   seed=graph_seed)`` (``rows=(start, stop)``: only those rows are stored).
   The 1.5D matrices are made with ``DistMatrix.from_generator``; for
   replication c the block of process row i is exactly the 1D blocks of its c
   members (checked: 2**scale rows split evenly), so ``make_rows`` stacks the
   members' pieces (an Allgatherv in the row, outside the byte counters)
   instead of drawing all the graph's edges again for every c.  The
   graph-replicated matrix (``replicate_graph=True``) stacks every rank's
   piece.
2. For each sampler (GraphSAGE [15, 10, 5]; LADIES [512, 512]), a bulk of k
   = 16 minibatches of 1,024 distinct random seeds (``numpy`` Generator,
   seeded, the same on every rank) is sampled once per layout (1.5D with c in
   ``--c``, then replicated) and strategy inside ``spla.comm.counting()``;
   every rank's counter (bytes SENT by that rank, per operation name) is
   gathered.
3. ``DistMatrix.rows_view`` (the samplers' row fetch, public) is wrapped
   (monkeypatched from here, spla is not changed) to impose the strategy
   under test, time each call and record the distinct row ids each rank
   asked for; ``spla.comm.alltoallv`` / ``allgatherv`` are wrapped to time
   the MPI exchanges per operation name.  Phases per rank: sampling total,
   fetch (whole ``rows_view``), of which MPI exchanges, and local compute
   (total - fetch).
4. Rank 0 computes both MODELS (``model_direct``, ``model_pooled``) from the
   gathered row ids and the graph's row degrees, per rank and per
   operation, in the wire format the library uses (``wire_format``), and
   the sparsity-oblivious broadcast (``oblivious_bytes``).  The measured
   bytes are compared with the model of the strategy that ran.

The machine is shared and the ranks oversubscribe its cores: byte counts are
exact, timings are indicative only.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

INT32_MAX = 2 ** 31 - 1
STORED_INDEX_BYTES = 4  # int32 column indices in the CSR (n < 2**31)
STRATEGIES = ("direct", "pooled")


def wire_format(nrows, ncols):
    """Bytes per row id, row length and column index on the wire.

    The rule of ``spla.checks.index_dtype`` on the wire (``DistMatrix.fetch_rows``,
    Notes): row ids are int32 when ``nrows <
    2**31``, row lengths and column indices int32 when ``ncols < 2**31``
    (int64 otherwise); values travel in their dtype.
    """
    i = 4 if nrows <= INT32_MAX else 8
    j = 4 if ncols <= INT32_MAX else 8
    return {"id": i, "len": j, "index": j}


# ---------------------------------------------------------------------------
# The models (pure numpy; rank 0)
# ---------------------------------------------------------------------------
def model_direct(needs, deg, n, p, c, value_bytes, wire):
    """Per-rank bytes of one DIRECT ``fetch_rows`` call, from the requested ids.

    ``needs[r]`` are the distinct rows rank r asks for, ``deg`` the row
    degrees of the fetched matrix.  Rank r = i*c + j sits in process row i,
    column j; block b (rows ``chunk(n, p/c, b)``) is held by process row b.
    Rank r reads the rows of N_r in block i locally, and asks rank (b, j)
    for the rows of N_r in each other block b: an id each
    (``fetch_rows.request``), answered with a length and (index + value)
    bytes per entry (``fetch_rows.reply``, sent by (b, j)).

    Returns ``sent`` per operation name (what the byte counters measure) and
    ``recv`` (bytes received per rank: the replies, plus the requests it
    serves).
    """
    from spla.layout import chunk_bounds
    nb = p // c
    bounds = chunk_bounds(n, nb)
    e = wire["index"] + value_bytes
    sent = {k: np.zeros(p) for k in ("fetch_rows.request", "fetch_rows.reply")}
    recv = np.zeros(p)
    for r in range(p):
        i, j = divmod(r, c)
        o = np.searchsorted(bounds, needs[r], side="right") - 1
        rem = o != i
        d = deg[needs[r][rem]].astype(np.float64)
        per_block = np.bincount(o[rem], weights=wire["len"] + e * d, minlength=nb)
        cnt = np.bincount(o[rem], minlength=nb)
        servers = np.arange(nb) * c + j
        sent["fetch_rows.request"][r] += wire["id"] * rem.sum()
        sent["fetch_rows.reply"][servers] += per_block
        recv[r] += per_block.sum()
        recv[servers] += wire["id"] * cnt
    return {"sent": {k: v.tolist() for k, v in sent.items()}, "recv": recv.tolist()}


def model_pooled(needs, deg, n, p, c, value_bytes, wire):
    """Per-rank bytes of one POOLED ``fetch_rows`` call (``strategy='pooled'``).

    * U_i = union of the needs of process row i (``fetch_rows.pool``: each
      rank sends its ids to the c-1 others);
    * rank (i, j) fetches F_ij = {v in U_i : block(v) % c == j}, requesting
      the rows of other blocks (an id each, ``fetch_rows.request``) from rank
      (block(v), j), which replies with a length and (index + value) bytes
      per entry (``fetch_rows.reply``); rows of block i it reads itself;
    * rank (i, j) then sends F_ij (ids, lengths, entries) to the c-1 others
      of its row (``fetch_rows.share``): each rank receives the (c-1)/c of
      U_i that its peers fetched, own-block rows included.

    Returns ``sent`` per operation name, ``recv_fetch`` (requests served and
    replies received) and ``recv_share`` (pooled ids and shared rows
    received) per rank.
    """
    from spla.layout import chunk_bounds
    nb = p // c
    bounds = chunk_bounds(n, nb)
    e = wire["index"] + value_bytes
    ids, lens = wire["id"], wire["len"]
    sent = {k: np.zeros(p) for k in ("fetch_rows.pool", "fetch_rows.request",
                                     "fetch_rows.reply", "fetch_rows.share")}
    recv_fetch = np.zeros(p)
    recv_share = np.zeros(p)
    for i in range(nb):
        members = [i * c + j for j in range(c)]
        U = np.unique(np.concatenate([needs[r] for r in members]))
        own = np.searchsorted(bounds, U, side="right") - 1
        d = deg[U].astype(np.float64)
        for j, r in enumerate(members):
            F = own % c == j
            remote = F & (own != i)
            sent["fetch_rows.request"][r] += ids * remote.sum()
            rb = own[remote]
            srv = np.bincount(rb, weights=lens + e * d[remote], minlength=nb)
            cnt = np.bincount(rb, minlength=nb)
            servers = np.arange(nb) * c + j
            sent["fetch_rows.reply"][servers] += srv
            recv_fetch[servers] += ids * cnt
            recv_fetch[r] += srv.sum()
            if c > 1:
                sent["fetch_rows.pool"][r] += ids * needs[r].size * (c - 1)
                share_r = (ids + lens) * F.sum() + e * d[F].sum()
                sent["fetch_rows.share"][r] += share_r * (c - 1)
                recv_share[r] += ids * sum(needs[q].size for q in members if q != r)
                for q in members:
                    if q != r:
                        recv_share[q] += share_r
    return {"sent": {k: v.tolist() for k, v in sent.items()},
            "recv_fetch": recv_fetch.tolist(), "recv_share": recv_share.tolist()}


def oblivious_bytes(block_nnz, block_rows, n, nnz, p, c, value_bytes, wire):
    """Per-rank bytes received by the sparsity-OBLIVIOUS 1.5D multiply, per call.

    Every rank receives 1/c of every block of A its process row does not
    hold (the 1.5D algorithm's (p/c)/c broadcast stages per rank): row
    lengths and entries (index + value) of those blocks, in the same wire
    format as the fetch.
    """
    nb = p // c
    out = np.zeros(p)
    for i in range(nb):
        other_nnz = nnz - block_nnz[i]
        other_rows = n - block_rows[i]
        per = (other_nnz * (wire["index"] + value_bytes) + other_rows * wire["len"]) / c
        out[i * c:(i + 1) * c] = per
    return out.tolist()


# ---------------------------------------------------------------------------
# The MPI run
# ---------------------------------------------------------------------------
def _allgather_csr(comm, M):
    """Stack the CSR pieces of every rank of comm in rank order (typed buffers)."""
    from spla.matrix import Matrix
    from spla.util import indptr_from_counts
    from mpi4py import MPI
    lens = np.diff(M.indptr).astype(np.int64)
    idx = np.ascontiguousarray(M.indices)
    rc = np.array(comm.allgather(lens.size), np.int64)
    ec = np.array(comm.allgather(idx.size), np.int64)
    all_lens = np.empty(int(rc.sum()), np.int64)
    comm.Allgatherv(lens, [all_lens, (rc, np.concatenate([[0], np.cumsum(rc)[:-1]])),
                           MPI.INT64_T])
    all_idx = np.empty(int(ec.sum()), idx.dtype)
    from mpi4py.util.dtlib import from_numpy_dtype
    mt = from_numpy_dtype(idx.dtype)
    comm.Allgatherv(idx, [all_idx, (ec, np.concatenate([[0], np.cumsum(ec)[:-1]])), mt])
    assert M.values is None
    # Stacked pieces of valid matrices: trusted arrays, owned by the result.
    return Matrix.from_csr(indptr_from_counts(all_lens), all_idx, None, (int(rc.sum()), M.ncols),
                           check=False, copy=False)


def _peak_rss_mb():
    """Peak resident memory (VmHWM) since the last ``_reset_peak_rss``."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def run(args):
    import gc

    from mpi4py import MPI

    import spla
    import spla.comm as C
    from spla.dist import DistMatrix
    from spla.generators import rmat
    from spla.layout import chunk
    from sampling import GraphSAGE, LADIES

    comm = MPI.COMM_WORLD
    p, rank = comm.Get_size(), comm.Get_rank()
    n = 1 << args.scale
    log = (lambda *a: print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)) if rank == 0 \
        else (lambda *a: None)
    cs = [int(x) for x in args.c.split(",") if p % int(x) == 0]
    strategies = [x for x in args.strategy.split(",") if x]
    if not strategies or any(x not in STRATEGIES for x in strategies):
        raise SystemExit(f"bench_dist: --strategy must list {' or '.join(STRATEGIES)}; "
                         f"got {args.strategy!r}")
    wire = wire_format(n, n)
    log(f"p={p}, scale={args.scale}, edge_factor={args.edge_factor}, c in {cs}, "
        f"strategies {strategies}, wire bytes {wire}, "
        f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}")

    # --- instrumentation (wrappers installed from here; spla unchanged) ----
    calls = []       # per fetch call on this rank: (tag, seconds, distinct ids)
    mpi_time = {}    # op name -> seconds inside the MPI exchange wrappers
    state = {"tag": None, "strategy": "direct"}
    orig_view = DistMatrix.rows_view
    orig_a2a, orig_agv = C.alltoallv, C.allgatherv

    # The samplers fetch rows through DistMatrix.rows_view (with the default
    # strategy): the wrapper times it, records the ids asked for, and imposes
    # the strategy under test.  A replicated matrix fetches nothing there.
    def view_wrapper(D, rows, strategy="direct"):
        t = time.perf_counter()
        out = orig_view(D, rows, state["strategy"])
        dt = time.perf_counter() - t
        if not D.layout.replicated:
            calls.append((state["tag"], dt, np.unique(np.asarray(rows, np.int64)), id(D)))
        return out

    def timed(fn):
        def w(comm_, arr, counts_or_op, op=None):
            t = time.perf_counter()
            out = fn(comm_, arr, counts_or_op) if op is None else fn(comm_, arr, counts_or_op, op)
            name = counts_or_op if op is None else op
            mpi_time[name] = mpi_time.get(name, 0.0) + time.perf_counter() - t
            return out
        return w

    DistMatrix.rows_view = view_wrapper
    C.alltoallv = timed(orig_a2a)
    C.allgatherv = timed(orig_agv)

    # --- the graph: this rank's 1D piece ----------------------------------
    t0 = time.perf_counter()
    s1, e1 = chunk(n, p, rank)
    piece = rmat(args.scale, args.edge_factor, seed=args.graph_seed, rows=(s1, e1))
    t_gen = time.perf_counter() - t0
    deg_piece = piece.row_degrees().astype(np.int64)
    nnz = comm.allreduce(int(piece.nnz))
    gen_times = comm.allgather(t_gen)
    log(f"graph: n={n}, nnz={nnz}, generation {max(gen_times):.1f} s (max over ranks)")
    degs = comm.gather(deg_piece, root=0)
    deg_A = np.concatenate(degs) if rank == 0 else None

    def make_maker(c, replicated):
        def make_rows(s, e):
            if replicated:
                sub = comm.Dup()
            else:
                sub = comm.Split(rank // c, rank % c)
            lo = chunk(n, p, (rank // c) * c)[0] if not replicated else 0
            hi = chunk(n, p, (rank // c) * c + c - 1)[1] if not replicated else n
            assert (s, e) == (lo, hi), ((s, e), (lo, hi))
            M = _allgather_csr(sub, piece)
            sub.Free()
            return M
        return make_rows

    rng = np.random.default_rng(args.batch_seed)
    batches = [np.sort(rng.choice(n, size=args.batch, replace=False)) for _ in range(args.k)]

    samplers = {
        "GraphSAGE": (lambda G: GraphSAGE(G, [int(x) for x in args.fanouts.split(",")]),
                      f"GraphSAGE fanouts [{args.fanouts}]"),
        "LADIES": (lambda G: LADIES(G, [int(x) for x in args.ladies.split(",")]),
                   f"LADIES layer sizes [{args.ladies}]"),
    }
    chosen = [s for s in args.samplers.split(",") if s]
    repl_chosen = [s for s in args.replicated.split(",") if s]
    results = []

    def measure(G, c, replicated, name, strategy):
        """Sample the bulk once with one sampler and strategy; rank 0 keeps a record."""
        mode = "replicated" if replicated else f"1.5d c={c}"
        make, desc = samplers[name]
        gc.collect()
        t0 = time.perf_counter()
        S = make(G)
        t_ctor = time.perf_counter() - t0
        calls.clear()
        mpi_time.clear()
        _reset_peak_rss()
        state["tag"] = name
        state["strategy"] = strategy or "direct"
        comm.Barrier()
        with C.counting() as moved:
            t0 = time.perf_counter()
            mbs = S.sample(batches, seed=args.sample_seed)
            t_sample = time.perf_counter() - t0
        t_wait0 = time.perf_counter()
        comm.Barrier()
        t_wait = time.perf_counter() - t_wait0
        edges = int(sum(b.adj.nnz for mb in mbs for b in mb.blocks))
        dst_rows = int(sum(b.adj.nrows for mb in mbs for b in mb.blocks))
        Dfetched = S.D
        vb = 0 if Dfetched.local.values is None else Dfetched.local.values.itemsize
        # row degrees of the fetched matrix (LADIES: A-hat, with self loops)
        if replicated:
            deg_F = Dfetched.local.row_degrees().astype(np.int64) if rank == 0 else None
            block_nnz = block_rows = None
        else:
            g = Dfetched.grid
            mine_deg = Dfetched.local.row_degrees().astype(np.int64) if g.col == 0 else None
            allg = comm.gather(mine_deg, root=0)
            deg_F = (np.concatenate([allg[i * c] for i in range(p // c)])
                     if rank == 0 else None)
            bl = comm.gather((Dfetched.lnnz, Dfetched.lshape[0]), root=0)
            if rank == 0:
                block_nnz = [bl[i * c][0] for i in range(p // c)]
                block_rows = [bl[i * c][1] for i in range(p // c)]
        per_rank = {
            "bytes_sent": dict(moved),
            "t_sample": t_sample,
            "t_fetch": float(sum(x[1] for x in calls)),
            "t_mpi": dict(mpi_time),
            "t_ctor": t_ctor,
            "t_barrier_after": t_wait,
            "n_minibatches": len(mbs),
            "sampled_edges": edges,
            "dst_rows": dst_rows,
            "rss_mb": _peak_rss_mb(),
        }
        gathered = comm.gather(per_rank, root=0)
        needs_all = comm.gather([x[2] for x in calls], root=0)
        if rank == 0:
            ncalls = len(needs_all[0])
            assert all(len(x) == ncalls for x in needs_all)
            rec = {"sampler": name, "desc": desc, "mode": "replicated" if replicated
                   else "partitioned", "strategy": strategy, "wire": wire,
                   "c": c, "p": p, "value_bytes": vb,
                   "n_calls": ncalls, "ranks": gathered,
                   "needed_rows_per_call": [[int(needs_all[r][t].size) for r in range(p)]
                                            for t in range(ncalls)],
                   "needed_entries_per_call": [[int(deg_F[needs_all[r][t]].sum())
                                                for r in range(p)]
                                               for t in range(ncalls)],
                   "fetched_nnz": int(deg_F.sum())}
            # rows a rank asks for in more than one call (re-fetched by later layers)
            dist_all = [np.unique(np.concatenate(needs_all[r] + [np.zeros(0, np.int64)]))
                        for r in range(p)]
            rec["distinct_rows_all_calls"] = [int(u.size) for u in dist_all]
            rec["distinct_entries_all_calls"] = [int(deg_F[u].sum()) for u in dist_all]
            if not replicated:
                # Both models on the same requests: the run's strategy is
                # checked against its own, the other is shown beside it.
                rec["model_calls"] = [
                    {st: fn([needs_all[r][t] for r in range(p)], deg_F, n, p, c, vb,
                            wire)
                     for st, fn in (("direct", model_direct), ("pooled", model_pooled))}
                    for t in range(ncalls)]
                rec["union_rows_per_call"] = [
                    [int(np.unique(np.concatenate([needs_all[i * c + j][t]
                                                   for j in range(c)])).size)
                     for i in range(p // c)] for t in range(ncalls)]
                ob = oblivious_bytes(block_nnz, block_rows, n, int(deg_F.sum()), p, c, vb,
                                     wire)
                rec["oblivious_per_call"] = ob
            tot = sum(sum(r["bytes_sent"].values()) for r in gathered)
            log(f"  {name} {mode} {strategy or ''}: {len(mbs)} minibatches on rank 0, "
                f"sampled edges {sum(r['sampled_edges'] for r in gathered)}, bytes total {tot:,}, "
                f"t_sample max {max(r['t_sample'] for r in gathered):.1f} s, "
                f"peak RSS max {max(r['rss_mb'] for r in gathered):.0f} MB")
            if not replicated:
                m = sum(sum(sum(v) for v in mc[strategy]["sent"].values())
                        for mc in rec["model_calls"])
                ratio = tot / m if m else float("nan")
                log(f"    model total {m:,.0f}  measured/model {ratio:.4f}")
            results.append(rec)
        del S, mbs

    configs = [(c, False) for c in cs] + [(1, True)]
    for c, replicated in configs:
        names = repl_chosen if replicated else chosen
        if not names:
            continue
        gc.collect()
        t0 = time.perf_counter()
        layout = "1d" if replicated else "1.5d"
        G = spla.DistMatrix.from_generator(make_maker(c, replicated), (n, n), comm=comm,
                                           layout=layout, replication=1 if replicated else c,
                                           replicate_graph=replicated)
        t_build = time.perf_counter() - t0
        mode = "replicated" if replicated else f"1.5d c={c}"
        log(f"{mode}: matrix assembled in {t_build:.1f} s, local nnz {G.lnnz}")
        for name in names:
            # the replicated graph moves nothing whatever the strategy: run once
            for strategy in ([None] if replicated else strategies):
                measure(G, c, replicated, name, strategy)
        del G
    if rank == 0:
        out = {"p": p, "scale": args.scale, "edge_factor": args.edge_factor,
               "graph_seed": args.graph_seed, "n": n, "nnz": nnz, "k": args.k,
               "batch": args.batch, "batch_seed": args.batch_seed,
               "sample_seed": args.sample_seed, "gen_time_max": max(gen_times),
               "numba_threads": os.environ.get("NUMBA_NUM_THREADS"),
               "command": "mpiexec -n %d python %s" % (p, " ".join(sys.argv)),
               "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
               "max_degree": int(deg_A.max()), "results": results}
        with open(args.json, "w") as f:
            json.dump(out, f)
        log(f"wrote {args.json}")


# ---------------------------------------------------------------------------
# Report (no MPI)
# ---------------------------------------------------------------------------
def _fmt(b):
    b = float(b)
    for unit, s in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= s:
            return f"{b / s:.2f} {unit}"
    return f"{b:.0f} B"


def _sum_calls(calls, key):
    """Per-rank totals over the fetch calls of one model entry."""
    return np.sum([np.array(c_[key]) for c_ in calls], axis=0)


def _model_sent(calls, strategy):
    """Per operation: per-rank bytes sent under ``strategy``, summed over calls."""
    ops = calls[0][strategy]["sent"]
    return {k: np.sum([np.array(c_[strategy]["sent"][k]) for c_ in calls], axis=0) for k in ops}


def summarize(rec):
    """Numbers for one (p, sampler, mode, c, strategy) record."""
    p = rec["p"]
    ranks = rec["ranks"]
    ops = sorted({k for r in ranks for k in r["bytes_sent"]})
    sent = np.array([[r["bytes_sent"].get(k, 0) for k in ops] for r in ranks], np.float64)
    sent = sent.reshape(len(ranks), len(ops))
    s = {"ops": ops, "measured_total": sent.sum(),
         "measured_per_rank_mean": sent.sum() / p,
         "measured_sent_max": sent.sum(axis=1).max(),
         "measured_by_op": dict(zip(ops, sent.sum(axis=0)))}
    tt = np.array([r["t_sample"] for r in ranks])
    tf = np.array([r["t_fetch"] for r in ranks])
    tm = np.array([sum(r["t_mpi"].values()) for r in ranks])
    s.update(t_sample_max=tt.max(), t_sample_mean=tt.mean(), t_fetch_mean=tf.mean(),
             t_fetch_max=tf.max(), t_mpi_mean=tm.mean(), t_compute_mean=(tt - tf).mean(),
             edges=sum(r["sampled_edges"] for r in ranks),
             rss_max=max(r["rss_mb"] for r in ranks))
    if rec["mode"] != "partitioned":
        return s
    mc = rec["model_calls"]
    own = _model_sent(mc, rec["strategy"])
    mrank = np.sum(list(own.values()), axis=0)
    meas_rank = sent.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rank_ratio = np.where(mrank > 0, meas_rank / mrank,
                              np.where(meas_rank > 0, np.inf, 1.0))
    direct_rank = np.sum(list(_model_sent(mc, "direct").values()), axis=0)
    pooled_rank = np.sum(list(_model_sent(mc, "pooled").values()), axis=0)
    recv_direct = _sum_calls([c_["direct"] for c_ in mc], "recv")
    recv_pooled = (_sum_calls([c_["pooled"] for c_ in mc], "recv_fetch")
                   + _sum_calls([c_["pooled"] for c_ in mc], "recv_share"))
    ob = np.array(rec["oblivious_per_call"]) * rec["n_calls"]
    s.update(model_total=mrank.sum(), model_per_rank_mean=mrank.sum() / p,
             model_sent_max=mrank.max(),
             model_by_op={k: v.sum() for k, v in own.items()},
             ratio_total=(sent.sum() / mrank.sum() if mrank.sum()
                          else 1.0 if sent.sum() == 0 else float("inf")),
             ratio_rank_min=float(rank_ratio.min()), ratio_rank_max=float(rank_ratio.max()),
             direct_model_mean=direct_rank.mean(), pooled_model_mean=pooled_rank.mean(),
             direct_recv_max=recv_direct.max(), pooled_recv_max=recv_pooled.max(),
             direct_sent_max=direct_rank.max(), pooled_sent_max=pooled_rank.max(),
             oblivious_mean=ob.mean(), oblivious_max=ob.max(),
             per_layer_direct=[np.sum(c_["direct"]["recv"]) / p for c_ in mc],
             needed_rows=np.sum(rec["needed_rows_per_call"]),
             needed_entries=np.sum(rec["needed_entries_per_call"]),
             union_rows=np.sum(rec["union_rows_per_call"]))
    return s


def _baseline(paths):
    """Measured bytes per rank of older runs (any format): {(p, sampler, c): (mean, date)}."""
    out = {}
    for pth in paths or []:
        r = json.load(open(pth))
        for rec in r["results"]:
            if rec["mode"] != "partitioned" or rec.get("strategy", "pooled") != "pooled":
                continue
            tot = sum(sum(x["bytes_sent"].values()) for x in rec["ranks"])
            out[(r["p"], rec["sampler"], rec["c"])] = (tot / r["p"], r["date"])
    return out


def report(paths, out_md, out_png, baseline_paths=None):
    runs = [json.load(open(pth)) for pth in paths]
    runs.sort(key=lambda r: r["p"])
    base = _baseline(baseline_paths)
    import platform
    lines = []
    W = lines.append
    r0 = runs[0]
    wire = next(rec["wire"] for r in runs for rec in r["results"])
    W("# Bytes moved by the distributed samplers (1.5D sparsity-aware row fetch)")
    W("")
    W(f"Date: {r0['date']} (each run's date is above its command).  "
      f"Machine: {platform.node()}, {os.cpu_count()} cores "
      f"({_cpu_model()}), {_ram_gb():.0f} GB RAM, Linux {platform.release()}; "
      f"load average at report time {os.getloadavg()[0]:.1f}.  "
      f"Python {platform.python_version()}, numpy {np.__version__}, MPICH wheel "
      f"({_mpich()}).  NUMBA_NUM_THREADS={r0['numba_threads']} per rank; "
      f"the P ranks oversubscribe the cores, and the machine is shared with other "
      f"workers: **byte counts are exact, timings are indicative only**.")
    W("")
    W("Commands:")
    W("")
    W("```")
    for r in runs:
        W(f"# {r['date']}")
        W(f"NUMBA_NUM_THREADS={r['numba_threads']} {r['command']}")
    extra = f" --baseline {' '.join(baseline_paths)}" if baseline_paths else ""
    W(f"python benchmarks/bench_dist.py --report {' '.join(paths)}{extra} --out {out_md} "
      f"--png {out_png}")
    W("```")
    W("")
    W(f"Graph: `rmat({r0['scale']}, {r0['edge_factor']}, seed={r0['graph_seed']})` "
      f"(Graph500 probabilities, symmetric, no self loops): n = {r0['n']:,} vertices, "
      f"{r0['nnz']:,} stored entries (structural, int32 indices), max degree "
      f"{r0['max_degree']:,}.  Each rank generated only its 1D rows "
      f"(max {max(r['gen_time_max'] for r in runs):.0f} s per rank, oversubscribed); "
      f"the 1.5D blocks (via `DistMatrix.from_generator`) stack the 1D pieces of a "
      f"process row.")
    W("")
    W(f"Bulk: k = {r0['k']} minibatches of {r0['batch']} distinct uniformly random seeds "
      f"(numpy Generator seed {r0['batch_seed']}), sampled with `sample(batches, "
      f"seed={r0['sample_seed']})`.  GraphSAGE fanouts [15, 10, 5] (structural A, 3 "
      f"fetches of the frontier rows); LADIES [512, 512] (Â = D⁻¹(A+I), float32, "
      f"2 fetches of the destination rows).  GraphSAGE spreads the 16 minibatches over "
      f"all P ranks; LADIES over the P/c process rows, then over the c members.  Each "
      f"run samples the bulk once per strategy on the same matrix (`--strategy "
      f"direct,pooled`); the requests, and so the minibatches, are the same for both.")
    W("")
    W(f"Wire format (both strategies, `spla.checks.index_dtype`): row ids {wire['id']} B, row "
      f"lengths {wire['len']} B, column indices {wire['index']} B, values in their dtype "
      f"(0 B for GraphSAGE's structural A, 4 B for LADIES's float32 Â).")
    W("")
    W(_MODEL_TEXT)
    W("")
    summ = []
    for r in runs:
        for rec in r["results"]:
            summ.append((r, rec, summarize(rec)))
    part = {(r["p"], rec["sampler"], rec["c"], rec["strategy"]): s
            for r, rec, s in summ if rec["mode"] == "partitioned"}
    keys = sorted({k[:3] for k in part}, key=lambda k: (k[0], k[2], k[1]))
    W("## Bytes per rank vs c")
    W("")
    base_date = next(iter(base.values()))[1] if base else None
    W("Means over the P ranks of the bytes SENT per rank (what the counters measure; "
      "summed over ranks this equals the bytes received) for the whole bulk.  "
      "'ratio' = measured / model of the same strategy (total; per-rank range in "
      "brackets).  'max' is the largest per-rank count of bytes sent, measured.  "
      "'oblivious' is the sparsity-oblivious 1.5D broadcast, summed over the "
      "sampler's layers (model)."
      + (f"  'pooled, int64' is the pooled fetch as measured on {base_date}, before "
         "the wire format went to int32." if base else ""))
    W("")
    hdr = ("| P | sampler | c | direct / rank | direct ratio [range] | direct max | "
           "pooled / rank | pooled ratio [range] | pooled max | "
           + ("pooled, int64 / rank | " if base else "")
           + "oblivious / rank | direct / pooled | direct / oblivious |")
    W(hdr)
    W("|" + "---|" * (hdr.count("|") - 1))
    for key in keys:
        d, pl = part.get(key + ("direct",)), part.get(key + ("pooled",))

        def cell(x, f):
            return f(x) if x is not None else "not run"

        def rat(x):
            return f"{x['ratio_total']:.4f} [{x['ratio_rank_min']:.3f}, {x['ratio_rank_max']:.3f}]"

        some = d or pl
        row = [str(key[0]), key[1], str(key[2]),
               cell(d, lambda x: _fmt(x["measured_per_rank_mean"])), cell(d, rat),
               cell(d, lambda x: _fmt(x["measured_sent_max"])),
               cell(pl, lambda x: _fmt(x["measured_per_rank_mean"])), cell(pl, rat),
               cell(pl, lambda x: _fmt(x["measured_sent_max"]))]
        if base:
            b = base.get(key)
            row.append(_fmt(b[0]) if b else "-")
        row.append(_fmt(some["oblivious_mean"]))
        dm, pm, om = (some["direct_model_mean"], some["pooled_model_mean"],
                      some["oblivious_mean"])
        row.append(f"{dm / pm:.2f}" if pm else "-")
        row.append(f"{dm / om:.2f}" if om else ("0 / 0" if dm == 0 else "inf"))
        W("| " + " | ".join(row) + " |")
    W("")
    W("## Bytes by operation (totals over all ranks; measured / model)")
    W("")
    W("| P | sampler | c | strategy | pool | request | reply | share | other ops |")
    W("|---|---|---|---|---|---|---|---|---|")
    for r, rec, s in summ:
        if rec["mode"] != "partitioned":
            continue
        mb, md = s["measured_by_op"], s["model_by_op"]
        cells = []
        for k in ("fetch_rows.pool", "fetch_rows.request", "fetch_rows.reply",
                  "fetch_rows.share"):
            cells.append(f"{_fmt(mb.get(k, 0))} / {_fmt(md.get(k, 0))}"
                         if k in md or mb.get(k, 0) else "-")
        other = {k: v for k, v in mb.items() if k not in md}
        W(f"| {r['p']} | {rec['sampler']} | {rec['c']} | {rec['strategy']} | "
          + " | ".join(cells)
          + f" | {', '.join(f'{k}: {_fmt(v)}' for k, v in other.items()) or 'none'} |")
    W("")
    W("## Rows needed and fetched")
    W("")
    W("Summed over the sampler's fetch calls: distinct rows the ranks asked for "
      "(sum over ranks), the entries of those rows, and the distinct rows of the "
      "process rows' unions (sum over process rows), which the pooled fetch moves "
      "to every member.")
    W("")
    W("| P | sampler | c | rows asked (Σ ranks) | their entries | union rows (Σ process rows) |")
    W("|---|---|---|---|---|---|")
    for key in keys:
        s = part.get(key + ("direct",)) or part.get(key + ("pooled",))
        W(f"| {key[0]} | {key[1]} | {key[2]} | {int(s['needed_rows']):,} | "
          f"{int(s['needed_entries']):,} | {int(s['union_rows']):,} |")
    W("")
    W("## Where the bytes come from")
    W("")
    W("Per layer (fetch call), the direct model's bytes received per rank (mean), and "
      "the rows fetched again: 'rows asked' sums each rank's distinct rows over the "
      "calls, 'distinct over calls' counts each row once per rank (a rank keeping "
      "the rows it fetched for an earlier layer would not fetch the rest again).  "
      "'fetched entries per sampled edge' compares the entries of the rows the "
      "ranks asked for with the edges the samplers kept.")
    W("")
    W("| P | sampler | c | direct bytes/rank per layer (model, output layer first) | "
      "rows asked | distinct over calls | entries asked | distinct entries | sampled edges | "
      "fetched entries per sampled edge |")
    W("|---|---|---|---|---|---|---|---|---|---|")
    for r, rec, s in summ:
        if rec["mode"] != "partitioned" or rec["strategy"] != "direct":
            continue
        ra = int(s["needed_rows"])
        rd = int(np.sum(rec.get("distinct_rows_all_calls", [0])))
        ea = int(s["needed_entries"])
        ed = int(np.sum(rec.get("distinct_entries_all_calls", [0])))
        W(f"| {r['p']} | {rec['sampler']} | {rec['c']} | "
          f"{', '.join(_fmt(x) for x in s['per_layer_direct'])} | {ra:,} | {rd:,} | {ea:,} | "
          f"{ed:,} | {s['edges']:,} | {ea / max(s['edges'], 1):.0f} |")
    W("")
    W("## Replicated graph (`replicate_graph=True`)")
    W("")
    W("| P | sampler | bytes sent (all ranks, all ops) | sampling s (max rank) |")
    W("|---|---|---|---|")
    for r, rec, s in summ:
        if rec["mode"] == "replicated":
            W(f"| {r['p']} | {rec['sampler']} | {int(s['measured_total'])} | "
              f"{s['t_sample_max']:.1f} |")
    W("")
    W("## Wall time per phase (indicative only: oversubscribed, shared machine)")
    W("")
    W("Seconds per rank for the whole `sample()` call: max and mean over ranks; "
      "fetch = inside `DistMatrix.rows_view` (wrapped), of which MPI = inside the "
      "`spla.comm` exchanges (waiting for slower ranks included); compute = total - "
      "fetch (the local sampling, extraction and relabelling).")
    W("")
    W("| P | sampler | mode | strategy | c | sampled edges | total max | total mean | "
      "fetch mean | of which MPI | compute mean | peak RSS max (MB) |")
    W("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r, rec, s in summ:
        W(f"| {r['p']} | {rec['sampler']} | {rec['mode']} | {rec['strategy'] or '-'} | "
          f"{rec['c']} | {s['edges']:,} | {s['t_sample_max']:.1f} | {s['t_sample_mean']:.1f} | "
          f"{s['t_fetch_mean']:.1f} | {s['t_mpi_mean']:.1f} | {s['t_compute_mean']:.1f} | "
          f"{s['rss_max']:.0f} |")
    W("")
    W(_kept_conclusion(out_md))
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    _plot(part, keys, base, out_png, r0)
    return summ


_MODEL_TEXT = """## The model

Notation: P ranks on a (P/c) x c grid, rank r = i·c + j in process row i and
column j; block b = rows `chunk(n, P/c, b)`, held by every rank of process row b.
For one `fetch_rows` call (one per sampler layer), N_r is the set of distinct
rows rank r asks for (gathered from the run), d(v) the degree of row v in the
fetched matrix, w_id, w_len and w_idx the wire bytes of a row id, a row length
and a column index (4 each here), and e = w_idx + value bytes per entry (4 for
GraphSAGE's structural A, 8 for LADIES's float32 Â).

Direct fetch (the default), per rank (i, j): for every v ∈ N_r with
block(v) ≠ i, a w_id-byte request to rank (block(v), j), which sends back
w_len + e·d(v) bytes; rows of block i are read locally (0 bytes).  Rank r
receives exactly the remote rows it asked for.

Pooled fetch (`strategy='pooled'`), with U_i = ∪_j N_{i·c+j} the process
row's union and F_ij = {v ∈ U_i : block(v) mod c = j}:

* pooling: w_id bytes per id of N_r to each of the c - 1 row peers;
* requests + replies: for every v ∈ F_ij with block(v) ≠ i, a request to
  rank (block(v), j) and back w_len + e·d(v) bytes;
* sharing: F_ij (ids, lengths and e·d(v) per row, own-block rows included)
  to each of the c - 1 row peers, so each rank RECEIVES the (c - 1)/c of U_i
  its peers fetched.

Measured counters are bytes SENT per rank and operation; both models are
evaluated per rank in the same terms (and, summed, equal bytes received).
Summed over ranks, direct never moves more than pooled: a row v of U_i
outside block i costs k·(w_id + w_len + e·d(v)) in direct, where k ≤ c is
the number of members of row i that ask for it, and at least
c·(w_id + w_len + e·d(v)) in pooled (once over the column, then c - 1
shares); a row of block i costs 0 in direct and (c - 1)·(w_id + w_len +
e·d(v)) in pooled.  At c = 1 the two are the same exchange.

Sparsity-oblivious 1.5D broadcast, per rank and per layer: the rank receives
1/c of every block it does not hold, (nnz(A) − nnz(own block))·e/c plus
w_len per row length of those blocks, i.e. the (P/c)/c broadcast stages of
the 1.5D algorithm; summed over the sampler's layers (3 for GraphSAGE, 2 for
LADIES)."""

_CONCLUSION_START = "<!-- conclusion: written by hand, kept when the report is rendered again -->"
_CONCLUSION_END = "<!-- end of conclusion -->"


def _kept_conclusion(out_md):
    """The hand-written conclusion of an existing results file (or an empty one)."""
    try:
        text = open(out_md).read()
        a = text.index(_CONCLUSION_START)
        b = text.index(_CONCLUSION_END, a)
        return text[a:b + len(_CONCLUSION_END)]
    except (OSError, ValueError):
        return f"{_CONCLUSION_START}\n## Conclusion\n\n(to be written)\n{_CONCLUSION_END}"


def _plot(part, keys, base, out_png, r0):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ps = sorted({k[0] for k in keys})
    names = sorted({k[1] for k in keys})
    fig, axes = plt.subplots(len(names), len(ps), figsize=(5.2 * len(ps), 4.0 * len(names) + 0.8),
                             squeeze=False)
    handles, labels = [], []
    for a, name in enumerate(names):
        for b, p in enumerate(ps):
            ax = axes[a][b]
            cs = sorted(k[2] for k in keys if k[0] == p and k[1] == name)
            if not cs:
                ax.set_visible(False)
                continue

            def g(strategy, key):  # zeros cannot sit on a log axis: drawn as gaps
                out = []
                for c in cs:
                    x = part.get((p, name, c, strategy))
                    v = x[key] if x is not None else np.nan
                    out.append(v if v > 0 else np.nan)
                return out

            def any_(key):
                return [next(part[(p, name, c, st)] for st in STRATEGIES
                             if (p, name, c, st) in part)[key] for c in cs]

            ax.plot(cs, g("direct", "measured_per_rank_mean"), "o-", color="C2", ms=8,
                    label="direct fetch, measured (mean/rank)")
            ax.plot(cs, g("direct", "measured_sent_max"), "v:", color="C2", alpha=.6,
                    label="direct fetch, measured (max sent/rank)")
            ax.plot(cs, g("pooled", "measured_per_rank_mean"), "s-", color="C0", ms=7,
                    label="pooled fetch, int32 wire, measured (mean/rank)")
            if base:
                ax.plot(cs, [base.get((p, name, c), (np.nan,))[0] for c in cs], "x--",
                        color="0.5", label="pooled fetch, int64 wire, earlier run (mean/rank)")
            ob = [v if v > 0 else np.nan for v in any_("oblivious_mean")]
            ax.plot(cs, ob, "^-", color="C3", label="oblivious broadcast (model, mean/rank)")
            zero = [c for c in cs if (p, name, c, "direct") in part
                    and part[(p, name, c, "direct")]["measured_per_rank_mean"] == 0]
            if zero:  # a log axis has no 0: say it in words
                ax.text(0.97, 0.04, f"c = {', '.join(map(str, zero))}: direct fetch and "
                        "oblivious\nbroadcast move 0 B (not drawn)", transform=ax.transAxes,
                        ha="right", va="bottom", fontsize=7)
            ax.set_yscale("log")
            ax.set_xscale("log", base=2)
            ax.set_xticks(cs)
            ax.set_xticklabels([str(c) for c in cs])
            ax.set_xlabel("replication c")
            ax.set_ylabel("bytes per rank (one bulk)")
            ax.set_title(f"{name}, P = {p}")
            ax.grid(True, which="both", alpha=.3)
            if a == 0 and b == 0:
                handles, labels = ax.get_legend_handles_labels()
    fig.suptitle(f"rmat({r0['scale']}, {r0['edge_factor']}): bytes per rank vs c, "
                 f"k = {r0['k']} x {r0['batch']} seeds", fontsize=10)
    fig.legend(handles, labels, loc="lower center", ncol=2 if len(ps) > 1 else 1, fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.1 if len(ps) > 1 else 0.16, 1, 1))
    fig.savefig(out_png, dpi=110)


def _cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def _ram_gb():
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return float("nan")


def _mpich():
    try:
        from importlib.metadata import version
        return "mpich " + version("mpich")
    except Exception:  # noqa: BLE001
        return "mpich"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=int, default=21)
    ap.add_argument("--edge-factor", type=int, default=16)
    ap.add_argument("--graph-seed", type=int, default=1)
    ap.add_argument("--c", default="1,2,4")
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--batch-seed", type=int, default=2024)
    ap.add_argument("--sample-seed", type=int, default=7)
    ap.add_argument("--fanouts", default="15,10,5")
    ap.add_argument("--ladies", default="512,512")
    ap.add_argument("--samplers", default="GraphSAGE,LADIES")
    ap.add_argument("--replicated", default="GraphSAGE,LADIES",
                    help="samplers to run once more on the replicated graph ('' for none)")
    ap.add_argument("--strategy", default="direct",
                    help="fetch strategies to run, comma-separated: direct, pooled or "
                         "direct,pooled (each on the same matrices)")
    ap.add_argument("--json", default="/tmp/bench_dist.json")
    ap.add_argument("--report", nargs="+", help="render these JSON files (no MPI)")
    ap.add_argument("--baseline", nargs="+",
                    help="with --report: JSON files of an earlier pooled run, shown beside")
    ap.add_argument("--out", default="benchmarks/results/dist_bytes.md")
    ap.add_argument("--png", default="benchmarks/results/dist_bytes.png")
    args = ap.parse_args(argv)
    if args.report:
        report(args.report, args.out, args.png, args.baseline)
    else:
        try:
            run(args)
        except BaseException:
            import traceback
            traceback.print_exc()
            sys.stdout.flush()
            sys.stderr.flush()
            from mpi4py import MPI
            if MPI.COMM_WORLD.Get_size() > 1:
                MPI.COMM_WORLD.Abort(1)
            raise


if __name__ == "__main__":
    main()
