#!/usr/bin/env python
"""Issue 36, target 3: R-GCN against a relation-blind GraphSAGE on ``mag:SCALE``.

    python benchmarks/bench_hetero_accuracy.py [--scale 16] [--epochs 3]
        [--batch-size 512] [--fanouts 10,10] [--lr 0.01] [--seed 0]
        [--models rgcn,blind] [--out FILE]
    mpiexec -n 4 python benchmarks/bench_hetero_accuracy.py ...

Both models train with the main job's ``Trainer`` (``python -m sampling.train
--dataset mag:SCALE --model rgcn``'s code path: the same loader, epochs,
optimiser, evaluation and ranks), with the same options:

* ``rgcn``: the job's own dataset, ``load("mag:SCALE")`` (reverse relations
  added), and its model, ``sampling.models.RGCN``;
* ``blind``: the same graph seen without types (``G.to_homogeneous()``: one
  vertex type, one relation, every type's features stacked), on which the
  same ``RGCN`` has one relation and is GraphSAGE with mean aggregation.
  The job has no option for it (``--model`` on a heterogeneous dataset
  takes ``rgcn`` only), hence this script.

Prints (rank 0) one markdown row per model: test accuracy and time.
"""

import argparse
import os
import sys
import time

import numpy as np


def blind_view(G):
    """``G`` without types: one vertex type ``node``, one relation, the papers' labels."""
    from sampling import HeteroGraph
    A, off = G.to_homogeneous()
    x = np.concatenate([G.x[t] for t in G.node_types])
    t = "paper"
    y = np.full(A.nrows, -1, np.int64)
    y[off[t]:off[t] + G.num_nodes[t]] = G.y[t]
    sp = {p: {"node": np.asarray(G.split(p, t), np.int64) + off[t]}
          for p in ("train", "val", "test")}
    return HeteroGraph({"node": A.nrows}, {("node", "to", "node"): A}, x={"node": x},
                       y={"node": y}, train_idx=sp["train"], val_idx=sp["val"],
                       test_idx=sp["test"], num_classes=G.num_classes,
                       name=f"{G.name} (homogeneous view)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=int, default=16)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--models", default="rgcn,blind")
    p.add_argument("--out", default=None, help="append the rows to this file")
    a = p.parse_args(argv)
    from sampling.datasets import load
    from sampling.train.launch import world_comm
    from sampling.train.options import TrainOptions
    from sampling.train.trainer import Trainer
    comm = world_comm()
    size = 1 if comm is None else comm.Get_size()
    rank = 0 if comm is None else comm.Get_rank()
    G = load(f"mag:{a.scale}")
    opts = TrainOptions(dataset=f"mag:{a.scale}", epochs=a.epochs, batch_size=a.batch_size,
                        fanouts=tuple(int(f) for f in a.fanouts.split(",")), hidden=a.hidden,
                        lr=a.lr, seed=a.seed, progress=False)
    rows = []
    for m in a.models.split(","):
        ds = G if m == "rgcn" else blind_view(G)
        t0 = time.perf_counter()
        acc = Trainer(opts, comm, dataset=ds).fit()
        sec = time.perf_counter() - t0
        rows.append(f"| mag:{a.scale} | {m} | {size} | {a.epochs} | {a.batch_size} | "
                    f"{a.fanouts} | {a.lr} | {a.seed} | {acc:.4f} | {sec:.0f} s |")
    if rank == 0:
        cmd = ("mpiexec -n %d " % size if size > 1 else "") + \
            "python benchmarks/bench_hetero_accuracy.py " + " ".join(argv or sys.argv[1:])
        md = "\n".join([f"`{cmd}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                        f"load average {os.getloadavg()[0]:.1f})", ""] + rows) + "\n"
        print(md)
        if a.out:
            with open(a.out, "a") as f:
                f.write(md + "\n")


if __name__ == "__main__":
    main()
