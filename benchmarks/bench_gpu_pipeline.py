#!/usr/bin/env python
"""The hybrid CPU-sampling / GPU-training pipeline and the placements (one GPU).

Run on a machine with a CUDA GPU (exits with status 2 without one)::

    python benchmarks/bench_gpu_pipeline.py [--epochs 2] [--prefetch 2]
        [--pipeline-dataset rmat:18] [--datasets cora,rmat:16]
        [--placement-epochs 20] [--switch-interval 0.0005] [--no-pyg]
        [--sections pipeline,placements] [--out FILE]

Every run is the main job's ``Trainer`` (``python -m sampling.train
--device cuda --sample-on ...``), GraphSAGE with the default fanouts, seed
0, in this process, each dataset loaded once; the first epoch of every
configuration is a warm-up (compilation, allocator) and is not timed.

**(a) pipeline**: on ``--pipeline-dataset``, ``--sample-on cpu`` with
``--prefetch K`` (sampling, gathering, packing into pinned buffers and the
side-stream copy in the background thread) against ``--prefetch 0`` (the
same job with a blocking copy after each gather).  Printed: epoch seconds,
the phases (sample, fetch, copy, train = fwd/bwd), loop / max(sample,
copy, train) (issue 37's target: <= 1.15), loop / max(producer, train)
where the producer is the one thread's sample + fetch + copy, and the
speed-up of prefetch over the synchronous job (target >= 3x); then
``--prefetch K`` again with the interpreter's switch interval lowered to
``--switch-interval`` seconds (``sys.setswitchinterval``; 0 skips the
row): the training loop's Python and the producer's each wait for the
other to give up the interpreter lock, up to the interval (5 ms by
default) per wait, so the row says how much of the overlap that costs.
*loop* is the training loop's elapsed time (``EpochStats.train_wall``):
the epoch less its validation pass, which none of the phases counts
(dividing the whole epoch by them charged the validation to the
pipeline).

**(b) placements**: on each of ``--datasets``, ``--device cpu`` and
``--device cuda`` with ``--sample-on cpu`` (with ``--prefetch K``),
``cuda`` and ``uva``: test accuracy and mean epoch seconds side by side
(target: accuracy within 1 point of the CPU run); then PyG's
``NeighborLoader`` (pyg-lib, else torch-sparse, sampling in the training
process) feeding ``SAGEConv`` layers on the GPU with the same settings
(``bench_e2e.py``'s recipe; skipped with the reason where PyG has no
sampler: pyg-lib travels to a device as a wheel built for its torch).
Each run trains the main job's number of epochs (``--placement-epochs``),
so that the accuracies compared are those of trained models: after two
epochs they still differ by several points between runs that differ only
in the device's arithmetic and dropout masks.

Prints a markdown table; ``--out FILE`` appends it to FILE.
"""

import argparse
import os
import statistics
import sys
import time

# The repository's packages, whether or not the project is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pipeline-dataset", default="rmat:18")
    p.add_argument("--datasets", default="cora,rmat:16")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs (after one warm-up)")
    p.add_argument("--placement-epochs", type=int, default=None,
                   help="epochs of each placement run, the first untimed (default: the main "
                        "job's own, so that the accuracies are those of a trained model)")
    p.add_argument("--sections", default="pipeline,placements",
                   help="comma-separated subset of: pipeline, placements")
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--switch-interval", type=float, default=0.0005,
                   help="seconds: the pipeline section's third row runs --prefetch K with "
                        "sys.setswitchinterval at this (0: no such row)")
    p.add_argument("--no-pyg", dest="pyg", action="store_false",
                   help="placements: no row of PyG's NeighborLoader feeding a GPU model")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=None, help="CPU sampling threads")
    p.add_argument("--out", default=None, help="append the markdown table to this file")
    args = p.parse_args(argv)
    args.sections = set(args.sections.split(","))
    unknown = args.sections - {"pipeline", "placements"}
    if unknown:
        p.error(f"--sections: unknown {', '.join(sorted(unknown))} (pipeline, placements)")
    return args


def have_gpu():
    try:
        import cupy
        import torch
        return torch.cuda.is_available() and cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no cupy, torch, driver or device
        return False


def run_config(ds, name, epochs, **kw):
    """(stats of the timed epochs, test accuracy) of one configuration."""
    import torch
    from sampling.train import TrainOptions, Trainer
    opts = TrainOptions(dataset=name, seed=0, progress=False, epochs=epochs + 1, **kw)
    t = Trainer(opts, dataset=ds)
    # fit, as the main job trains: each epoch's next one starts sampling
    # during its validation pass (sampling.train.ahead).
    acc = t.fit()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return t.history[1:], acc


def mean(stats, f):
    return statistics.fmean(f(s) for s in stats)


def pipeline(args, lines, log):
    from sampling.datasets import load
    name = args.pipeline_dataset
    ds = load(name)
    lines += [f"### (a) Hybrid pipeline on `{name}` (--sample-on cpu, batch "
              f"{args.batch_size}, {args.epochs} timed epochs)", "",
              "| prefetch | epoch s | loop s | sample s | fetch s | copy s | train s | "
              "loop/max(sample,copy,train) | loop/max(producer,train) |",
              "|---|---|---|---|---|---|---|---|---|"]
    loops = {}
    runs = [(0, None), (args.prefetch, None)]
    if args.switch_interval > 0:
        runs.append((args.prefetch, args.switch_interval))
    default_interval = sys.getswitchinterval()
    for k, interval in runs:
        if interval is not None:
            sys.setswitchinterval(interval)
        try:
            stats, _ = run_config(ds, name, args.epochs, device="cuda", sample_on="cpu",
                                  prefetch=k, batch_size=args.batch_size, threads=args.threads)
        finally:
            sys.setswitchinterval(default_interval)
        wall = mean(stats, lambda s: s.wall)
        loop = mean(stats, lambda s: s.train_wall)
        ph = {p: mean(stats, lambda s, p=p: s.times[p]) for p in ("sample", "fetch", "fwd/bwd")}
        copy = mean(stats, lambda s: s.copy)
        r1 = loop / max(ph["sample"], copy, ph["fwd/bwd"])
        r2 = loop / max(ph["sample"] + ph["fetch"] + copy, ph["fwd/bwd"])
        label = k if interval is None else f"{k}, switch interval {interval * 1e3:g} ms"
        loops[label] = loop
        lines.append(f"| {label} | {wall:.3f} | {loop:.3f} | {ph['sample']:.3f} | "
                     f"{ph['fetch']:.3f} | {copy:.3f} | {ph['fwd/bwd']:.3f} | {r1:.2f} | "
                     f"{r2:.2f} |")
        log(lines[-1])
    lines += ["", f"Speed-up of --prefetch {args.prefetch} over synchronous copies: "
              f"{loops[0] / loops[args.prefetch]:.2f}x in the training loop (target >= 3x; "
              "loop/max target <= 1.15)", ""]
    if len(runs) > 2:
        lowered = loops[label]      # the last run's
        lines[-1:-1] = [f"The lower switch interval: {loops[args.prefetch] / lowered:.2f}x "
                        f"the loop with the default ({default_interval * 1e3:g} ms).", ""]


def placements(args, lines, log):
    from sampling.datasets import load
    lines += ["### (b) Placements (test accuracy, mean epoch seconds)", "",
              "| dataset | run | test acc | epoch s |", "|---|---|---|---|"]
    runs = [("--device cpu", dict(device="cpu")),
            ("cuda, --sample-on cpu", dict(device="cuda", sample_on="cpu",
                                           prefetch=args.prefetch)),
            ("cuda, --sample-on cuda", dict(device="cuda", sample_on="cuda")),
            ("cuda, --sample-on uva", dict(device="cuda", sample_on="uva"))]
    from sampling.train.options import DEFAULT_EPOCHS
    total = args.placement_epochs or DEFAULT_EPOCHS["sampled"]
    lines[-2:-2] = [f"Each run trains {total} epochs (the first untimed) with seed 0.", ""]
    skipped = None
    for name in [d for d in args.datasets.split(",") if d]:
        ds = load(name)
        for label, kw in runs:
            stats, acc = run_config(ds, name, max(total - 1, 1), threads=args.threads, **kw)
            lines.append(f"| {name} | {label} | {acc:.4f} | "
                         f"{mean(stats, lambda s: s.wall):.3f} |")
            log(lines[-1])
        if args.pyg:
            result, skipped = pyg_on_gpu(name, ds, max(total - 1, 1))
            if result is not None:
                lines.append(f"| {name} | PyG NeighborLoader ({result['sampler']}, in the "
                             f"training process) + SAGEConv on cuda | {result['acc']:.4f} | "
                             f"{result['s_epoch']:.3f} |")
                log(lines[-1])
    if skipped:
        lines += ["", f"PyG's row was skipped: {skipped}"]
    lines.append("")


def pyg_on_gpu(name, ds, epochs):
    """PyG's ``NeighborLoader`` feeding ``SAGEConv`` layers on the GPU with the main job's
    settings (``bench_e2e``'s recipe): its summary, or None and why it was skipped.

    The epoch's wall time is the median over ``epochs`` timed epochs after a warm-up one;
    the minibatch's copy to the GPU counts as loading, as our loader's does."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import types
    import bench_e2e
    tg, why = bench_e2e.pyg_or_none()
    if tg is None:
        return None, why
    import torch_geometric.typing as tgt
    ds, x, y = bench_e2e.prepare(name, ds)
    data = bench_e2e.pyg_data(ds, x, y)
    cfg = dict(bench_e2e.CONFIGS["planetoid"])      # the main job's defaults
    run = types.SimpleNamespace(seed=0, epochs=epochs)
    result = bench_e2e.run_pyg(ds, data, cfg, run, 0, lambda *a: None, device="cuda")
    result["sampler"] = "pyg-lib" if tgt.WITH_PYG_LIB else "torch-sparse"
    return result, None


def main(argv=None):
    args = parse_args(argv)
    if not have_gpu():
        print("bench_gpu_pipeline: needs cupy and a CUDA GPU", file=sys.stderr)
        return 2
    import torch
    log = lambda *a: print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)
    started = time.perf_counter()
    lines = [f"## GPU pipeline and placements ({torch.cuda.get_device_name()}, "
             f"{time.strftime('%Y-%m-%d')})", "",
             "Command: `python benchmarks/bench_gpu_pipeline.py "
             + " ".join(sys.argv[1:] if argv is None else argv) + "`", ""]
    if "pipeline" in args.sections:
        pipeline(args, lines, log)
    if "placements" in args.sections:
        placements(args, lines, log)
    lines.append(f"Wall time of the script: {time.perf_counter() - started:.0f} s")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
