#!/usr/bin/env python
"""Hot-feature cache (Quiver): hit rate and bytes per epoch against the cache size.

Run under MPI; rank 0 writes the markdown results file::

    NUMBA_NUM_THREADS=1 mpiexec -n 4 python benchmarks/bench_cache.py \\
        [--dataset rmat:16,graph500:16] [--fractions 0,0.05,0.1,0.2] \\
        [--policies degree,frequency] [--c 1,2] [--batch-size 64] [--bulks 0,16,4] \\
        [--epochs 1] [--out benchmarks/results/cache_cpu.md] [--json /tmp/cache.json]

For every dataset (``rmat:16``, the main job's planted-community R-MAT
dataset; ``graph500:16``, the pure power-law R-MAT graph with random
features, see ``graph500_dataset``), every bulk size in ``--bulks`` (0: the
main job's default, sized by its 1 GiB memory budget: on these graphs the
whole epoch in one bulk, so one feature fetch per epoch) and every
replication c in ``--c``, the main job's
``Trainer`` (``python -m sampling.train --graph partitioned --replication c
--feature-cache F --cache-policy P``) is built on the same dataset (loaded
once) for F = 0 and every (policy, F > 0), and trains ``--epochs`` epochs
(GraphSAGE, the main job's default fanouts 10,10, ``--batch-size`` seeds
per step over all ranks, seed 0).  Every configuration trains on the same
minibatches and reaches the same parameters (the MPI tests check it); only
the bytes and the times differ.

Reported per configuration (an epoch is the main job's: training and the
validation pass):

* hit rate: rows served by the cache over the rows fetched (distinct rows
  per fetch call, summed over the ranks);
* feature bytes per epoch: ``features.request`` + ``features.reply`` sent
  by all ranks (summed over the ranks, so also the bytes received), and
  their ratio to the no-cache row: the issue's goal is at most 0.5x for a
  10 % cache;
* all bytes per epoch (the table's MB moved: the samplers' graph row
  fetches and the gradient Allreduce too, which the cache does not touch);
* cache memory per rank (copied rows and ids; max over the ranks) against
  the rank's own feature block;
* one-time cost of building the cache: its bytes (the hot rows from their
  owners, the degree Allgatherv or the counts' Allreduce, and for
  'frequency' the pre-sampled epoch's graph row fetches) and the extra
  seconds of building the trainer;
* seconds per epoch (fetch phase and total, after one untimed warm-up
  epoch): **the ranks oversubscribe the cores; byte counts and hit rates
  are exact, timings indicative only**.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from machine import (mpi_command, results_header, run_on_world,  # noqa: E402
                     training_versions as versions, write_results)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="rmat:16,graph500:16",
                   help="comma-separated: sampling.datasets.load names, or graph500:SCALE "
                        "(the pure power-law R-MAT graph, no planted communities)")
    p.add_argument("--fractions", default="0,0.05,0.1,0.2")
    p.add_argument("--policies", default="degree,frequency")
    p.add_argument("--c", default="1,2", help="replications, comma-separated (each divides P)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--bulks", default="0,16,4",
                   help="minibatches per bulk, comma-separated; 0 = the main job's default "
                        "(from its 1 GiB memory budget)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--out", default=os.path.join(HERE, "results", "cache_cpu.md"))
    p.add_argument("--json", default=None)
    return p.parse_args(argv)


def graph500_dataset(scale, seed=1, num_features=64, num_classes=8):
    """``graph500:SCALE``: the pure power-law R-MAT graph of bench_dist.py, for bytes only.

    ``spla.generators.rmat(scale, 16, seed=1)`` (Graph500 probabilities,
    symmetric, no self loops), random float32 features and random labels
    (the accuracy means nothing; the bytes do), a seeded random 10/10/20 %
    split of the non-isolated vertices.  Unlike ``rmat:SCALE`` it has no
    planted community edges, which are uniform and so dilute the skew.
    """
    from sampling.datasets import from_scipy
    from spla.generators import rmat
    A = rmat(scale, 16, seed=seed)
    n = A.nrows
    rng = np.random.default_rng(seed)
    x = rng.random((n, num_features), dtype=np.float32)
    y = rng.integers(0, num_classes, n)
    live = rng.permutation(np.flatnonzero(np.asarray(A.row_degrees()) > 0))
    a, b, c = (int(f * live.size) for f in (0.1, 0.2, 0.4))
    return from_scipy(A, x, y, np.sort(live[:a]), np.sort(live[a:b]), np.sort(live[b:c]),
                      name=f"graph500:{scale}", num_classes=num_classes)


def load_dataset(name):
    if name.startswith("graph500:"):
        return graph500_dataset(int(name.split(":")[1]))
    from sampling.datasets import load
    return load(name)


def run(args, comm):
    import spla.comm as C
    from sampling.train import TrainOptions, Trainer

    rank, p = comm.Get_rank(), comm.Get_size()
    log = (lambda *a: print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)) if rank == 0 \
        else (lambda *a: None)
    fractions = [float(f) for f in args.fractions.split(",")]
    policies = [s for s in args.policies.split(",") if s]
    configs = [("none", 0.0)] + [(pol, f) for pol in policies for f in fractions if f > 0]
    cs = [int(c) for c in args.c.split(",") if p % int(c) == 0]
    bulks = [int(b) for b in args.bulks.split(",")]

    def total(v):
        return int(C.allreduce_array(comm, np.array([v], np.int64), "sum", None)[0])

    def biggest(v, dtype=np.int64):
        return C.allreduce_array(comm, np.array([v], dtype), "max", None)[0].item()

    datasets, results = {}, []
    for name in [d for d in args.dataset.split(",") if d]:
        t0 = time.perf_counter()
        ds = load_dataset(name)
        datasets[name] = ds
        log(f"{ds!r} loaded in {time.perf_counter() - t0:.1f} s on every rank")
        # Warm-up, untimed: the first epoch of a process loads (or compiles)
        # the numba kernels and torch's, which would land in the first row.
        warm = Trainer(TrainOptions(dataset=name, graph="partitioned", replication=cs[0],
                                    batch_size=args.batch_size, epochs=1, threads=1,
                                    progress=False), comm, dataset=ds)
        t = time.perf_counter()
        warm.train_epoch(0)
        log(f"warm-up epoch (untimed) {time.perf_counter() - t:.1f} s")
        del warm
        for c in cs:
            for bulk in bulks:
                group = []
                for policy, frac in configs:
                    opts = TrainOptions(dataset=name, graph="partitioned", replication=c,
                                        batch_size=args.batch_size, bulk=bulk or None,
                                        epochs=args.epochs, threads=1, progress=False,
                                        feature_cache=frac,
                                        cache_policy=policy if frac > 0 else "degree")
                    comm.Barrier()
                    t = time.perf_counter()
                    with C.counting() as built:
                        trainer = Trainer(opts, comm, dataset=ds)
                    build_s = time.perf_counter() - t
                    cache_build = sum(v for k, v in built.items()
                                      if k.startswith("features.cache"))
                    presample = (sum(v for k, v in built.items() if k.startswith("fetch_rows"))
                                 if policy == "frequency" else 0)
                    st = trainer.store.cache_stats()
                    epochs = []
                    for e in range(args.epochs):
                        with C.counting() as moved:
                            s = trainer.train_epoch(e)
                        feat = moved.get("features.request", 0) + moved.get("features.reply", 0)
                        epochs.append(dict(loss=s.loss, hit_rate=s.cache_hit_rate,
                                           hits=s.cache_hits, requests=s.cache_requests,
                                           feature_bytes=total(feat), bytes=s.bytes_moved,
                                           fetch_s=s.times["fetch"], epoch_s=s.total_time,
                                           steps=s.steps))
                    row = dict(dataset=name, c=c, bulk=trainer.bulk_size, policy=policy,
                               fraction=frac, cached_rows=st.cached_rows,
                               memory_max=biggest(st.memory_bytes),
                               block_bytes=biggest(trainer.store.local.nbytes),
                               build_bytes=total(cache_build),
                               presample_bytes=total(presample),
                               build_s=biggest(build_s, np.float64), epochs=epochs,
                               checksum=trainer.parameter_checksum())
                    group.append(row)
                    last = epochs[-1]
                    log(f"{name} c={c} bulk={row['bulk']} {policy:9s} {frac:4.2f}: hit "
                        f"{100 * np.nan_to_num(last['hit_rate']):5.1f} %, features "
                        f"{last['feature_bytes'] / 1e6:8.2f} MB, all "
                        f"{last['bytes'] / 1e6:8.2f} MB, cache "
                        f"{row['memory_max'] / 1e6:6.2f} MB/rank, build {build_s:.1f} s, "
                        f"fetch {last['fetch_s']:.2f} s, epoch {last['epoch_s']:.1f} s")
                    del trainer
                # Same minibatches, same model: the cache must have changed nothing.
                sums = {tuple(r["checksum"]) for r in group}
                if len(sums) != 1:
                    raise SystemExit(f"bench_cache: the parameters differ between cache "
                                     f"configurations ({name}, c = {c}, bulk {bulk}): {sums}")
                results += group
    return datasets, results


def render(args, p, datasets, results, vers, load0, wall, command):
    L = results_header("Hot-feature cache: hit rate and bytes per epoch (CPU, MPI)", command,
                       wall, load0, vers)
    L.append(f"- Run: P = {p} ranks, NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}, "
             "1 torch thread per rank; the ranks oversubscribe the cores: **byte counts and "
             "hit rates are exact, seconds are indicative only**")
    for name, ds in datasets.items():
        L.append(f"- Dataset `{name}`: `{ds!r}`; {ds.num_features} float32 features per "
                 f"vertex ({ds.num_features * 4} B per row on the wire, plus an 8 B id)")
    L.append(f"- Training: the main job's `Trainer`, `--graph partitioned`, GraphSAGE fanouts "
             f"10,10, batch {args.batch_size} over all ranks, seed 0, {args.epochs} epoch(s) "
             "per configuration after one untimed warm-up epoch; an epoch is the table's "
             "(training and the validation pass).  Every configuration of a (dataset, c, "
             "bulk) group ended with the same parameters (checked by the script)")
    L.append("- Columns: *rows*: vertices in the hot set; *hit rate*: rows served by the cache "
             "/ rows fetched (distinct rows per fetch call, all ranks); *feature MB*: "
             "`features.request` + `features.reply` sent by all ranks in the epoch (= "
             "received); *vs none*: over the no-cache row; *all MB*: everything the epoch "
             "sent (the table's MB moved: the samplers' graph row fetches and the gradient "
             "Allreduce too); *cache MB/rank*: memory of the cache (copied rows + ids), max "
             "over the ranks, with the rank's own feature block in parentheses; *build MB*: "
             "one-time bytes of building the cache (hot rows from their owners, the degree "
             "Allgatherv or the counts' Allreduce; for frequency, plus the pre-sampled "
             "epoch's graph row fetches); *build +s*: extra seconds of building the trainer "
             "over the no-cache row; last epoch shown\n")
    groups = []
    for r in results:
        key = (r["dataset"], r["c"], r["bulk"])
        if key not in groups:
            groups.append(key)
    for name, c, bulk in groups:
        rows = [r for r in results if (r["dataset"], r["c"], r["bulk"]) == (name, c, bulk)]
        steps = rows[0]["epochs"][-1]["steps"]
        L.append(f"## {name}, c = {c}, bulk {bulk} minibatches ({steps} steps per epoch)\n")
        base = rows[0]
        b_feat = base["epochs"][-1]["feature_bytes"]
        L.append("| policy | cache | rows | hit rate | feature MB | vs none | all MB | "
                 "cache MB/rank (block) | build MB | build +s | fetch s | epoch s |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            e = r["epochs"][-1]
            hr = "-" if not np.isfinite(e["hit_rate"]) else f"{100 * e['hit_rate']:.1f} %"
            ratio = f"{e['feature_bytes'] / b_feat:.3f}x" if b_feat else "-"
            build_mb = (r["build_bytes"] + r["presample_bytes"]) / 1e6
            L.append(f"| {r['policy']} | {100 * r['fraction']:g} % | {r['cached_rows']:,} | "
                     f"{hr} | {e['feature_bytes'] / 1e6:.2f} | {ratio} | "
                     f"{e['bytes'] / 1e6:.2f} | {r['memory_max'] / 1e6:.2f} "
                     f"({r['block_bytes'] / 1e6:.2f}) | {build_mb:.2f} | "
                     f"{r['build_s'] - base['build_s']:+.1f} | {e['fetch_s']:.2f} | "
                     f"{e['epoch_s']:.1f} |")
        L.append("")
    return "\n".join(L) + "\n"


def main(argv=None):
    args = parse_args(argv)
    comm, (datasets, results), load0, wall = run_on_world("bench_cache",
                                                            lambda c: run(args, c))
    if comm.Get_rank() != 0:
        return 0
    command = mpi_command("bench_cache.py", comm, sys.argv[1:] if argv is None else argv)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(command=command, results=results), f, indent=1)
    md = render(args, comm.Get_size(), datasets, results, versions(), load0, wall, command)
    write_results(args.out, md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
