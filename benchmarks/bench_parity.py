"""Accuracy parity: our bulk-sampled GraphSAGE vs a full-batch GraphSAGE, same run.

For each dataset (Cora, Citeseer) and seed, in one process:

* ours: ``sampling.train.Trainer`` with the default options of the main job
  (2 layers, fanouts 10,10, hidden 64, batch 64, 20 epochs, Adam lr 0.01,
  weight decay 5e-4, dropout 0.5);
* reference: a full-batch GraphSAGE of the same width and depth (PyTorch
  Geometric's ``SAGEConv``, mean aggregation with root weight; a plain-torch
  full-batch GraphSAGE if torch_geometric does not import), the same
  row-normalised features, optimiser, dropout and weight decay, trained for
  200 full-batch epochs (one step per epoch), evaluated on the whole graph.

Test accuracy of both, and the difference, per seed and averaged.

    python benchmarks/bench_parity.py [--seeds 0 1 2 3 4] [--out benchmarks/results/parity_cpu.md]

torch_geometric is for this benchmark only (``pip install torch_geometric``).
"""

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

import spla  # noqa: E402
from sampling.datasets import load  # noqa: E402
from sampling.train import TrainOptions, Trainer  # noqa: E402

try:
    from torch_geometric.nn import SAGEConv
    PYG = True
except Exception:  # noqa: BLE001 - any import failure means: use plain torch
    PYG = False


class PlainSAGEConv(torch.nn.Module):
    """Full-batch mean-aggregation GraphSAGE layer with root weight (plain torch)."""

    def __init__(self, a, b):
        super().__init__()
        self.lin_l = torch.nn.Linear(a, b)
        self.lin_r = torch.nn.Linear(a, b, bias=False)

    def forward(self, x, A_mean):
        return self.lin_l(torch.sparse.mm(A_mean, x)) + self.lin_r(x)


class FullBatchSAGE(torch.nn.Module):
    def __init__(self, a, h, c, layers, dropout):
        super().__init__()
        dims = [a] + [h] * (layers - 1) + [c]
        conv = SAGEConv if PYG else PlainSAGEConv
        self.convs = torch.nn.ModuleList(conv(i, o) for i, o in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def forward(self, x, graph):
        for i, conv in enumerate(self.convs):
            x = torch.nn.functional.dropout(x, self.dropout, self.training)
            x = conv(x, graph)
            if i < len(self.convs) - 1:
                x = torch.relu(x)
        return x


def reference(ds, opts, seed, epochs):
    """Full-batch GraphSAGE; returns test accuracy (model of the last epoch)."""
    torch.manual_seed(seed)
    x = torch.from_numpy(spla.normalize_rows(ds.x.astype(np.float32)).to_scipy().toarray())
    S = ds.A.to_scipy().tocoo()
    if PYG:
        # edge_index (source, target): row v aggregates its neighbours.
        graph = torch.from_numpy(np.vstack([S.col, S.row]).astype(np.int64))
    else:
        deg = np.asarray(ds.A.to_scipy().sum(axis=1)).ravel()
        vals = 1.0 / np.maximum(deg[S.row], 1)
        graph = torch.sparse_coo_tensor(np.vstack([S.row, S.col]), vals.astype(np.float32),
                                        S.shape).coalesce()
    y = torch.from_numpy(ds.y)
    tr, te = torch.from_numpy(ds.train_idx), torch.from_numpy(ds.test_idx)
    model = FullBatchSAGE(x.shape[1], opts.hidden, ds.num_classes, opts.depth, opts.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=opts.lr, weight_decay=opts.weight_decay)
    for _ in range(epochs):
        model.train()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x, graph)[tr], y[tr])
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(x, graph).argmax(1)
    return float((pred[te] == y[te]).float().mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--ref-epochs", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for name in args.datasets:
        ds = load(name)
        for seed in args.seeds:
            opts = TrainOptions(dataset=name, seed=seed, threads=args.threads)
            t0 = time.perf_counter()
            ours = Trainer(opts, dataset=ds).fit()
            t_ours = time.perf_counter() - t0
            t0 = time.perf_counter()
            ref = reference(ds, opts, seed, args.ref_epochs)
            t_ref = time.perf_counter() - t0
            rows.append((name, seed, ours, ref, t_ours, t_ref))
            print(f"{name:9s} seed {seed}: ours {ours:.4f} ({t_ours:.1f} s)  full-batch "
                  f"{ref:.4f} ({t_ref:.1f} s)  diff {100 * (ours - ref):+.1f} points", flush=True)
    lines = []
    ref_name = ("PyTorch Geometric SAGEConv (mean, root weight)" if PYG
                else "plain-torch full-batch GraphSAGE (torch_geometric did not import)")
    lines.append("# Accuracy parity: bulk-sampled GraphSAGE vs full-batch GraphSAGE (CPU)\n")
    lines.append(f"- date: {datetime.date.today().isoformat()}")
    lines.append(f"- machine: {platform.machine()}, {os.cpu_count()} cores, "
                 f"{platform.platform()}, Python {platform.python_version()}, "
                 f"torch {torch.__version__}"
                 + (f", torch_geometric {__import__('torch_geometric').__version__}" if PYG
                    else ""))
    lines.append(f"- command: `python benchmarks/bench_parity.py --seeds "
                 f"{' '.join(map(str, args.seeds))} --threads {args.threads}`")
    lines.append(f"- ours: `python -m sampling.train` defaults (GraphSAGE 2 x {opts.hidden}, "
                 f"fanouts {','.join(map(str, opts.fanouts))}, batch {opts.batch_size}, "
                 f"{opts.epochs} epochs, lr {opts.lr}, weight decay {opts.weight_decay}, "
                 f"dropout {opts.dropout}); model of the last epoch")
    lines.append(f"- reference: {ref_name}, same width, depth, features, optimiser, dropout "
                 f"and weight decay, {args.ref_epochs} full-batch epochs; model of the last "
                 "epoch, full-graph inference")
    lines.append("- target: mean test accuracy within 2 points\n")
    lines.append("| dataset | seed | ours | full-batch | diff (points) | ours s | full-batch s |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, seed, o, r, to, tr in rows:
        lines.append(f"| {name} | {seed} | {o:.4f} | {r:.4f} | {100 * (o - r):+.1f} | "
                     f"{to:.1f} | {tr:.1f} |")
    lines.append("")
    lines.append("| dataset | mean ours | mean full-batch | diff (points) | within 2 points |")
    lines.append("| --- | ---: | ---: | ---: | --- |")
    for name in args.datasets:
        o = np.mean([r[2] for r in rows if r[0] == name])
        r = np.mean([r[3] for r in rows if r[0] == name])
        lines.append(f"| {name} | {o:.4f} | {r:.4f} | {100 * (o - r):+.1f} | "
                     f"{'yes' if abs(o - r) <= 0.02 else 'no'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
