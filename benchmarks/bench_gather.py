#!/usr/bin/env python
"""Feature-row gathers on the CPU: spla.take_rows against numpy's and torch's.

    python benchmarks/bench_gather.py [--nodes 262144] [--width 64] [--rows 10000,80000,500000]
                                      [--out benchmarks/results/gather_cpu.md]

A loader gathers, per bulk, the feature rows of every minibatch's input
vertices: random rows of a float32 matrix.  Timed on the same ids (best of 7
after a warm-up, into a preallocated output where the call takes one):
numpy ``take(axis=0, out=)``, torch advanced indexing ``X[idx]`` (what the
loader ran for torch features), ``torch.index_select(out=)`` and
``spla.take_rows(out=)``, on numba's default threads and torch's.
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]


def best_ms(fn, repeats=7):
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main(argv=None):
    import numba
    import torch

    import spla
    from machine import emit_results, results_header
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=2 ** 18)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--rows", default="10000,80000,500000")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    load0, t0 = os.getloadavg(), time.perf_counter()
    X = np.random.default_rng(0).standard_normal((a.nodes, a.width)).astype(np.float32)
    T = torch.from_numpy(X)
    rows = []
    for k in (int(r) for r in a.rows.split(",")):
        ids = np.random.default_rng(1).integers(0, a.nodes, k)
        idx = torch.from_numpy(ids)
        out = np.empty((k, a.width), np.float32)
        tout = torch.from_numpy(out)
        t = {"numpy take": best_ms(lambda: np.take(X, ids, axis=0, out=out)),
             "torch X[idx]": best_ms(lambda: T[idx]),
             "torch index_select": best_ms(lambda: torch.index_select(T, 0, idx, out=tout)),
             "spla.take_rows": best_ms(lambda: spla.take_rows(X, ids, out=out, check=False))}
        assert np.array_equal(out, X[ids])
        ours = t["spla.take_rows"]
        rows.append(f"| {k:,} | {t['numpy take']:.2f} | {t['torch X[idx]']:.2f} | "
                    f"{t['torch index_select']:.2f} | {ours:.2f} | {t['numpy take'] / ours:.1f}x | "
                    f"{t['torch index_select'] / ours:.1f}x |")
        print(rows[-1], flush=True)
    cmd = "python benchmarks/bench_gather.py " + " ".join(sys.argv[1:] if argv is None else argv)
    md = results_header("Feature-row gathers on the CPU", cmd.strip(), time.perf_counter() - t0,
                        load0, {"python": sys.version.split()[0], "numpy": np.__version__,
                                "numba": f"{numba.__version__} ({numba.threading_layer()} layer, "
                                         f"{numba.get_num_threads()} threads)",
                                "torch": f"{torch.__version__} ({torch.get_num_threads()} threads)"})
    md += ["", f"{a.nodes:,} x {a.width} float32 features, random row ids; ms per gather (best of 7)",
           "", "| rows | numpy take | torch X[idx] | torch index_select | spla.take_rows | "
           "numpy / ours | index_select / ours |", "|---:|---:|---:|---:|---:|---:|---:|"]
    emit_results(md + rows, a.out)


if __name__ == "__main__":
    main()
