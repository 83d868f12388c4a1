"""spla's GraphBLAS operators against python-graphblas (SuiteSparse:GraphBLAS).

Three kernels of graph algorithms on a symmetric graph, the same
computation on both sides, 2 threads each, best of ``--repeat`` runs after
one warm-up (numba compiles in the warm-up):

* triangle counting: ``C<L> = L plus_pair Lᵀ`` then a sum (L = strict lower
  triangle); the masked product never forms L·Lᵀ.  spla caches the
  transpose of Lᵀ on the matrix after the first call; a second row times
  the call with Lᵀ formed (and transposed) inside it;
* BFS from the highest-degree vertex, levels and parents, each step a
  ``vxm`` with ``any_secondi`` under the complement of the visited set;
* one PageRank step: a dense rank vector times the row-normalised matrix.

Graphs (``--graph``): ``rmat`` (R-MAT, whose generator numbers vertices by
a seeded random bijection: no locality at all), ``rmat-bfs`` (the same graph
renumbered in BFS order from vertex 0, unreached vertices after in a seeded
random order: neighbours get nearby ids, as in a crawled or reordered real
graph) and ``pubmed`` (the Planetoid PubMed citation graph of
``../shared/data/pubmed.npz``, symmetrised).  ``--memory`` adds the peak
memory growth of triangle counting, measured in a fresh child process per
library (``VmHWM`` reset through ``/proc/self/clear_refs``; tracemalloc does
not see numba's allocations).

python-graphblas is a benchmark-only peer (``pip install python-graphblas``),
not a dependency.  Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/bench_graphblas.py --scale 18 \\
        --out benchmarks/results/graphblas_cpu.md
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import spla  # noqa: E402
from spla import Vector, binary, semiring  # noqa: E402


def best(f, repeat):
    f()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def spla_triangles(L, LT):
    return spla.reduce_scalar(spla.mxm(L, LT, semiring.plus_pair, mask=L.S))


def spla_bfs(A, source):
    parent = Vector.from_coo([source], [source], size=A.nrows)
    level = Vector.from_coo([source], [0], size=A.nrows)
    frontier, depth = parent, 0
    while frontier.nvals:
        depth += 1
        frontier = spla.vxm(frontier, A, semiring.any_secondi, mask=~parent.S)
        parent = spla.ewise_add(parent, frontier, binary.first)
        level = spla.assign(level, depth, mask=frontier.S)
    return level, parent


def gb_bfs(gb, A, source):
    n = A.nrows
    parent = gb.Vector(gb.dtypes.INT64, n)
    parent[source] = source
    level = gb.Vector(gb.dtypes.INT64, n)
    level[source] = 0
    frontier = parent.dup()
    depth = 0
    while frontier.nvals:
        depth += 1
        frontier(~parent.S, replace=True) << frontier.vxm(A, gb.semiring.any_secondi)
        parent(frontier.S) << frontier
        level(frontier.S) << depth
    return level, parent


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBMED = os.path.join(os.path.dirname(ROOT), "shared", "data", "pubmed.npz")


def bfs_permutation(S, source, seed):
    """``perm`` with ``perm[t]`` = the old id of new vertex t: BFS order from
    ``source`` (neighbours in increasing id), then the unreached vertices in
    a random order drawn from ``seed``."""
    n = S.shape[0]
    ptr, idx = S.indptr, S.indices
    seen = np.zeros(n, np.bool_)
    seen[source] = True
    order, level = [np.array([source], np.int64)], np.array([source], np.int64)
    while level.size:
        nbrs = np.concatenate([idx[ptr[v]:ptr[v + 1]] for v in level])
        # first appearance of each unseen neighbour, in the order they are met
        _, first = np.unique(nbrs, return_index=True)
        nxt = nbrs[np.sort(first)]
        nxt = nxt[~seen[nxt]].astype(np.int64)
        seen[nxt] = True
        order.append(nxt)
        level = nxt
    rest = np.flatnonzero(~seen)
    order.append(rest[np.random.default_rng(seed).permutation(rest.size)])
    return np.concatenate(order)


def load_graph(graph, scale):
    """(name, spla structural symmetric Matrix) of ``--graph``."""
    import scipy.sparse as sp
    if graph == "pubmed":
        d = np.load(PUBMED, allow_pickle=False)
        n = d["indptr"].size - 1
        S = sp.csr_matrix((np.ones(d["indices"].size), d["indices"], d["indptr"]), shape=(n, n))
        S = ((S + S.T) > 0).astype(np.float64)
        S.setdiag(0)
        S.eliminate_zeros()
        return "PubMed (Planetoid citation graph, symmetrised)", spla.Matrix.from_scipy(
            S.tocsr(), structural=True)
    from spla.generators import rmat
    A = rmat(scale, 16, seed=1, symmetric=True).structure()
    name = f"R-MAT scale {scale}, edge factor 16, symmetric, seed 1"
    if graph == "rmat":
        return name, A
    S = A.to_scipy()
    perm = bfs_permutation(S, 0, seed=7)
    S = S[perm][:, perm].tocsr()
    S.sort_indices()
    return name + ", renumbered in BFS order from vertex 0", spla.Matrix.from_scipy(
        S, structural=True)


def run(graph, scale, repeat):
    import graphblas as gb
    gb.init("suitesparse", blocking=True)
    gb.ss.config["nthreads"] = 2
    t0 = time.perf_counter()
    gname, A = load_graph(graph, scale)
    gen = time.perf_counter() - t0
    S = A.to_scipy()
    Ag = gb.io.from_scipy_sparse(S)
    L = spla.select(A, "tril", -1)
    LT = L.T
    Lg = gb.select.tril(Ag, -1).new()
    rows = []

    t_s, tri_s = best(lambda: spla_triangles(L, LT), repeat)
    t_g, tri_g = best(lambda: Lg.mxm(Lg.T, gb.semiring.plus_pair).new(mask=Lg.S)
                      .reduce_scalar().value, repeat)
    assert int(tri_s) == int(tri_g), (tri_s, tri_g)
    rows.append(("triangle count (masked L·Lᵀ)", t_s, t_g, f"{int(tri_s)} triangles"))
    # spla caches a matrix's transpose (matrices are immutable): the row
    # above reuses Lᵀ's; here every call forms Lᵀ and its transpose anew.
    t_s, tri_s = best(lambda: spla_triangles(L, L.T), repeat)
    assert int(tri_s) == int(tri_g), (tri_s, tri_g)
    rows.append(("triangle count, Lᵀ formed in the call", t_s, t_g,
                 "python-graphblas: the same call"))

    src = int(np.argmax(np.diff(S.indptr)))
    t_s, (lv_s, _) = best(lambda: spla_bfs(A, src), repeat)
    t_g, (lv_g, _) = best(lambda: gb_bfs(gb, Ag, src), repeat)
    want = lv_g.to_dense(fill_value=-1)
    assert np.array_equal(lv_s.to_dense(fill=-1).astype(np.int64), want)
    rows.append(("BFS levels + parents (complemented mask)", t_s, t_g,
                 f"{int((want >= 0).sum())} reached, depth {int(want.max())}"))

    P = spla.normalize_rows(A)
    Pg = gb.io.from_scipy_sparse(P.to_scipy())
    n = A.nrows
    r = Vector.from_coo(np.arange(n), np.full(n, 1.0 / n), size=n)
    rg = gb.Vector.from_dense(np.full(n, 1.0 / n))
    t_s, w_s = best(lambda: spla.vxm(r, P), repeat)
    t_g, w_g = best(lambda: rg.vxm(Pg, gb.semiring.plus_times).new(), repeat)
    np.testing.assert_allclose(w_s.to_dense(), w_g.to_dense(fill_value=0), rtol=1e-12)
    rows.append(("PageRank step (r · P)", t_s, t_g, ""))
    return gname, A, L, gen, rows


def _vm(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return -1


def tc_memory_child(graph, scale, lib):
    """In a fresh process: peak memory growth (bytes) of one triangle count.

    The warm-up (numba compilation) runs on a small graph: a warm-up on the
    measured graph would leave its freed memory in the allocator, resident,
    and the measured call would reuse it without raising the peak.
    """
    import gc

    def triangles(A):
        L = spla.select(A, "tril", -1)
        if lib == "spla":
            LT = L.T
            return L, lambda: spla_triangles(L, LT)
        import graphblas as gb
        gb.init("suitesparse", blocking=True)
        gb.ss.config["nthreads"] = 2
        Lg = gb.select.tril(gb.io.from_scipy_sparse(A.to_scipy()), -1).new()
        return L, lambda: Lg.mxm(Lg.T, gb.semiring.plus_pair).new(mask=Lg.S).reduce_scalar()

    from spla.generators import rmat
    triangles(rmat(8, 16, seed=1, symmetric=True).structure())[1]()
    _, A = load_graph(graph, scale)
    L, f = triangles(A)
    gc.collect()
    import ctypes
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand freed heap pages back: not resident
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM to the current resident size
    before = _vm("VmRSS:")
    f()
    print(json.dumps({"growth": _vm("VmHWM:") - before, "nnz_L": int(L.nnz)}))


def tc_memory(graph, scale):
    """{lib: peak growth in bytes} from one child process per library."""
    out = {}
    for lib in ("spla", "graphblas"):
        # Fixed glibc thresholds: large blocks in their own mappings, freed
        # memory returned, so the resident size before the call holds no
        # freed pages that the call could reuse unseen.
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="0")
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--graph", graph,
                            "--scale", str(scale), "--memory-child", lib],
                           capture_output=True, text=True, check=True, env=env)
        out[lib] = json.loads(r.stdout.strip().splitlines()[-1])
    return out


def report(gname, A, L, gen, rows, cmd, mem, load):
    import graphblas as gb
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from machine import machine_info
    m = machine_info()
    out = [f"## {gname}", "",
           f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  ",
           f"Command: `{cmd}`  ",
           f"Machine: {m['cpu']}, {m['nproc']} cores available ({m['cpu_count']} online), "
           f"{m['ram']} RAM, kernel {m['kernel']}  ",
           f"Peers: python-graphblas {gb.__version__} (SuiteSparse:GraphBLAS, nthreads=2); "
           f"spla with NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'default')}  ",
           f"Load average before the run: {' '.join(f'{x:.2f}' for x in load)}  ",
           f"Graph: {gname}: n = {A.nrows}, "
           f"nnz(A) = {A.nnz}, nnz(L) = {L.nnz} (made in {gen:.1f} s)", "",
           "Best of the runs after a warm-up; the machine is shared with other jobs, so "
           "timings carry noise.", "",
           "| operation | spla (s) | python-graphblas (s) | spla speed-up | note |",
           "|---|---:|---:|---:|---|"]
    for name, ts, tg, note in rows:
        out.append(f"| {name} | {ts:.4f} | {tg:.4f} | {tg / ts:.2f}x | {note} |")
    if mem:
        nnz_l = mem["spla"]["nnz_L"]
        out += ["", "Triangle count, peak memory growth over the resident size before the call "
                f"(fresh process each; nnz(L) = {nnz_l}, {8 * nnz_l / 2**20:.1f} MiB as int64 "
                "indices):", "",
                "| library | peak growth (MiB) | per entry of L (bytes) |", "|---|---:|---:|"]
        for lib, r in mem.items():
            g = r["growth"]
            out.append(f"| {lib} | {g / 2**20:.1f} | {g / max(nnz_l, 1):.1f} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=18)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--graph", choices=("rmat", "rmat-bfs", "pubmed"), default="rmat")
    ap.add_argument("--memory", action="store_true",
                    help="also measure triangle counting's peak memory (child processes)")
    ap.add_argument("--memory-child", choices=("spla", "graphblas"), help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help="append the report to this file")
    args = ap.parse_args()
    if args.memory_child:
        return tc_memory_child(args.graph, args.scale, args.memory_child)
    load = os.getloadavg()
    gname, A, L, gen, rows = run(args.graph, args.scale, args.repeat)
    mem = tc_memory(args.graph, args.scale) if args.memory else None
    cmd = "NUMBA_NUM_THREADS={} python benchmarks/bench_graphblas.py {}".format(
        os.environ.get("NUMBA_NUM_THREADS", ""), " ".join(sys.argv[1:]))
    text = report(gname, A, L, gen, rows, cmd, mem, load)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
