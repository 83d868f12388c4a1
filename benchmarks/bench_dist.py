#!/usr/bin/env python
"""Bytes moved by the distributed (1.5D, sparsity-aware) samplers, against a model.

Run under MPI (one JSON of results per run, written by rank 0)::

    NUMBA_NUM_THREADS=1 mpiexec -n 4 python benchmarks/bench_dist.py --scale 21 \\
        --c 1,2,4 --json /tmp/bd_p4.json
    # P = 8 in two runs (each under 6 minutes, and at most ~17 GB of RAM in all
    # on the 24 GB machine): c = 1, 2 + replicated GraphSAGE; c = 4 + replicated LADIES
    NUMBA_NUM_THREADS=1 mpiexec -n 8 python benchmarks/bench_dist.py --scale 21 \\
        --c 1,2 --replicated GraphSAGE --json /tmp/bd_p8a.json
    NUMBA_NUM_THREADS=1 mpiexec -n 8 python benchmarks/bench_dist.py --scale 21 \\
        --c 4 --replicated LADIES --json /tmp/bd_p8b.json

then render the tables and the plot from the JSON files (no MPI; the
hand-written conclusion of an existing results file is kept)::

    python benchmarks/bench_dist.py --report /tmp/bd_p4.json /tmp/bd_p8a.json \\
        /tmp/bd_p8b.json --out benchmarks/results/dist_bytes.md \\
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
   ``--c``, then replicated) inside ``spla.comm.counting()``; every rank's
   counter (bytes SENT by that rank, per operation name) is gathered.
3. ``spla.dist.fetch_rows`` is wrapped (monkeypatched from here, spla is not
   changed) to time each call and record the distinct row ids each rank
   asked for; ``spla.comm.alltoallv`` / ``allgatherv`` are wrapped to time
   the MPI exchanges per operation name.  Phases per rank: sampling total,
   fetch (whole ``fetch_rows``), of which MPI exchanges, and local compute
   (total - fetch).
4. Rank 0 computes the MODEL from the gathered row ids and the graph's row
   degrees (see ``model_bytes``), per rank and per operation, the
   sparsity-oblivious broadcast variant (``oblivious_bytes``), and two
   possible changes of the fetch on the same requests ('direct', 'targeted';
   model only).

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

# Wire format of spla.dist.fetch_rows (see its source): row ids, row lengths
# and column indices travel as int64; values in their dtype.
ID_BYTES = 8
LEN_BYTES = 8
WIRE_INDEX_BYTES = 8
STORED_INDEX_BYTES = 4  # int32 column indices in the CSR (n < 2**31)


# ---------------------------------------------------------------------------
# The model (pure numpy; rank 0)
# ---------------------------------------------------------------------------
def model_bytes(needs, deg, n, p, c, value_bytes, index_bytes=WIRE_INDEX_BYTES):
    """Per-rank bytes of one ``fetch_rows`` call, from the requested ids.

    ``needs[r]`` are the distinct rows rank r asks for, ``deg`` the row
    degrees of the fetched matrix.  Rank r = i*c + j sits in process row i,
    column j; block b (rows ``chunk(n, p/c, b)``) is held by process row b.

    * U_i = union of the needs of row i (``fetch_rows.pool``: each rank sends
      its ids, 8 B each, to the c-1 others);
    * rank (i, j) fetches F_ij = {v in U_i : block(v) % c == j}, requesting
      the rows of other blocks (8 B per id, ``fetch_rows.request``) from rank
      (block(v), j), which replies with 8 B length + (index + value bytes) x
      degree per row (``fetch_rows.reply``);
    * rank (i, j) then sends F_ij (ids 8 B, lengths 8 B, entries) to the c-1
      others of its row (``fetch_rows.share``): each rank receives the
      (c-1)/c of U_i that its peers fetched.

    Returns dict of arrays (length p): ``sent`` per operation name (what the
    byte counters measure), ``recv_fetch``, ``recv_share`` (received), and
    ``recv_targeted``: what a rank would receive if the row shared with each
    member only the rows that member asked for, skipping rows of the row's
    own block (every member holds them), with int32 indices on the wire.
    """
    from spla.layout import chunk_bounds
    nb = p // c
    bounds = chunk_bounds(n, nb)
    e = index_bytes + value_bytes
    e_fix = STORED_INDEX_BYTES + value_bytes
    sent = {k: np.zeros(p) for k in ("fetch_rows.pool", "fetch_rows.request",
                                     "fetch_rows.reply", "fetch_rows.share")}
    recv_fetch = np.zeros(p)     # replies + requests received
    recv_share = np.zeros(p)     # shared rows + pooled ids received
    recv_targeted = np.zeros(p)
    for i in range(nb):
        members = [i * c + j for j in range(c)]
        U = np.unique(np.concatenate([needs[r] for r in members]))
        own = np.searchsorted(bounds, U, side="right") - 1
        d = deg[U].astype(np.float64)
        for j, r in enumerate(members):
            F = own % c == j
            remote = F & (own != i)
            sent["fetch_rows.request"][r] += ID_BYTES * remote.sum()
            # replies come from rank (block, j) for each remote row
            rb = own[remote]
            srv = np.bincount(rb, weights=LEN_BYTES + e * d[remote], minlength=nb)
            srv_fix = np.bincount(rb, weights=LEN_BYTES + e_fix * d[remote], minlength=nb)
            cnt = np.bincount(rb, minlength=nb)
            for b in np.flatnonzero(cnt):
                sent["fetch_rows.reply"][b * c + j] += srv[b]
                recv_fetch[b * c + j] += ID_BYTES * cnt[b]      # requests it receives
                recv_targeted[b * c + j] += ID_BYTES * cnt[b]
            recv_fetch[r] += srv.sum()
            recv_targeted[r] += srv_fix.sum()
            if c > 1:
                sent["fetch_rows.pool"][r] += ID_BYTES * needs[r].size * (c - 1)
                share_r = (ID_BYTES + LEN_BYTES) * F.sum() + e * d[F].sum()
                sent["fetch_rows.share"][r] += share_r * (c - 1)
                pooled_from_peers = ID_BYTES * sum(needs[q].size for q in members if q != r)
                recv_share[r] += pooled_from_peers
                for q in members:
                    if q != r:
                        recv_share[q] += share_r
                # targeted: the rows r asked for that a peer fetched, not of block i
                mine = needs[r]
                o = np.searchsorted(bounds, mine, side="right") - 1
                peer = (o % c != j) & (o != i)
                recv_targeted[r] += (pooled_from_peers + LEN_BYTES * peer.sum()
                                     + e_fix * deg[mine[peer]].astype(np.float64).sum())
    # direct: every rank fetches the remote rows IT needs from the replica of the
    # owner block in its own process column (no pooling, no sharing).
    recv_direct = {8: np.zeros(p), 4: np.zeros(p)}
    for r in range(p):
        i, j = divmod(r, c)
        o = np.searchsorted(bounds, needs[r], side="right") - 1
        rem = o != i
        dsum = deg[needs[r][rem]].astype(np.float64).sum()
        cnt = np.bincount(o[rem], minlength=nb)
        for ib in (8, 4):
            recv_direct[ib][r] += LEN_BYTES * rem.sum() + (ib + value_bytes) * dsum
            recv_direct[ib][np.arange(nb) * c + j] += ID_BYTES * cnt  # requests served
    return {"sent": {k: v.tolist() for k, v in sent.items()},
            "recv_fetch": recv_fetch.tolist(), "recv_share": recv_share.tolist(),
            "recv_targeted": recv_targeted.tolist(),
            "recv_direct": recv_direct[4].tolist(), "recv_direct64": recv_direct[8].tolist()}


def oblivious_bytes(block_nnz, block_rows, n, nnz, p, c, value_bytes):
    """Per-rank bytes received by the sparsity-OBLIVIOUS 1.5D multiply, per call.

    Every rank receives 1/c of every block of A its process row does not
    hold (the 1.5D algorithm's (p/c)/c broadcast stages per rank): row lengths
    (8 B per row) and entries (int32 index + value) of those blocks.
    """
    nb = p // c
    out = np.zeros(p)
    for i in range(nb):
        other_nnz = nnz - block_nnz[i]
        other_rows = n - block_rows[i]
        per = (other_nnz * (STORED_INDEX_BYTES + value_bytes) + other_rows * LEN_BYTES) / c
        out[i * c:(i + 1) * c] = per
    return out.tolist()


# ---------------------------------------------------------------------------
# The MPI run
# ---------------------------------------------------------------------------
def _allgather_csr(comm, M):
    """Stack the CSR pieces of every rank of comm in rank order (typed buffers)."""
    from spla.matrix import Matrix
    from spla._util import indptr_from_counts
    from mpi4py import MPI
    lens = np.diff(M.indptr).astype(np.int64)
    idx = np.ascontiguousarray(M.indices)
    rc = np.array(comm.allgather(lens.size), np.int64)
    ec = np.array(comm.allgather(idx.size), np.int64)
    all_lens = np.empty(int(rc.sum()), np.int64)
    comm.Allgatherv(lens, [all_lens, (rc, np.concatenate([[0], np.cumsum(rc)[:-1]])),
                           MPI.INT64_T])
    all_idx = np.empty(int(ec.sum()), idx.dtype)
    mt = MPI._typedict[idx.dtype.char]
    comm.Allgatherv(idx, [all_idx, (ec, np.concatenate([[0], np.cumsum(ec)[:-1]])), mt])
    assert M.values is None
    return Matrix._new(indptr_from_counts(all_lens), all_idx, None, (int(rc.sum()), M.ncols))


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
    from mpi4py import MPI

    import spla
    import spla.comm as C
    import spla.dist as Dmod
    from spla.generators import rmat
    from spla.layout import chunk
    from sampling import GraphSAGE, LADIES

    comm = MPI.COMM_WORLD
    p, rank = comm.Get_size(), comm.Get_rank()
    n = 1 << args.scale
    log = (lambda *a: print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)) if rank == 0 \
        else (lambda *a: None)
    cs = [int(x) for x in args.c.split(",") if p % int(x) == 0]
    log(f"p={p}, scale={args.scale}, edge_factor={args.edge_factor}, c in {cs}, "
        f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}")

    # --- instrumentation (wrappers installed from here; spla unchanged) ----
    calls = []       # per fetch_rows call on this rank: (tag, seconds, distinct ids)
    mpi_time = {}    # op name -> seconds inside the MPI exchange wrappers
    state = {"tag": None}
    orig_fetch = Dmod.fetch_rows
    orig_a2a, orig_agv = C.alltoallv, C.allgatherv

    def fetch_wrapper(D, rows):
        t = time.perf_counter()
        out = orig_fetch(D, rows)
        dt = time.perf_counter() - t
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

    Dmod.fetch_rows = fetch_wrapper
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
    configs = [(c, False) for c in cs] + [(1, True)]
    for c, replicated in configs:
        names = repl_chosen if replicated else chosen
        if not names:
            continue
        import gc
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
            make, desc = samplers[name]
            gc.collect()
            t0 = time.perf_counter()
            S = make(G)
            t_ctor = time.perf_counter() - t0
            calls.clear()
            mpi_time.clear()
            _reset_peak_rss()
            state["tag"] = name
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
                       else "partitioned", "c": c, "p": p, "value_bytes": vb,
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
                    per_call = [model_bytes([needs_all[r][t] for r in range(p)], deg_F, n, p,
                                            c, vb) for t in range(ncalls)]
                    rec["model_calls"] = per_call
                    rec["union_rows_per_call"] = [
                        [int(np.unique(np.concatenate([needs_all[i * c + j][t]
                                                       for j in range(c)])).size)
                         for i in range(p // c)] for t in range(ncalls)]
                    ob = oblivious_bytes(block_nnz, block_rows, n, int(deg_F.sum()), p, c, vb)
                    rec["oblivious_per_call"] = ob
                tot = sum(sum(r["bytes_sent"].values()) for r in gathered)
                log(f"  {name} {mode}: {len(mbs)} minibatches on rank 0, sampled edges "
                    f"{sum(r['sampled_edges'] for r in gathered)}, bytes total {tot:,}, "
                    f"t_sample max {max(r['t_sample'] for r in gathered):.1f} s, "
                    f"peak RSS max {max(r['rss_mb'] for r in gathered):.0f} MB")
                if not replicated:
                    m = sum(sum(sum(v) for v in mc["sent"].values()) for mc in rec["model_calls"])
                    ratio = tot / m if m else float("nan")
                    log(f"    model total {m:,.0f}  measured/model {ratio:.4f}")
                results.append(rec)
            del S, mbs
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


def summarize(rec):
    """Numbers for one (p, sampler, mode, c) record."""
    p = rec["p"]
    ranks = rec["ranks"]
    ops = sorted({k for r in ranks for k in r["bytes_sent"]})
    sent = np.array([[r["bytes_sent"].get(k, 0) for k in ops] for r in ranks], np.float64)
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
    if rec["mode"] == "partitioned":
        mc = rec["model_calls"]
        msent = {k: np.sum([np.array(c_["sent"][k]) for c_ in mc], axis=0)
                 for k in mc[0]["sent"]}
        mrank = np.sum(list(msent.values()), axis=0)
        meas_rank = sent.sum(axis=1)
        rf = np.sum([np.array(c_["recv_fetch"]) for c_ in mc], axis=0)
        rs = np.sum([np.array(c_["recv_share"]) for c_ in mc], axis=0)
        rt = np.sum([np.array(c_["recv_targeted"]) for c_ in mc], axis=0)
        rd = np.sum([np.array(c_.get("recv_direct", [np.nan] * p)) for c_ in mc], axis=0)
        rd8 = np.sum([np.array(c_.get("recv_direct64", [np.nan] * p)) for c_ in mc], axis=0)
        ob = np.array(rec["oblivious_per_call"]) * rec["n_calls"]
        with np.errstate(divide="ignore", invalid="ignore"):
            rank_ratio = np.where(mrank > 0, meas_rank / mrank,
                                  np.where(meas_rank > 0, np.inf, 1.0))
        s.update(model_total=mrank.sum(), model_per_rank_mean=mrank.sum() / p,
                 model_sent_max=mrank.max(),
                 model_by_op={k: v.sum() for k, v in msent.items()},
                 ratio_total=(sent.sum() / mrank.sum()) if mrank.sum() else float("nan"),
                 ratio_rank_min=float(rank_ratio.min()), ratio_rank_max=float(rank_ratio.max()),
                 recv_fetch_mean=rf.mean(), recv_fetch_max=rf.max(),
                 recv_share_mean=rs.mean(), recv_share_max=rs.max(),
                 recv_max=(rf + rs).max(),
                 targeted_mean=rt.mean(), oblivious_mean=ob.mean(), oblivious_max=ob.max(),
                 direct_mean=rd.mean(), direct_max=rd.max(), direct64_mean=rd8.mean(),
                 needed_rows=np.sum(rec["needed_rows_per_call"]),
                 needed_entries=np.sum(rec["needed_entries_per_call"]),
                 union_rows=np.sum(rec["union_rows_per_call"]))
    return s


def report(paths, out_md, out_png):
    runs = [json.load(open(pth)) for pth in paths]
    runs.sort(key=lambda r: r["p"])
    import platform
    lines = []
    W = lines.append
    r0 = runs[0]
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
    W(f"python benchmarks/bench_dist.py --report {' '.join(paths)} --out {out_md} --png {out_png}")
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
      f"all P ranks; LADIES over the P/c process rows, then over the c members.")
    W("")
    W(_MODEL_TEXT)
    W("")
    # main table
    W("## Bytes per rank vs c")
    W("")
    W("Per-rank numbers are means over the P ranks (total / P) unless marked max; "
      "'sent max' is the largest per-rank count of bytes SENT (what the counters "
      "measure); 'recv max' the model's largest per-rank bytes received.  "
      "'ratio' = measured / model (total; per-rank range in brackets).  'oblivious' "
      "is the sparsity-oblivious 1.5D broadcast, summed over the sampler's layers; "
      "'direct' and 'targeted' are models of two possible changes (see the model "
      "section).  'fetch recv' and 'share recv' split the model's bytes received per "
      "rank into the column fetch (requests + replies) and the row pooling + sharing.")
    W("")
    W("| P | sampler | c | measured / rank | model / rank | ratio [per-rank range] | "
      "sent max meas. / model | recv max (model) | fetch recv / rank | share recv / rank | "
      "oblivious / rank | direct / rank (int64; int32) | targeted / rank |")
    W("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    summ = []
    for r in runs:
        for rec in r["results"]:
            s = summarize(rec)
            summ.append((r, rec, s))
            if rec["mode"] != "partitioned":
                continue
            W(f"| {r['p']} | {rec['sampler']} | {rec['c']} | {_fmt(s['measured_per_rank_mean'])} | "
              f"{_fmt(s['model_per_rank_mean'])} | {s['ratio_total']:.4f} "
              f"[{s['ratio_rank_min']:.3f}, {s['ratio_rank_max']:.3f}] | "
              f"{_fmt(s['measured_sent_max'])} / {_fmt(s['model_sent_max'])} | "
              f"{_fmt(s['recv_max'])} | {_fmt(s['recv_fetch_mean'])} | "
              f"{_fmt(s['recv_share_mean'])} | {_fmt(s['oblivious_mean'])} | "
              f"{_fmt(s['direct64_mean'])}; {_fmt(s['direct_mean'])} | "
              f"{_fmt(s['targeted_mean'])} |")
    W("")
    W("## Bytes by operation (totals over all ranks; measured / model)")
    W("")
    W("| P | sampler | c | pool | request | reply | share | other ops |")
    W("|---|---|---|---|---|---|---|---|")
    for r, rec, s in summ:
        if rec["mode"] != "partitioned":
            continue
        mb, md = s["measured_by_op"], s["model_by_op"]
        cells = []
        for k in ("fetch_rows.pool", "fetch_rows.request", "fetch_rows.reply",
                  "fetch_rows.share"):
            cells.append(f"{_fmt(mb.get(k, 0))} / {_fmt(md.get(k, 0))}")
        other = {k: v for k, v in mb.items() if k not in md}
        W(f"| {r['p']} | {rec['sampler']} | {rec['c']} | " + " | ".join(cells)
          + f" | {', '.join(f'{k}: {_fmt(v)}' for k, v in other.items()) or 'none'} |")
    W("")
    W("## Rows needed and fetched")
    W("")
    W("Summed over the sampler's fetch calls: distinct rows the ranks asked for "
      "(sum over ranks), the entries of those rows, and the distinct rows of the "
      "process rows' unions (sum over process rows) that the row fetches and shares.")
    W("")
    W("| P | sampler | c | rows asked (Σ ranks) | their entries | union rows (Σ process rows) |")
    W("|---|---|---|---|---|---|")
    for r, rec, s in summ:
        if rec["mode"] != "partitioned":
            continue
        W(f"| {r['p']} | {rec['sampler']} | {rec['c']} | {int(s['needed_rows']):,} | "
          f"{int(s['needed_entries']):,} | {int(s['union_rows']):,} |")
    W("")
    W("## Where the bytes come from")
    W("")
    W("Per layer (fetch call), the model's bytes received per rank (mean), and the "
      "rows fetched again: 'rows asked' sums each rank's distinct rows over the "
      "calls, 'distinct over calls' counts each row once per rank (a rank keeping "
      "the rows it fetched for an earlier layer would not fetch the rest again).  "
      "'fetched entries per sampled edge' compares the entries of the rows the "
      "ranks asked for with the edges the samplers kept.")
    W("")
    W("| P | sampler | c | bytes/rank per layer (model, output layer first) | rows asked | "
      "distinct over calls | entries asked | distinct entries | sampled edges | "
      "fetched entries per sampled edge |")
    W("|---|---|---|---|---|---|---|---|---|---|")
    for r, rec, s in summ:
        if rec["mode"] != "partitioned":
            continue
        per_layer = [(np.sum(mc["recv_fetch"]) + np.sum(mc["recv_share"])) / rec["p"]
                     for mc in rec["model_calls"]]
        ra = int(s["needed_rows"])
        rd = int(np.sum(rec.get("distinct_rows_all_calls", [0])))
        ea = int(s["needed_entries"])
        ed = int(np.sum(rec.get("distinct_entries_all_calls", [0])))
        W(f"| {r['p']} | {rec['sampler']} | {rec['c']} | "
          f"{', '.join(_fmt(x) for x in per_layer)} | {ra:,} | {rd:,} | {ea:,} | {ed:,} | "
          f"{s['edges']:,} | {ea / max(s['edges'], 1):.0f} |")
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
      "fetch = inside `spla.dist.fetch_rows` (wrapped), of which MPI = inside the "
      "`spla.comm` exchanges (waiting for slower ranks included); compute = total - "
      "fetch (the local sampling, extraction and relabelling).")
    W("")
    W("| P | sampler | mode | c | sampled edges | total max | total mean | fetch mean | "
      "of which MPI | compute mean | peak RSS max (MB) |")
    W("|---|---|---|---|---|---|---|---|---|---|---|")
    for r, rec, s in summ:
        W(f"| {r['p']} | {rec['sampler']} | {rec['mode']} | {rec['c']} | {s['edges']:,} | "
          f"{s['t_sample_max']:.1f} | {s['t_sample_mean']:.1f} | {s['t_fetch_mean']:.1f} | "
          f"{s['t_mpi_mean']:.1f} | {s['t_compute_mean']:.1f} | {s['rss_max']:.0f} |")
    W("")
    W(_kept_conclusion(out_md))
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    _plot(summ, out_png, r0)
    return summ


_MODEL_TEXT = """## The model

Notation: P ranks on a (P/c) x c grid, rank r = i·c + j in process row i and
column j; block b = rows `chunk(n, P/c, b)`, held by every rank of process row b.
For one `fetch_rows` call (one per sampler layer), N_r is the set of distinct
rows rank r asks for (gathered from the run), U_i = ∪_j N_{i·c+j} the process
row's union, d(v) the degree of row v in the fetched matrix, and
e = index bytes + value bytes per entry on the wire (spla.dist sends column
indices as int64: e = 8 for GraphSAGE's structural A, 8 + 4 = 12 for
LADIES's float32 Â).  Rank (i, j) fetches F_ij = {v ∈ U_i : block(v) mod c = j}.

Sparsity-aware fetch, per rank (i, j):

* requests + replies: for every v ∈ F_ij with block(v) ≠ i, an 8-byte id to
  rank (block(v), j) and back 8 bytes of length + e·d(v) bytes of row;
* pooling: 8 bytes per id of N_r to each of the c - 1 row peers;
* sharing: F_ij (ids 8 B, lengths 8 B, e·d(v) per row) to each of the c - 1
  row peers, so each rank RECEIVES the (c - 1)/c of U_i its peers fetched.

Measured counters are bytes SENT per rank and operation; the model is
evaluated per rank in the same terms (and, summed, equals bytes received).

Sparsity-oblivious 1.5D broadcast, per rank and per layer: the rank receives
1/c of every block it does not hold, (nnz(A) − nnz(own block))·(4 + value
bytes)/c plus 8 bytes per row length of those blocks, i.e. the (P/c)/c
broadcast stages of the 1.5D algorithm; summed over the sampler's layers
(3 for GraphSAGE, 2 for LADIES).

Two possible changes, evaluated by the same model on the same requests
(nothing was run for them):

* direct: every rank fetches exactly the remote rows IT needs (block(v) ≠ i)
  from the replica of the owner block in its own process column (the same
  column Alltoallv, without pooling or sharing): per rank 8 B per request
  served + (8 + e·d(v)) per row received; shown with the current int64 wire
  indices and with int32 (e = 4 + value bytes);
* targeted: keep the pooled 1.5D fetch, but share with each member only the
  rows it asked for and that are not in the row's own block (every member
  holds those), int32 indices on the wire."""

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


def _plot(summ, out_png, r0):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ps = sorted({r["p"] for r, _, _ in summ})
    names = sorted({rec["sampler"] for _, rec, _ in summ})
    fig, axes = plt.subplots(len(names), len(ps), figsize=(5.2 * len(ps), 4.0 * len(names) + 0.8),
                             squeeze=False)
    handles, labels = [], []
    for a, name in enumerate(names):
        for b, p in enumerate(ps):
            ax = axes[a][b]
            rows = [(rec["c"], s) for r, rec, s in summ
                    if r["p"] == p and rec["sampler"] == name and rec["mode"] == "partitioned"]
            rows.sort(key=lambda x: x[0])
            if not rows:
                ax.set_visible(False)
                continue
            cs = [x[0] for x in rows]
            def g(key):  # zeros cannot sit on a log axis: drawn as gaps, labelled
                return [x[1][key] if x[1][key] > 0 else np.nan for x in rows]
            ax.plot(cs, g("measured_per_rank_mean"), "o-", ms=8, label="measured (mean/rank)")
            ax.plot(cs, g("model_per_rank_mean"), "x--", ms=8, label="model (mean/rank)")
            ax.plot(cs, g("recv_max"), "v:", color="C1", alpha=.6, label="model, max recv/rank")
            ax.plot(cs, g("recv_fetch_mean"), "s-.", color="C4", alpha=.8,
                    label="model: fetch part (req+reply)")
            ax.plot(cs, g("recv_share_mean"), "P-.", color="C5", alpha=.8,
                    label="model: row-sharing part")
            ax.plot(cs, g("oblivious_mean"), "^-", color="C3", label="oblivious broadcast")
            ax.plot(cs, g("direct64_mean"), "d-", color="C2", alpha=.9,
                    label="direct per-rank fetch, int64 wire (model)")
            ax.plot(cs, g("direct_mean"), "d:", color="C2", alpha=.6,
                    label="direct per-rank fetch, int32 wire (model)")
            for c_, x in rows:
                if c_ == p:
                    ax.annotate("c = P: oblivious and\nfetch move 0 B",
                                (c_, x["measured_per_rank_mean"]), textcoords="offset points",
                                xytext=(-95, -40), fontsize=7)
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
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
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
    ap.add_argument("--json", default="/tmp/bench_dist.json")
    ap.add_argument("--report", nargs="+", help="render these JSON files (no MPI)")
    ap.add_argument("--out", default="benchmarks/results/dist_bytes.md")
    ap.add_argument("--png", default="benchmarks/results/dist_bytes.png")
    args = ap.parse_args(argv)
    if args.report:
        report(args.report, args.out, args.png)
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
