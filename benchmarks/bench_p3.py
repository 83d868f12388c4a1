#!/usr/bin/env python
"""P3: bytes per epoch and epoch time of the row fetch and of push-pull, against the feature width.

Run under MPI (rank 0 writes one JSON file), then render the table and the
plot from it (no MPI)::

    NUMBA_NUM_THREADS=1 mpiexec -n 4 python benchmarks/bench_p3.py --json /tmp/p3_p4.json
    python benchmarks/bench_p3.py --report /tmp/p3_p4.json \\
        --out benchmarks/results/p3_cpu.md --png benchmarks/results/p3_cpu.png

``--scale 12 --widths 64,1024 --epochs 1 --train 1024`` is a smoke test (seconds).

What a run does: for each feature width f (``--widths``, default 64, 256,
1024, 4096) it builds ``rmat:SCALE`` (``sampling.datasets.synthetic.rmat_dataset``)
with f-wide features made dense (row-normalised bag of words), keeps the
first ``--train`` training and ``--val`` validation vertices (so an epoch
is a few steps whatever the scale), and trains the same model twice with
``sampling.train.Trainer``, graph partitioned by hash (P3's placement):

* ``features='rows'``: each minibatch's feature rows are fetched from the
  ranks that hold them (1D rows by the same hash partition);
* ``features='columns'``: every rank holds f/p columns of every vertex,
  the first layer runs push-pull.

GraphSAGE, ``--fanouts``, ``--hidden``, ``--batch`` seeds per rank and step,
one minibatch per rank per bulk (``bulk = p``: no fetch shared between
minibatches, which is what the byte model assumes).  One warm-up epoch,
then ``--epochs`` measured ones.  The bytes of an epoch's training steps
are the epoch's counters less those of the validation pass (measured
alone: it is the same every epoch), per op, as the mean over the ranks of
what each rank sent.  ``sampling.train.p3.byte_model`` predicts the bytes per
step from the mean input and destination rows of the epoch's minibatches
(sampled again here, locally: sampling is rank-invariant), times the
steps.  The report prints measured against model, the crossover width of
both (bytes) and the measured crossover of epoch time.

The ranks share the machine's cores (4 ranks on 2 cores oversubscribe
them): byte counts are exact, timings indicative only.
"""

import argparse
import dataclasses
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from machine import run_or_report  # noqa: E402  (benchmarks/ is the script's own dir)

STRATEGIES = ("rows", "columns")
# The counters of each strategy's feature traffic (what byte_model models).
FEATURE_OPS = {"rows": ("features.",), "columns": ("p3.pull", "p3.gradient")}


def _dataset(args, f):
    from sampling.datasets.synthetic import rmat_dataset
    import spla
    ds = rmat_dataset(args.scale, num_features=f, seed=args.seed)
    x = spla.normalize_rows(ds.x.astype(np.float32)).to_scipy().toarray()
    return dataclasses.replace(ds, name=f"rmat:{args.scale} f={f}",
                               x=np.ascontiguousarray(x, np.float32),
                               train_idx=ds.train_idx[:args.train],
                               val_idx=ds.val_idx[:args.val])


def _rows_per_minibatch(ds, trainer, args, epoch):
    """Mean (input rows, first-block destinations) of an epoch's training minibatches."""
    from sampling import GraphSAGE, epoch_batches
    batches = epoch_batches(ds.train_idx, trainer.minibatch_size, seed=args.seed, epoch=epoch)
    mbs = GraphSAGE(ds.A, trainer.sampler.fanouts).sample(
        batches, seed=args.seed, epoch=epoch, batch_ids=list(range(len(batches))))
    return (float(np.mean([mb.input_nodes.size for mb in mbs])),
            float(np.mean([mb.blocks[0].num_dst for mb in mbs])), len(batches))


def _mean_over_ranks(comm, counts):
    """{op: mean bytes sent per rank} from each rank's counter."""
    every = comm.allgather(dict(counts))
    ops = sorted({k for d in every for k in d})
    return {k: sum(d.get(k, 0) for d in every) / comm.size for k in ops}


def _strategy(comm, ds, args, features):
    from spla import comm as C
    from sampling.train import TrainOptions, Trainer
    opts = TrainOptions(graph="partitioned", partition="hash", features=features,
                        hidden=args.hidden, fanouts=tuple(args.fanouts),
                        batch_size=args.batch * comm.size, bulk=comm.size,
                        epochs=args.epochs, threads=1, seed=args.seed, dropout=0.5)
    t0 = time.perf_counter()
    trainer = Trainer(opts, comm, dataset=ds)
    setup = time.perf_counter() - t0
    trainer.train_epoch(0)  # warm-up: numba, torch, first allocations
    with C.counting() as moved:
        t0 = time.perf_counter()
        trainer.evaluate("val")
        val_s = time.perf_counter() - t0
    val = _mean_over_ranks(comm, moved)
    val_s = max(comm.allgather(val_s))
    epochs = []
    for e in range(1, args.epochs + 1):
        with C.counting() as moved:
            stats = trainer.train_epoch(e)
        per_op = _mean_over_ranks(comm, moved)
        train = {k: v - val.get(k, 0) for k, v in per_op.items()}
        epochs.append(dict(bytes=train, loss=stats.loss, wall=stats.wall,
                           train_s=stats.wall - stats.times["eval"], times=stats.times))
    ops = sorted({k for ep in epochs for k in ep["bytes"]})
    mean = {k: float(np.mean([ep["bytes"].get(k, 0) for ep in epochs])) for k in ops}
    feature = sum(v for k, v in mean.items()
                  if any(k.startswith(prefix) for prefix in FEATURE_OPS[features]))
    rows = [_rows_per_minibatch(ds, trainer, args, e) for e in range(1, args.epochs + 1)]
    return dict(features=features, setup_s=setup, val_s=val_s, bytes_by_op=mean,
                feature_bytes=feature,
                train_s=float(np.mean([ep["train_s"] for ep in epochs])),
                fwd_bwd_s=float(np.mean([ep["times"]["fwd/bwd"] for ep in epochs])),
                fetch_s=float(np.mean([ep["times"]["fetch"] for ep in epochs])),
                allreduce_s=float(np.mean([ep["times"]["allreduce"] for ep in epochs])),
                losses=[ep["loss"] for ep in epochs],
                input_rows=float(np.mean([r[0] for r in rows])),
                dst_rows=float(np.mean([r[1] for r in rows])),
                minibatches=rows[0][2])


def run(args):
    from mpi4py import MPI
    from sampling.train.p3 import byte_model
    comm = MPI.COMM_WORLD
    p = comm.size
    out_rows = []
    for f in args.widths:
        ds = _dataset(args, f)
        res = {s: _strategy(comm, ds, args, s) for s in STRATEGIES}
        r = res["rows"]
        steps = math.ceil(r["minibatches"] / p)
        model = byte_model(f=f, hidden=args.hidden, batch=args.batch, fanouts=args.fanouts,
                           p=p, input_rows=r["input_rows"], dst_rows=r["dst_rows"])
        # byte_model is per rank and step of p minibatches; both strategies'
        # bytes are linear in the minibatches, so a last step with fewer than
        # p (some ranks idle) counts as its share of a full one.
        full_steps = r["minibatches"] / p
        row = dict(f=f, steps=steps, minibatches=r["minibatches"],
                   train_vertices=int(ds.train_idx.size), input_rows=r["input_rows"],
                   dst_rows=r["dst_rows"], model_rows=model["row_fetch"] * full_steps,
                   model_push=model["push_pull"] * full_steps,
                   model_crossover_f=model["crossover_f"], **{s: res[s] for s in STRATEGIES})
        out_rows.append(row)
        if comm.rank == 0:
            same = np.allclose(res["rows"]["losses"], res["columns"]["losses"], rtol=1e-5)
            print(f"f={f:5d}  row fetch {res['rows']['feature_bytes'] / 1e6:9.3f} MB/epoch "
                  f"(model {row['model_rows'] / 1e6:9.3f})  push-pull "
                  f"{res['columns']['feature_bytes'] / 1e6:9.3f} MB/epoch (model "
                  f"{row['model_push'] / 1e6:9.3f})  train s rows "
                  f"{res['rows']['train_s']:.3f} columns {res['columns']['train_s']:.3f}  "
                  f"losses equal: {same}",
                  flush=True)
    if comm.rank == 0:
        from machine import machine_info
        out = dict(dataset=f"rmat:{args.scale}", ranks=p, epochs=args.epochs,
                   hidden=args.hidden, fanouts=args.fanouts, batch=args.batch,
                   train=args.train, val=args.val, seed=args.seed, machine=machine_info(),
                   date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   command="NUMBA_NUM_THREADS=1 mpiexec -n %d python benchmarks/bench_p3.py %s"
                           % (p, " ".join(sys.argv[1:])),
                   rows=out_rows)
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
        print(f"wrote {args.json}")


def _crossover(fs, rows, cols):
    """The f where ``rows(f)`` meets ``cols(f)``, interpolated on log f; None if they never do."""
    d = np.log(np.asarray(rows, float)) - np.log(np.asarray(cols, float))
    lf = np.log(np.asarray(fs, float))
    for i in range(len(fs) - 1):
        if d[i] == 0:
            return float(fs[i])
        if d[i] * d[i + 1] < 0:
            return float(np.exp(lf[i] - d[i] * (lf[i + 1] - lf[i]) / (d[i + 1] - d[i])))
    return None


def _fit_crossover(fs, rows, cols):
    """Measured bytes crossover: row fetch fitted as a + b f, against push-pull's mean."""
    b, a = np.polyfit(np.asarray(fs, float), np.asarray(rows, float), 1)
    return (float(np.mean(cols)) - a) / b if b > 0 else float("inf")


def report(args):
    with open(args.report) as fh:
        data = json.load(fh)
    rows = data["rows"]
    m = data["machine"]
    fs = [r["f"] for r in rows]
    meas_rows = [r["rows"]["feature_bytes"] for r in rows]
    meas_push = [r["columns"]["feature_bytes"] for r in rows]
    lines = [f"# P3: row fetch against push-pull ({data['dataset']}, {data['ranks']} ranks)",
             "", f"Command: `{data['command']}`  ", f"Date: {data['date']}  ",
             f"Machine: {m['cpu']}, {m['nproc']} cores available, {m['ram']}  ",
             f"Model: GraphSAGE, fanouts {','.join(map(str, data['fanouts']))}, hidden "
             f"{data['hidden']}, dropout 0.5, {data['batch']} seeds per rank and step, one "
             f"minibatch per rank per bulk; graph partitioned by hash; "
             f"{rows[0]['train_vertices']} training vertices ({rows[0]['minibatches']} "
             f"minibatches, {rows[0]['steps']} steps per epoch); means over {data['epochs']} "
             "epochs after a warm-up epoch.  Bytes: what a rank sends per epoch in the "
             "training steps (mean over the ranks); 'model' is `sampling.train.p3.byte_model` with "
             "the epoch's measured mean input / destination rows.", "",
             "| f | input rows / minibatch | row fetch MB (model) | measured / model | "
             "push-pull MB (model) | measured / model | push-pull / row fetch | other MB rows | "
             "other MB columns | train s rows | train s columns | losses equal |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rf, pp = r["rows"], r["columns"]
        other_r = sum(rf["bytes_by_op"].values()) - rf["feature_bytes"]
        other_c = sum(pp["bytes_by_op"].values()) - pp["feature_bytes"]
        same = np.allclose(rf["losses"], pp["losses"], rtol=1e-5)
        lines.append(
            f"| {r['f']} | {r['input_rows']:.0f} | {rf['feature_bytes'] / 1e6:.2f} "
            f"({r['model_rows'] / 1e6:.2f}) | {rf['feature_bytes'] / r['model_rows']:.3f} | "
            f"{pp['feature_bytes'] / 1e6:.2f} ({r['model_push'] / 1e6:.2f}) | "
            f"{pp['feature_bytes'] / r['model_push']:.3f} | "
            f"{pp['feature_bytes'] / rf['feature_bytes']:.3f} | {other_r / 1e6:.2f} | "
            f"{other_c / 1e6:.2f} | {rf['train_s']:.3f} | {pp['train_s']:.3f} | "
            f"{'yes' if same else 'NO'} |")
    model_cross = float(np.mean([r["model_crossover_f"] for r in rows]))
    meas_cross = _fit_crossover(fs, meas_rows, meas_push)
    time_cross = _crossover(fs, [r["rows"]["train_s"] for r in rows],
                            [r["columns"]["train_s"] for r in rows])
    lines += ["", f"Crossover width (push-pull sends fewer bytes above it): model "
                  f"f = {model_cross:.0f}, measured f = {meas_cross:.0f} (row-fetch bytes "
                  f"fitted linear in f).  Epoch time: " +
              (f"push-pull is faster above f = {time_cross:.0f}." if time_cross else
               "no crossover between the widths measured."),
              "", "'other' is every other counter of the training steps: graph sampling "
                  "(`fetch_rows.*`), the gradient all-reduce (`train.allreduce`: push-pull "
                  "all-reduces no first-layer weight) and `p3.inputs` (the shared input "
                  "vertex ids)."]
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    print(text)
    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
        a1.plot(fs, [b / 1e6 for b in meas_rows], "o-", label="row fetch, measured")
        a1.plot(fs, [r["model_rows"] / 1e6 for r in rows], "--", color="C0", label="model")
        a1.plot(fs, [b / 1e6 for b in meas_push], "s-", color="C1",
                label="push-pull, measured")
        a1.plot(fs, [r["model_push"] / 1e6 for r in rows], "--", color="C1", label="model")
        a2.plot(fs, [r["rows"]["train_s"] for r in rows], "o-", label="row fetch")
        a2.plot(fs, [r["columns"]["train_s"] for r in rows], "s-", label="push-pull")
        for ax in (a1, a2):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("feature width f")
            ax.legend(fontsize=8)
        a1.set_yscale("log")
        a1.set_ylabel("MB sent per rank and epoch")
        a2.set_ylabel("training seconds per epoch")
        fig.suptitle(f"P3 push-pull vs row fetch, {data['dataset']}, {data['ranks']} ranks, "
                     f"hidden {data['hidden']}", fontsize=10)
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)
        print(f"wrote {args.png}")


def _ints(text):
    return [int(v) for v in text.split(",")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=int, default=14)
    p.add_argument("--widths", type=_ints, default=[64, 256, 1024, 4096])
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--fanouts", type=_ints, default=[10, 10])
    p.add_argument("--batch", type=int, default=64, help="seeds per rank and step")
    p.add_argument("--train", type=int, default=2048, help="training vertices kept")
    p.add_argument("--val", type=int, default=256, help="validation vertices kept")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    run_or_report(p, argv, run, report, "p3.json")


if __name__ == "__main__":
    main()
