"""spla's GraphBLAS operators against python-graphblas (SuiteSparse:GraphBLAS).

Three kernels of graph algorithms on a symmetric R-MAT graph, the same
computation on both sides, 2 threads each, best of ``--repeat`` runs after
one warm-up (numba compiles in the warm-up):

* triangle counting: ``C<L> = L plus_pair Lᵀ`` then a sum (L = strict lower
  triangle); the masked product never forms L·Lᵀ;
* BFS from the highest-degree vertex, levels and parents, each step a
  ``vxm`` with ``any_secondi`` under the complement of the visited set;
* one PageRank step: a dense rank vector times the row-normalised matrix.

python-graphblas is a benchmark-only peer (``pip install python-graphblas``),
not a dependency.  Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/bench_graphblas.py --scale 18 \\
        --out benchmarks/results/graphblas_cpu.md
"""

import argparse
import datetime
import os
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


def run(scale, repeat):
    import graphblas as gb
    gb.init("suitesparse", blocking=True)
    gb.ss.config["nthreads"] = 2
    t0 = time.perf_counter()
    from spla.generators import rmat
    A = rmat(scale, 16, seed=1, symmetric=True).structure()
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
    return A, L, gen, rows


def report(scale, A, L, gen, rows, cmd):
    import graphblas as gb
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from machine import machine_info
    m = machine_info()
    out = [f"# spla GraphBLAS operators vs python-graphblas, CPU, R-MAT scale {scale}", "",
           f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  ",
           f"Command: `{cmd}`  ",
           f"Machine: {m['cpu']}, {m['nproc']} cores available ({m['cpu_count']} online), "
           f"{m['ram']} RAM, kernel {m['kernel']}  ",
           f"Peers: python-graphblas {gb.__version__} (SuiteSparse:GraphBLAS, nthreads=2); "
           f"spla with NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'default')}  ",
           f"Graph: R-MAT scale {scale}, edge factor 16, symmetric, seed 1: n = {A.nrows}, "
           f"nnz(A) = {A.nnz}, nnz(L) = {L.nnz} (generated in {gen:.1f} s)", "",
           "Best of the runs after a warm-up; the machine is shared with other jobs, so "
           "timings carry noise.", "",
           "| operation | spla (s) | python-graphblas (s) | spla speed-up | note |",
           "|---|---:|---:|---:|---|"]
    for name, ts, tg, note in rows:
        out.append(f"| {name} | {ts:.4f} | {tg:.4f} | {tg / ts:.2f}x | {note} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=18)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    A, L, gen, rows = run(args.scale, args.repeat)
    cmd = "NUMBA_NUM_THREADS={} python benchmarks/bench_graphblas.py {}".format(
        os.environ.get("NUMBA_NUM_THREADS", ""), " ".join(sys.argv[1:]))
    text = report(args.scale, A, L, gen, rows, cmd)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
