#!/usr/bin/env python
"""Feature-row gathers on the CPU: spla.take_rows against numpy's and torch's.

    python benchmarks/bench_gather.py [--nodes 262144] [--width 64] [--rows 10000,80000,500000]
                                      [--pubmed ../shared/data/pubmed.npz] [--sparse rmat:18,cora]
                                      [--out benchmarks/results/gather_cpu.md]

A loader gathers, per bulk, the feature rows of every minibatch's input
vertices: random rows of a float32 matrix.  Timed on the same ids (best of 7
after a warm-up, into a preallocated output where the call takes one):
numpy ``take(axis=0, out=)``, torch advanced indexing ``X[idx]`` (what the
loader ran for torch features), ``torch.index_select(out=)`` and
``spla.take_rows(out=)``, on numba's default threads and torch's.  With
``--pubmed``, also PubMed's own features at the input vertices of a bulk of
9 GraphSAGE [10, 10] minibatches of 1,024 seeds (the real graph's ids, not
random ones).  With ``--sparse DATASETS``, also each dataset's sparse
(bag-of-words) features, row-normalised as the docs' loaders use them, at
the input vertices of a bulk of 16 such minibatches of its training
vertices, written dense: scipy's ``X[ids].toarray()`` (what the loader ran)
against ``spla.take_rows`` of the ``spla.Matrix``, each into a new array
and into a preallocated one (a staging buffer).
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


def pubmed_case(path):
    """(label, PubMed's features, the input vertices of a bulk of 9 GraphSAGE minibatches)."""
    from graphs import pubmed_graph
    from sampling import GraphSAGE
    with np.load(path, allow_pickle=False) as z:
        X = np.ascontiguousarray(z["x"], np.float32)
    A = pubmed_graph(path)
    rng = np.random.default_rng(0)
    mbs = GraphSAGE(A, [10, 10]).sample(
        [rng.choice(A.nrows, 1024, replace=False) for _ in range(9)], seed=0)
    ids = np.concatenate([mb.input_nodes for mb in mbs]).astype(np.int64)
    return f"PubMed, {ids.size:,} input vertices", X, ids


def sparse_case(name):
    """(label, the float32 spla.Matrix of features, the input vertices of a bulk of 16)."""
    import spla
    from sampling import GraphSAGE
    from sampling.datasets import load
    ds = load(name)
    X = spla.normalize_rows(ds.x.astype(np.float32))
    rng = np.random.default_rng(0)
    mbs = GraphSAGE(ds.A, [10, 10]).sample(
        [rng.choice(ds.train_idx, min(1024, ds.train_idx.size), replace=False)
         for _ in range(16)], seed=0)
    ids = np.concatenate([mb.input_nodes for mb in mbs]).astype(np.int64)
    return f"{name}, {ids.size:,} input vertices, {X.shape[1]} columns", X, ids


def sparse_rows(label, X, ids):
    """The sparse case's table row: scipy against spla.take_rows, new and into ``out``."""
    import spla
    S = X.to_scipy()
    out = np.empty((ids.size, X.shape[1]), np.float32)

    def scipy_into():
        out[...] = S[ids].toarray()

    t = {"scipy new": best_ms(lambda: S[ids].toarray()),
         "scipy into": best_ms(scipy_into),
         "ours new": best_ms(lambda: spla.take_rows(X, ids, check=False)),
         "ours into": best_ms(lambda: spla.take_rows(X, ids, out=out, check=False))}
    assert np.array_equal(out, S[ids].toarray())
    return (f"| {label} | {t['scipy new']:.1f} | {t['ours new']:.1f} | "
            f"{t['scipy new'] / t['ours new']:.1f}x | {t['scipy into']:.1f} | "
            f"{t['ours into']:.1f} | {t['scipy into'] / t['ours into']:.1f}x |")


def main(argv=None):
    import numba
    import torch

    import spla
    from machine import emit_results, results_header
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=2 ** 18)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--rows", default="10000,80000,500000")
    p.add_argument("--pubmed", default=None, help="PubMed's .npz (adds its real-structure row)")
    p.add_argument("--sparse", default=None, metavar="DATASET",
                   help="datasets with sparse features, comma separated (e.g. rmat:18,cora): "
                        "adds their dense gather")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    load0, t0 = os.getloadavg(), time.perf_counter()
    X = np.random.default_rng(0).standard_normal((a.nodes, a.width)).astype(np.float32)
    cases = [(f"{k:,}", X, np.random.default_rng(1).integers(0, a.nodes, k))
             for k in (int(r) for r in a.rows.split(","))]
    if a.pubmed:
        cases.append(pubmed_case(a.pubmed))
    rows = []
    for label, X, ids in cases:
        T = torch.from_numpy(X)
        k = ids.size
        idx = torch.from_numpy(ids)
        out = np.empty((k, X.shape[1]), np.float32)
        tout = torch.from_numpy(out)
        t = {"numpy take": best_ms(lambda: np.take(X, ids, axis=0, out=out)),
             "torch X[idx]": best_ms(lambda: T[idx]),
             "torch index_select": best_ms(lambda: torch.index_select(T, 0, idx, out=tout)),
             "spla.take_rows": best_ms(lambda: spla.take_rows(X, ids, out=out, check=False))}
        assert np.array_equal(out, X[ids])
        ours = t["spla.take_rows"]
        rows.append(f"| {label} | {t['numpy take']:.2f} | {t['torch X[idx]']:.2f} | "
                    f"{t['torch index_select']:.2f} | {ours:.2f} | {t['numpy take'] / ours:.1f}x | "
                    f"{t['torch index_select'] / ours:.1f}x |")
        print(rows[-1], flush=True)
    cmd = "python benchmarks/bench_gather.py " + " ".join(sys.argv[1:] if argv is None else argv)
    md = results_header("Feature-row gathers on the CPU", cmd.strip(), time.perf_counter() - t0,
                        load0, {"python": sys.version.split()[0], "numpy": np.__version__,
                                "numba": f"{numba.__version__} ({numba.threading_layer()} layer, "
                                         f"{numba.get_num_threads()} threads)",
                                "torch": f"{torch.__version__} ({torch.get_num_threads()} threads)"})
    md += ["", f"{a.nodes:,} x {a.width} float32 features, random row ids (PubMed: its own "
           "features, the sampled ids); ms per gather (best of 7)",
           "", "| rows | numpy take | torch X[idx] | torch index_select | spla.take_rows | "
           "numpy / ours | index_select / ours |", "|---:|---:|---:|---:|---:|---:|---:|"]
    if a.sparse:
        srows = []
        for name in a.sparse.split(","):
            srows.append(sparse_rows(*sparse_case(name)))
            print(srows[-1], flush=True)
        rows += ["", "Sparse features written dense, ms per gather (best of 7): into a new "
                 "array, and into a preallocated one", "",
                 "| features | scipy toarray | spla.take_rows | scipy / ours | scipy into out "
                 "| take_rows into out | scipy / ours |", "|---|---:|---:|---:|---:|---:|---:|",
                 *srows]
    emit_results(md + rows, a.out)


if __name__ == "__main__":
    main()
