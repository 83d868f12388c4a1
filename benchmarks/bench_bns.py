#!/usr/bin/env python
"""BNS-GCN: bytes per epoch and epoch time against the boundary keep probability q.

Run under MPI (rank 0 writes one JSON file), then render the table and the
plot from it (no MPI)::

    NUMBA_NUM_THREADS=1 mpiexec -n 4 python benchmarks/bench_bns.py --dataset rmat:16 \\
        --json /tmp/bns_p4.json
    python benchmarks/bench_bns.py --report /tmp/bns_p4.json \\
        --out benchmarks/results/bns_cpu.md --png benchmarks/results/bns_cpu.png

``--dataset rmat:12 --epochs 3`` is a smoke test (seconds).

What a run does: for each partition (``--partitions``, default block and
metis) and each q (``--q``, default 1, 0.5, 0.1, 0.01, 0), a
``sampling.train.bns.BNSTrainer`` (GCN, ``--layers`` x ``--hidden``, dropout 0.5)
trains one warm-up epoch, then ``--epochs`` epochs without validation.  Per
epoch it records, over the ranks: the boundary bytes sent (features
forward, gradients backward; the measured counters of the exchange), the
kept boundary vertices, the slowest rank's epoch seconds and its split
into compute and communication, the largest working memory (estimate from
the shapes: adjacency, features, exchanged rows, activations) and peak RSS.
The report gives the means over the measured epochs, the bytes and time
relative to q = 1, and throughput (epochs per second) against q: the
shape of the paper's throughput-vs-q figure on this machine.

The ranks share the machine's cores (4 ranks on 2 cores oversubscribe
them): byte counts are exact, timings indicative only.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from machine import run_or_report  # noqa: E402  (benchmarks/ is the script's own dir)


def run(args):
    from mpi4py import MPI
    from sampling.train.bns import BNSTrainer
    from sampling.datasets import load
    comm = MPI.COMM_WORLD
    ds = load(args.dataset)
    qs = [float(q) for q in args.q.split(",")]
    rows = []
    for part in args.partitions.split(","):
        for q in qs:
            t0 = time.perf_counter()
            t = BNSTrainer(ds, comm, boundary_keep=q, partition=part, hidden=args.hidden,
                           layers=args.layers, dropout=0.5, seed=args.seed)
            setup = time.perf_counter() - t0
            t.train_epoch(0, validate=False)  # warm-up (first sample, numba, torch)
            hist = [t.train_epoch(e, validate=False) for e in range(1, args.epochs + 1)]
            acc = t.evaluate("test")
            row = dict(
                partition=part, q=q, setup_s=setup, test_acc=acc,
                inner=hist[0].inner.tolist(), boundary=hist[0].boundary.tolist(),
                kept=float(np.mean([s.kept.sum() for s in hist])),
                bytes=float(np.mean([s.bytes_sent.sum() for s in hist])),
                bytes_received=float(np.mean([s.bytes_received.sum() for s in hist])),
                epoch_s=float(np.mean([s.epoch_s for s in hist])),
                compute_s=float(np.mean([s.compute_s.max() for s in hist])),
                comm_s=float(np.mean([s.comm_s.max() for s in hist])),
                work_mb=float(max(s.work_bytes.max() for s in hist) / 1e6),
                peak_rss_mb=float(max(s.peak_rss.max() for s in hist) / 1e6),
                loss=[s.loss for s in hist])
            rows.append(row)
            if comm.rank == 0:
                print(f"{part:6s} q={q:<5g} bytes/epoch {row['bytes'] / 1e6:9.3f} MB  "
                      f"epoch {row['epoch_s']:.3f} s (compute {row['compute_s']:.3f}, comm "
                      f"{row['comm_s']:.3f})  kept {row['kept']:.0f}  work "
                      f"{row['work_mb']:.1f} MB", flush=True)
    if comm.rank == 0:
        from machine import machine_info
        out = dict(dataset=args.dataset, ranks=comm.size, epochs=args.epochs,
                   hidden=args.hidden, layers=args.layers, seed=args.seed,
                   machine=machine_info(), date=time.strftime("%Y-%m-%d %H:%M UTC",
                                                              time.gmtime()),
                   command="NUMBA_NUM_THREADS=1 mpiexec -n %d python benchmarks/bench_bns.py %s"
                           % (comm.size, " ".join(sys.argv[1:])),
                   rows=rows)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.json}")


def report(args):
    with open(args.report) as f:
        data = json.load(f)
    rows = data["rows"]
    m = data["machine"]
    lines = [f"# BNS-GCN: bytes and epoch time against q ({data['dataset']}, "
             f"{data['ranks']} ranks)", "",
             f"Command: `{data['command']}`  ", f"Date: {data['date']}  ",
             f"Machine: {m['cpu']}, {m['nproc']} cores available, {m['ram']}  ",
             f"Model: GCN {data['layers']} layers x {data['hidden']}, dropout 0.5; means over "
             f"{data['epochs']} epochs after one warm-up epoch.", "",
             "| partition | q | boundary (sum) | kept/epoch | MB/epoch | bytes vs q=1 | "
             "epoch s | compute s | comm s | time vs q=1 | epochs/s | work MB | test acc |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for part in dict.fromkeys(r["partition"] for r in rows):
        mine = [r for r in rows if r["partition"] == part]
        full = next((r for r in mine if r["q"] == 1.0), mine[0])
        for r in mine:
            rel_b = r["bytes"] / full["bytes"] if full["bytes"] else float("nan")
            rel_t = r["epoch_s"] / full["epoch_s"]
            lines.append(f"| {part} | {r['q']:g} | {sum(r['boundary'])} | {r['kept']:.0f} | "
                         f"{r['bytes'] / 1e6:.3f} | {rel_b:.3f} | {r['epoch_s']:.3f} | "
                         f"{r['compute_s']:.3f} | {r['comm_s']:.3f} | {rel_t:.2f} | "
                         f"{1 / r['epoch_s']:.2f} | {r['work_mb']:.1f} | {r['test_acc']:.3f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
        for part in dict.fromkeys(r["partition"] for r in rows):
            mine = [r for r in rows if r["partition"] == part]
            qs = [max(r["q"], 1e-3) for r in mine]  # q = 0 drawn at 0.001 (log axis)
            a1.plot(qs, [1 / r["epoch_s"] for r in mine], "o-", label=part)
            a2.plot(qs, [r["bytes"] / 1e6 for r in mine], "o-", label=part)
        for ax in (a1, a2):
            ax.set_xscale("log")
            ax.set_xlabel("q (boundary keep probability; 0 drawn at 1e-3)")
            ax.legend()
        a1.set_ylabel("throughput (epochs / s)")
        a2.set_ylabel("boundary MB per epoch")
        a2.set_yscale("symlog", linthresh=0.01)
        a2.set_ylim(bottom=0)
        fig.suptitle(f"BNS-GCN on {data['dataset']}, {data['ranks']} ranks", fontsize=10)
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)
        print(f"wrote {args.png}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="rmat:16")
    p.add_argument("--q", default="1,0.5,0.1,0.01,0")
    p.add_argument("--partitions", default="block,metis")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    run_or_report(p, argv, run, report, "bns.json")


if __name__ == "__main__":
    main()
