#!/usr/bin/env python
"""Issue 36, target 2: a PyG ``to_hetero(GraphSAGE)`` trained on our minibatches vs on PyG's.

    PYTHONPATH=DIR python benchmarks/bench_hetero_parity.py [--scale 12]
        [--epochs 5] [--batch-size 256] [--fanouts 10,10] [--seeds 0,1,2,3,4]
        [--out FILE]

``DIR`` holds torch-sparse (``pip install --no-deps --target DIR
../shared/wheels/*.whl``), which PyG's ``NeighborLoader`` samples with
when pyg-lib is absent (a benchmark-only peer).

The graph: ``mag_dataset(scale).to_undirected()`` (features on every type,
labels on papers).  For each seed, one model,
``torch_geometric.nn.to_hetero(GraphSAGE(-1, hidden, 2, classes), metadata,
aggr="sum")``, initialised once and copied, trains twice with the same
optimiser (Adam), epochs, batch size and fanouts:

* ours: ``NodeLoader(HeteroGraphSAGE(G, fanouts), ("paper", train), ...)``,
  each minibatch through ``mb.to_pyg_data()``;
* PyG: ``NeighborLoader(data, num_neighbors=fanouts, input_nodes=("paper",
  train), ...)`` on the same graph as a ``HeteroData``.

Both are tested the same way: the model's forward on the whole graph
(every neighbour), accuracy on the test papers.  Prints both accuracies
per seed, their means ± sample standard deviations and the difference of
the means (target: within 1 point).
"""

import argparse
import copy
import os
import statistics
import sys
import time

import numpy as np


def _pyg_data(G):
    import torch
    from torch_geometric.data import HeteroData
    data = HeteroData()
    for t, n in G.num_nodes.items():
        data[t].num_nodes = n
        data[t].x = torch.from_numpy(np.asarray(G.x[t], np.float32))
    data["paper"].y = torch.from_numpy(np.asarray(G.y["paper"], np.int64))
    for rel, A in G.relations.items():
        S = A.to_scipy().tocoo()
        data[rel].edge_index = torch.from_numpy(np.stack([S.col, S.row]).astype(np.int64))
    return data


def _train(model, batches, epochs, lr):
    """Train on ``batches()`` (an epoch's HeteroData minibatches) with Adam."""
    import torch
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for epoch in range(epochs):
        for d in batches(epoch):
            n = d["paper"].batch_size
            out = model(d.x_dict, d.edge_index_dict)["paper"][:n]
            loss = torch.nn.functional.cross_entropy(out, d["paper"].y[:n])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def _test(model, data, test):
    import torch
    model.eval()
    with torch.no_grad():
        pred = model(data.x_dict, data.edge_index_dict)["paper"].argmax(1)
    return float((pred[test] == data["paper"].y[test]).float().mean())


def run_seed(G, data, seed, a):
    import torch
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.nn import GraphSAGE, to_hetero
    from sampling import HeteroGraphSAGE, NodeLoader
    fan = [int(f) for f in a.fanouts.split(",")]
    train = np.asarray(G.split("train", "paper"), np.int64)
    test = torch.from_numpy(np.asarray(G.split("test", "paper"), np.int64))
    torch.manual_seed(seed)
    base = to_hetero(GraphSAGE(-1, a.hidden, len(fan), G.num_classes), data.metadata(),
                     aggr="sum")
    with torch.no_grad():  # lazy shapes, then one initial state for both runs
        base(data.x_dict, data.edge_index_dict)
    ours_loader = NodeLoader(HeteroGraphSAGE(G, fan), ("paper", train), a.batch_size,
                             seed=seed)

    def ours(epoch):
        for mb in ours_loader:
            yield mb.to_pyg_data()
    pyg_loader = NeighborLoader(data, num_neighbors=fan, batch_size=a.batch_size,
                                input_nodes=("paper", torch.from_numpy(train)), shuffle=True)
    accs = []
    for batches in (ours, lambda epoch: iter(pyg_loader)):
        torch.manual_seed(seed + 1)  # the same global RNG state for both runs
        m = _train(copy.deepcopy(base), batches, a.epochs, a.lr)
        accs.append(_test(m, data, test))
    return accs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=int, default=12)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=None, help="append the table to this file")
    a = p.parse_args(argv)
    os.environ.setdefault("NUMBA_NUM_THREADS", str(a.threads))
    from sampling.datasets.mag import mag_dataset  # before torch: see bench_hetero.py
    import torch
    import torch_geometric.typing as tgt
    torch.set_num_threads(a.threads)
    G = mag_dataset(a.scale).to_undirected()
    data = _pyg_data(G)
    lib = "pyg-lib" if tgt.WITH_PYG_LIB else "torch-sparse" if tgt.WITH_TORCH_SPARSE else None
    if lib is None:
        sys.exit("PyG's NeighborLoader needs pyg-lib or torch-sparse: see the docstring")
    t0 = time.perf_counter()
    rows, ours, theirs = [], [], []
    for s in (int(x) for x in a.seeds.split(",")):
        o, t = run_seed(G, data, s, a)
        ours.append(o)
        theirs.append(t)
        rows.append(f"| {s} | {o:.4f} | {t:.4f} | {100 * (o - t):+.2f} |")
        print(rows[-1], flush=True)

    def ms(v):
        return (f"{100 * statistics.mean(v):.2f} ± "
                f"{100 * (statistics.stdev(v) if len(v) > 1 else 0.0):.2f}")
    diff = 100 * (statistics.mean(ours) - statistics.mean(theirs))
    md = "\n".join([
        f"Command: `python benchmarks/bench_hetero_parity.py {' '.join(argv or sys.argv[1:])}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
        f"{os.getloadavg()[0]:.1f}; {time.perf_counter() - t0:.0f} s; PyG's sampler: {lib}", "",
        "| seed | ours (`to_pyg_data`) | PyG `NeighborLoader` | difference (points) |",
        "|---|---|---|---|", *rows,
        f"| mean ± sd (%) | {ms(ours)} | {ms(theirs)} | {diff:+.2f} |"]) + "\n"
    print(md)
    if a.out:
        with open(a.out, "a") as f:
            f.write(md + "\n")


if __name__ == "__main__":
    main()
