#!/usr/bin/env python
"""Heterogeneous sampling: HeteroGraphSAGE against PyG's CPU hetero sampler.

    python benchmarks/bench_hetero.py [--scale 16] [--threads 2] [--batch 1024]
                                      [--fanouts 15,10] [--bulks 1,8] [--repeats 5]
                                      [--rounds 1] [--composed]
                                      [--out benchmarks/results/hetero_cpu.md]

Graph: ``mag_dataset(scale).to_undirected()`` (the MAG schema with reverse
relations: 7 relations, 4 vertex types).  Seeds: minibatches of ``--batch``
distinct training papers, the same for every method.  Fanouts the same for
every relation.

* ours: ``HeteroGraphSAGE(G, fanouts).sample(bulk of k minibatches)``, time
  per minibatch = bulk time / k;
* PyG: ``torch_geometric.sampler.NeighborSampler(HeteroData, num_neighbors)
  .sample_from_nodes`` one minibatch at a time, in this process (without
  pyg-lib it runs torch-sparse's ``hetero_neighbor_sample``; torch-sparse is
  a benchmark-only peer: ``pip install --no-deps --target DIR
  ../shared/wheels/*.whl`` and ``PYTHONPATH=DIR``).  Skipped with a message
  when absent.
* ``--pyg-python PY``: PyG's side runs instead under the interpreter ``PY``
  (a venv with pyg-lib, what ``NeighborLoader`` uses by default; pyg-lib is
  a benchmark-only peer, never a dependency): the graph and the seeds go
  over as .npz files, the timings come back as JSON.  There it is timed
  both in one process and as ``NeighborLoader(num_workers=--pyg-workers,
  persistent_workers=True)`` over the same seeds in the same order
  (workers kept between epochs, so start-up is not timed); the faster is
  "PyG's fastest CPU way".  ``--in-process`` keeps the in-process
  torch-sparse row as well.

The two count edges differently (our blocks re-sample a vertex's
neighbours at every layer it is a destination in; PyG expands each vertex
once), so the comparison is time per minibatch of the same seeds and
fanouts.  Timing: one warm-up call, then the median of ``--repeats``;
with ``--rounds N`` ours and PyG are timed in turn N times and each keeps
its best round (the per-round ratios are printed too).  ``--composed``
adds our bulks with the fused relation hops off (``RelationStack``'s
operator-by-operator composition), the same minibatches.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np


def _args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--fanouts", default="15,10")
    p.add_argument("--bulks", default="1,8")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None)
    p.add_argument("--append", action="store_true", help="append to --out")
    p.add_argument("--pyg-python", default=None,
                   help="an interpreter with PyG (and pyg-lib) to run PyG's side in")
    p.add_argument("--pyg-workers", type=int, default=2,
                   help="also time NeighborLoader(num_workers=N) in that interpreter (0: skip)")
    p.add_argument("--in-process", action="store_true",
                   help="with --pyg-python, also time PyG in this process (torch-sparse)")
    p.add_argument("--rounds", type=int, default=1,
                   help="time ours, then PyG, this many times in turn; each method's best round")
    p.add_argument("--composed", action="store_true",
                   help="also time our bulks with the fused relation hops off (the composition)")
    p.add_argument("--pyg-worker", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _median_time(fn, repeats):
    fn()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def _pyg_data(types, counts, rels, edges):
    import torch
    from torch_geometric.data import HeteroData
    data = HeteroData()
    for t, n in zip(types, counts):
        data[t].num_nodes = int(n)
    for rel, e in zip(rels, edges):
        data[tuple(rel)].edge_index = torch.from_numpy(e)
    return data


def _pyg_times(types, counts, rels, edges, batches, fanouts, repeats, workers):
    """PyG's timings on one graph: ``{method: [sec per minibatch, edges]}`` and its library."""
    try:
        import torch
        import torch_geometric.typing as tgt
        from torch_geometric.loader import NeighborLoader
        from torch_geometric.sampler import NeighborSampler, NodeSamplerInput
    except ImportError as e:  # pragma: no cover - benchmark only
        return {}, f"PyG missing ({e})"
    if not (tgt.WITH_PYG_LIB or tgt.WITH_TORCH_SPARSE):
        return {}, "neither pyg-lib nor torch-sparse is installed"
    lib = "pyg-lib" if tgt.WITH_PYG_LIB else "torch-sparse"
    data = _pyg_data(types, counts, rels, edges)
    out = {}
    sampler = NeighborSampler(data, num_neighbors=list(fanouts))
    inputs = [NodeSamplerInput(input_id=None, node=torch.from_numpy(b), input_type="paper")
              for b in batches]
    edges_seen = []

    def run():
        edges_seen.clear()
        for inp in inputs:
            res = sampler.sample_from_nodes(inp)
            edges_seen.append(sum(int(v.numel()) for v in res.row.values()))
    sec = _median_time(run, repeats) / len(batches)
    out["1 process"] = [sec, sum(edges_seen) / len(edges_seen)]
    if workers > 0:
        # NeighborLoader's own way to use several cores: worker processes
        # sample whole minibatches (kept alive between epochs, so the timed
        # epochs pay no start-up).  The same seeds in the same order.
        seeds = torch.from_numpy(np.concatenate(batches))
        loader = NeighborLoader(data, num_neighbors=list(fanouts), batch_size=len(batches[0]),
                                input_nodes=("paper", seeds), shuffle=False,
                                num_workers=workers, persistent_workers=True)

        def epoch():
            edges_seen.clear()
            for mb in loader:
                edges_seen.append(sum(int(mb[r].edge_index.shape[1]) for r in mb.edge_types))
        sec = _median_time(epoch, repeats) / len(batches)
        out[f"NeighborLoader, {workers} workers"] = [sec, sum(edges_seen) / len(edges_seen)]
        del loader
    return out, lib


def _graph_arrays(G):
    types = list(G.num_nodes)
    counts = [G.num_nodes[t] for t in types]
    rels, edges = [], []
    for rel, A in G.relations.items():
        S = A.to_scipy().tocoo()
        rels.append(list(rel))
        edges.append(np.stack([S.col, S.row]).astype(np.int64))  # PyG: row 0 sources
    return types, counts, rels, edges


def _pyg_subprocess(python, G, batches, fanouts, repeats, workers, threads):
    """Run the PyG side under interpreter ``python`` (e.g. a venv with pyg-lib).

    The graph and the seeds go over as .npz files, the timings come back as
    JSON on stdout: nothing is pickled.
    """
    import json
    import subprocess
    import tempfile
    types, counts, rels, edges = _graph_arrays(G)
    with tempfile.TemporaryDirectory() as d:
        np.savez(os.path.join(d, "graph.npz"), counts=np.asarray(counts, np.int64),
                 batches=np.stack(batches), fanouts=np.asarray(fanouts, np.int64),
                 **{f"edges{i}": e for i, e in enumerate(edges)})
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump({"types": types, "rels": rels, "repeats": repeats, "workers": workers,
                       "threads": threads}, f)
        res = subprocess.run([python, os.path.abspath(__file__), "--pyg-worker", d],
                             capture_output=True, text=True, check=False)
    if res.returncode != 0:
        return {}, f"{python} failed: {res.stderr.strip()[-400:]}"
    got = json.loads(res.stdout.strip().splitlines()[-1])
    return got["times"], got["lib"]


def _pyg_worker(d):
    """The child's side of ``_pyg_subprocess``: read the .npz, time PyG, print JSON."""
    import json
    import torch
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    torch.set_num_threads(meta["threads"])
    with np.load(os.path.join(d, "graph.npz")) as z:
        counts, batches, fanouts = z["counts"], list(z["batches"]), z["fanouts"].tolist()
        edges = [z[f"edges{i}"] for i in range(len(meta["rels"]))]
    times, lib = _pyg_times(meta["types"], counts, meta["rels"], edges, batches, fanouts,
                            meta["repeats"], meta["workers"])
    import torch_geometric
    print(json.dumps({"times": times, "lib": lib, "torch": torch.__version__,
                      "pyg": torch_geometric.__version__}))


def _ours(a, s, batches, bulks, k_max):
    """Our rows: ``(method, sec per minibatch, edges)`` per bulk (and composed)."""
    from spla.relation_hops import RelationStack
    rows = []
    for composed in ([False, True] if a.composed else [False]):
        for k in bulks:
            out = []

            def run():
                out.clear()
                for i in range(0, k_max, k):
                    out.extend(s.sample(batches[i:i + k], node_type="paper", seed=0))
            fused = RelationStack.fused
            if composed:  # the operator-by-operator path, for comparison
                RelationStack.fused = lambda self, *args, **kw: False
            try:
                sec = _median_time(run, a.repeats) / k_max
            finally:
                RelationStack.fused = fused
            edges = sum(m.num_sampled_edges for m in out) / len(out)
            name = f"HeteroGraphSAGE{' (composition)' if composed else ''}, bulk {k}"
            rows.append((name, sec, edges))
    return rows


def _peers(a, G, batches, fanouts):
    peers = []
    if a.pyg_python:
        times, lib = _pyg_subprocess(a.pyg_python, G, batches, fanouts, a.repeats,
                                     a.pyg_workers, a.threads)
        peers.append((times, lib, a.pyg_python))
    if not a.pyg_python or a.in_process:
        times, lib = _pyg_times(*_graph_arrays(G), batches, fanouts, a.repeats, 0)
        peers.append((times, lib, "this process"))
    return peers


def main(argv=None):
    a = _args(argv)
    if a.pyg_worker:
        return _pyg_worker(a.pyg_worker)
    os.environ.setdefault("NUMBA_NUM_THREADS", str(a.threads))
    # sampling first: importing kernels makes libgomp's threads sleep after a
    # parallel region (OMP_WAIT_POLICY), which torch's libgomp reads once at
    # its own import; spinning threads of two OpenMP runtimes share 2 cores badly.
    from sampling import HeteroGraphSAGE
    from sampling.datasets.mag import mag_dataset
    import torch
    torch.set_num_threads(a.threads)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    bulks = [int(k) for k in a.bulks.split(",")]
    G = mag_dataset(a.scale).to_undirected()
    rng = np.random.default_rng(0)
    train = rng.permutation(G.split("train", "paper"))
    k_max = max(bulks)
    batches = [np.sort(train[i * a.batch:(i + 1) * a.batch]) for i in range(k_max)]
    s = HeteroGraphSAGE(G, fanouts)
    best, ratios = {}, []
    # Rounds alternate the two sides, so that a burst of load on the shared
    # machine falls on both; each method keeps its best round.
    for _ in range(a.rounds):
        rows = _ours(a, s, batches, bulks, k_max)
        ours = min(t for _, t, _ in rows[:len(bulks)])
        peers = _peers(a, G, batches, fanouts)
        for times, lib, where in peers:
            for how, (sec, e) in times.items():
                rows.append((f"PyG ({lib}, {where}), {how}", sec, e))
        ratios += [min(sec for sec, _ in times.values()) / ours
                   for times, _, _ in peers[:1] if times]
        for n, t, e in rows:
            if n not in best or t < best[n][0]:
                best[n] = (t, e)
    rows = [(n, t, e) for n, (t, e) in best.items()]
    ours = min(t for n, t, _ in rows if n.startswith("HeteroGraphSAGE, bulk"))
    peers = [({how: best[f"PyG ({lib}, {where}), {how}"] for how in times}, lib, where)
             for times, lib, where in peers]
    lines = [f"# Heterogeneous sampling, mag:{a.scale} (undirected), fanouts {fanouts}, "
             f"{a.batch} paper seeds per minibatch, {k_max} minibatches, "
             f"{a.threads} threads", "",
             f"Command: `python benchmarks/bench_hetero.py {' '.join(argv or sys.argv[1:])}`  ",
             f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"load average at the end: {os.getloadavg()[0]:.1f}; {a.rounds} round(s), "
             f"each method's best", "",
             "| method | ms / minibatch | sampled edges / minibatch |", "|---|---|---|"]
    lines += [f"| {n} | {1e3 * t:.2f} | {e:,.0f} |" for n, t, e in rows]
    for times, lib, where in peers:
        if not times:
            lines.append(f"\nPyG ({where}) skipped: {lib}.")
        else:
            how, (best, _) = min(times.items(), key=lambda kv: kv[1][0])
            lines.append(f"\nPyG's fastest ({lib}, {where}: {how}) / ours (best bulk): "
                         f"{best / ours:.2f}x")
    if len(ratios) > 1:
        lines.append("\nPer round, PyG's fastest / ours: "
                     + ", ".join(f"{r:.2f}x" for r in ratios))
    md = "\n".join(lines) + "\n"
    print(md)
    if a.out:
        with open(a.out, "a" if a.append else "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
