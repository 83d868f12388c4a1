#!/usr/bin/env python
"""End-to-end training epoch: our bulk-sampled GraphSAGE against PyG's NeighborLoader.

    python benchmarks/bench_e2e.py [--datasets rmat:16 cora] [--epochs 19] [--threads 2]
                                   [--workers 1,2] [--bulk K] [--seed 0] [--no-main-job]
                                   [--baseline REF]
                                   [--out benchmarks/results/e2e_cpu.md] [--quick]

One epoch of GraphSAGE node classification (mean aggregation with a root
weight, ReLU and dropout on every layer's input, Adam, cross-entropy), the
same width, depth, fanouts, batch size and optimiser on both sides, in one
process run:

* **ours**: ``sampling.NodeLoader(GraphSAGE(A, fanouts), train_idx,
  batch_size, features=x, labels=y, bulk=K)``, iterated once per epoch
  (each iteration shuffles and samples a bulk of minibatches at once and
  gathers the bulk's features), and ``sampling.models.SAGE`` trains on
  the blocks (``model(mb.x, mb)``).  Time split into waiting for the loader
  / fwd+bwd+step.
* **ours, models @ REF** (``--baseline REF``, an ablation): the same loop
  with ``sampling/models.py`` as of git REF, to show a model speed-up
  before/after in one run.
* **main job** (optional): ``sampling.train.Trainer``, the code behind
  ``python -m sampling.train``, with the same options; its own per-phase
  seconds (its per-epoch validation pass is left out of the epoch time).
* **PyG**: ``torch_geometric.loader.NeighborLoader(data, num_neighbors=fanouts,
  batch_size=B, input_nodes=train_idx, shuffle=True, num_workers=W)`` and a
  stack of ``torch_geometric.nn.SAGEConv`` (mean, root weight) arranged as
  ours; W = 0 and each W of ``--workers`` (persistent workers).  Time split
  into waiting for the loader (sampling + feature/label gather, or waiting
  for the workers) / fwd+bwd+step.  Without pyg-lib, NeighborLoader samples
  with torch-sparse's ``neighbor_sample`` (``../shared/wheels``).

Reported per dataset: seconds per epoch (median of ``--epochs`` timed epochs
after one untimed warm-up epoch), the phase split, sampled edges per epoch,
test accuracy after the 1 + ``--epochs`` training epochs (test vertices
sampled with the same fanouts by each side's own sampler), and PyG / ours.
Thread counts are set before numba and torch are imported; PyG's worker
processes run one torch thread each (DataLoader's default).  OpenMP threads
wait passively (``OMP_WAIT_POLICY=PASSIVE`` unless set), the library's own
setting, applied before torch loads so both sides run under it.

``--quick`` (1 timed epoch, PyG with 0 and 2 workers) is a smoke run of
about a minute on a quiet 2-core machine.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
import types
import warnings
from datetime import datetime, timezone
from machine import machine_info  # noqa: E402 - benchmarks/ is on sys.path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Per-dataset configuration, the same for both sides.  Planetoid graphs use
# the main job's defaults (they reach ~0.80 on Cora); R-MAT graphs the
# sampling benchmark's workload (fanouts [15, 10, 5], 1,024 seeds).
CONFIGS = {
    "planetoid": dict(fanouts=(10, 10), batch_size=64, hidden=64, lr=0.01, weight_decay=5e-4,
                      dropout=0.5),
    "rmat": dict(fanouts=(15, 10, 5), batch_size=1024, hidden=64, lr=0.01, weight_decay=5e-4,
                 dropout=0.5),
}
EVAL_STREAM = (1 << 40) + 1    # a fixed random stream for our test-set sampling
MEMORY_BUDGET = 1 << 30        # the main job's default bulk budget


def config_for(name):
    return dict(CONFIGS["rmat" if name.lower().startswith("rmat:") else "planetoid"])


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=None,
                   help="sampling.datasets names (default: rmat:16 cora)")
    p.add_argument("--epochs", type=int, default=None,
                   help="timed epochs after the warm-up epoch (default 19: 20 epochs of "
                        "training, as the main job; 1 with --quick)")
    p.add_argument("--threads", type=int, default=2,
                   help="numba and torch threads of the training process (default 2)")
    p.add_argument("--workers", default="1,2",
                   help="PyG NeighborLoader worker counts besides 0, comma separated "
                        "(default 1,2; empty: only 0)")
    p.add_argument("--bulk", type=int, default=None,
                   help="our minibatches per bulk (default: what a 1 GiB budget allows, "
                        "as the main job)")
    p.add_argument("--baseline", metavar="REF", default=None,
                   help="ablation: also train with sampling/models.py as of git REF (e.g. "
                        "the commit before a model speed-up), a row 'ours, models @ REF' "
                        "beside today's in the same run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-main-job", action="store_true",
                   help="skip the sampling.train.Trainer row")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 timed epoch, PyG workers 0 and 2, about a minute")
    p.add_argument("--out", default=None,
                   help="markdown output (default benchmarks/results/e2e_cpu.md, "
                        "e2e_cpu_quick.md with --quick)")
    args = p.parse_args(argv)
    if args.datasets is None:
        args.datasets = ["rmat:16", "cora"]
    if args.epochs is None:
        args.epochs = 1 if args.quick else 19
    if args.epochs < 1:
        p.error("--epochs must be >= 1")
    if args.threads < 1:
        p.error("--threads must be >= 1")
    if args.bulk is not None and args.bulk < 1:
        p.error("--bulk must be >= 1")
    try:
        args.worker_list = [int(w) for w in args.workers.split(",") if w.strip()]
    except ValueError:
        p.error(f"--workers must list integers; got {args.workers!r}")
    if any(w < 1 for w in args.worker_list):
        p.error("--workers must list positive integers (0 workers is always measured)")
    if args.quick and args.workers == "1,2":
        args.worker_list = [2]
    if args.out is None:
        args.out = os.path.join(HERE, "results", "e2e_cpu_quick.md" if args.quick
                                else "e2e_cpu.md")
    return args


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    # Thread counts before numba / torch are imported.
    os.environ["NUMBA_NUM_THREADS"] = str(ARGS.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))
    os.environ.setdefault("MKL_NUM_THREADS", str(ARGS.threads))
    # The library's own choice (kernels/__init__.py), made here before torch loads its
    # OpenMP runtime too: spinning OpenMP threads of numba and torch, each waiting for a
    # core the other holds, made the dense layers ~8x slower on 2 cores.  Both sides run
    # under it; the results file records the value.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import numba  # noqa: E402
import torch  # noqa: E402

import spla  # noqa: E402
import sampling  # noqa: E402
from sampling.datasets import load  # noqa: E402
from sampling.models import SAGE as OurSAGE  # noqa: E402


def pyg_or_none():
    """``(torch_geometric, None)`` or ``(None, reason)``: PyG is a peer, skipped if missing."""
    try:
        import torch_geometric
        from torch_geometric.loader import NeighborLoader  # noqa: F401
        from torch_geometric.nn import SAGEConv  # noqa: F401
    except Exception as exc:  # ImportError, or an ABI mismatch of its extensions
        return None, (f"torch_geometric not available ({type(exc).__name__}: {exc}); "
                      "install it with `pip install -e .[bench]`")
    import torch_geometric.typing as tgt
    if not (tgt.WITH_PYG_LIB or tgt.WITH_TORCH_SPARSE):
        return None, ("NeighborLoader has no sampler: neither pyg-lib nor torch-sparse "
                      "imports; install torch-sparse with `pip install ../shared/wheels/*.whl`")
    return torch_geometric, None


# ---------------------------------------------------------------------------
# Data


def prepare(name, ds=None):
    """The dataset (``ds`` if loaded already), dense row-normalised features and labels
    as torch tensors."""
    ds = load(name) if ds is None else ds
    # Row-normalised features, as sampling/train/trainer.py (PyG's NormalizeFeatures).
    x = spla.normalize_rows(ds.x.astype(np.float32)).to_scipy().toarray()
    x = torch.from_numpy(np.ascontiguousarray(x, np.float32))
    y = torch.from_numpy(np.array(ds.y, dtype=np.int64))
    return ds, x, y


def _index(ids):
    # A fresh int64 copy: spla hands out read-only views, which torch refuses to wrap silently.
    return torch.from_numpy(np.array(ids, dtype=np.int64))


# ---------------------------------------------------------------------------
# Ours


def our_epoch(loader, model, optimizer):
    """One training epoch through ``sampling.NodeLoader``; returns the phase seconds.

    The loader samples a bulk and gathers its features when the loop asks
    for the bulk's first minibatch, so the wait in ``next()`` is the
    sampling and gathering time (reported as sample + features; the loader
    does both inside that one wait, the split is not observable from here).
    """
    t = {"sample": 0.0, "features": 0.0, "fwd/bwd": 0.0}
    edges = steps = 0
    loss_sum = 0.0
    model.train()
    it = iter(loader)                # the next epoch: its own shuffle and draws
    while True:
        t0 = time.perf_counter()
        mb = next(it, None)
        t["sample"] += time.perf_counter() - t0
        if mb is None:
            break
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(mb.x, mb), mb.y)
        loss.backward()
        optimizer.step()
        t["fwd/bwd"] += time.perf_counter() - t0
        loss_sum += float(loss.detach())
        edges += mb.num_sampled_edges
        steps += 1
    return dict(times=t, edges=edges, steps=steps, loss=loss_sum / max(steps, 1))


def our_accuracy(sampler, model, x, y, ids, cfg, *, seed, bulk):
    """Accuracy on ``ids``, each test vertex sampled with the training fanouts."""
    b = cfg["batch_size"]
    batches = [ids[i:i + b] for i in range(0, ids.size, b)]
    correct = total = 0
    model.eval()
    with torch.no_grad():
        for start in range(0, len(batches), bulk):
            bids = list(range(start, min(len(batches), start + bulk)))
            mbs = sampler.sample([batches[i] for i in bids], seed=seed, epoch=EVAL_STREAM,
                                 batch_ids=bids)
            for mb in mbs:
                pred = model(x[_index(mb.input_nodes)], mb).argmax(1)
                correct += int((pred == y[_index(mb.seeds)]).sum())
                total += mb.batch_size
    return correct / max(total, 1)


def bulk_note(bulk, n_train, cfg):
    n = -(-n_train // cfg["batch_size"])
    k = min(bulk, n)
    return f"bulk k = {bulk}: {-(-n // k)} sampling pass(es) of up to {k} minibatches"


def models_at(ref):
    """``sampling/models.py`` as of git ``ref``, loaded as a module of its own (ablation)."""
    src = subprocess.run(["git", "-C", ROOT, "show", f"{ref}:sampling/models.py"],
                         capture_output=True, text=True, check=True).stdout
    mod = types.ModuleType(f"models_at_{ref}")
    mod.__file__ = f"sampling/models.py@{ref}"
    exec(compile(src, mod.__file__, "exec"), mod.__dict__)  # noqa: S102 - our own file
    return mod


def run_ours(ds, x, y, cfg, args, log, model_class=None, label="ours"):
    sampler = sampling.GraphSAGE(ds.A, cfg["fanouts"])
    bulk = args.bulk or sampling.BulkPlanner(sampler, MEMORY_BUDGET).bulk_size(cfg["batch_size"])
    torch.manual_seed(args.seed)
    model = (model_class or OurSAGE)(x.shape[1], cfg["hidden"], ds.num_classes,
                                     len(cfg["fanouts"]), cfg["dropout"])
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    loader = sampling.NodeLoader(sampler, ds.train_idx, cfg["batch_size"], features=x,
                                 labels=y, seed=args.seed, bulk=bulk)
    epochs = []
    for e in range(1 + args.epochs):
        t0 = time.perf_counter()
        r = our_epoch(loader, model, opt)
        r["total"] = time.perf_counter() - t0
        log(f"    {label} epoch {e}{' (warm-up)' if e == 0 else ''}: {r['total']:.3f} s "
            f"(sample {r['times']['sample']:.3f}, features {r['times']['features']:.3f}, "
            f"fwd/bwd {r['times']['fwd/bwd']:.3f}), loss {r['loss']:.4f}")
        epochs.append(r)
    acc = our_accuracy(sampler, model, x, y, ds.test_idx, cfg, seed=args.seed, bulk=bulk)
    return summarise(epochs[1:], acc, bulk_note(bulk, len(ds.train_idx), cfg))


# ---------------------------------------------------------------------------
# The main job (sampling.train.Trainer, the code of `python -m sampling.train`)


def run_main_job(ds, cfg, args, log):
    from sampling.train import TrainOptions, Trainer
    opts = TrainOptions(dataset=ds.name, fanouts=tuple(cfg["fanouts"]),
                        batch_size=cfg["batch_size"], bulk=args.bulk, hidden=cfg["hidden"],
                        lr=cfg["lr"], weight_decay=cfg["weight_decay"], dropout=cfg["dropout"],
                        epochs=1 + args.epochs, seed=args.seed, threads=args.threads,
                        progress=False)
    tr = Trainer(opts, dataset=ds)
    epochs = []
    for e in range(1 + args.epochs):
        s = tr.train_epoch(e)
        times = {"sample": s.times["sample"], "features": s.times["fetch"],
                 "fwd/bwd": s.times["fwd/bwd"] + s.times["allreduce"]}
        r = dict(times=times, edges=s.sampled_edges, steps=s.steps, loss=s.loss,
                 total=sum(times.values()))
        log(f"    main job epoch {e}{' (warm-up)' if e == 0 else ''}: {r['total']:.3f} s "
            f"+ eval {s.times['eval']:.3f} s, loss {s.loss:.4f}")
        epochs.append(r)
    acc = tr.evaluate("test")
    return summarise(epochs[1:], acc, bulk_note(tr.bulk_size, len(ds.train_idx), cfg)
                     + "; sum of its phases, validation pass left out")


# ---------------------------------------------------------------------------
# PyG


def pyg_model(in_dim, hidden, out_dim, num_layers, dropout):
    """SAGEConv layers (mean, root weight) arranged as sampling.models.SAGE.

    Dropout on every layer's input, ReLU between layers, no normalisation:
    ``torch_geometric.nn.GraphSAGE`` instead drops out after the activation
    only, so it is not used.
    """
    from torch_geometric.nn import SAGEConv

    class PygSAGE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
            self.convs = torch.nn.ModuleList(
                SAGEConv(a, b, aggr="mean", root_weight=True) for a, b in zip(dims[:-1], dims[1:]))

        def forward(self, h, edge_index):
            for i, conv in enumerate(self.convs):
                h = torch.nn.functional.dropout(h, dropout, self.training)
                h = conv(h, edge_index)
                if i < len(self.convs) - 1:
                    h = torch.relu(h)
            return h

    return PygSAGE()


def pyg_data(ds, x, y):
    from torch_geometric.data import Data
    S = ds.A.to_scipy().tocoo()
    # (source, target): row v of A lists the vertices v aggregates from.
    edge_index = torch.from_numpy(np.vstack([S.col, S.row]).astype(np.int64))
    return Data(x=x, y=y, edge_index=edge_index, num_nodes=ds.A.nrows)


def neighbor_loader(data, cfg, ids, *, shuffle, workers):
    from torch_geometric.loader import NeighborLoader
    with warnings.catch_warnings():
        # Without pyg-lib NeighborLoader warns that torch-sparse sampling is deprecated;
        # that is the configuration measured here (stated in the results).
        warnings.filterwarnings("ignore", message=".*without a 'pyg-lib' installation")
        return NeighborLoader(data, num_neighbors=list(cfg["fanouts"]),
                              batch_size=cfg["batch_size"], input_nodes=_index(ids),
                              shuffle=shuffle, num_workers=workers,
                              persistent_workers=workers > 0)


def pyg_epoch(loader, model, optimizer, device="cpu"):
    """One training epoch; on a GPU the loader phase includes the minibatch's copy to it."""
    t = {"loader": 0.0, "fwd/bwd": 0.0}
    edges = steps = 0
    loss_sum = 0.0
    model.train()
    it = iter(loader)
    while True:
        t0 = time.perf_counter()
        batch = next(it, None)
        if batch is not None and device != "cpu":
            batch = batch.to(device)
        t1 = time.perf_counter()
        t["loader"] += t1 - t0
        if batch is None:
            break
        optimizer.zero_grad(set_to_none=True)
        b = batch.batch_size
        loss = torch.nn.functional.cross_entropy(model(batch.x, batch.edge_index)[:b],
                                                 batch.y[:b])
        loss.backward()
        optimizer.step()
        t["fwd/bwd"] += time.perf_counter() - t1
        loss_sum += float(loss.detach())
        edges += int(batch.edge_index.size(1))
        steps += 1
    return dict(times=t, edges=edges, steps=steps, loss=loss_sum / max(steps, 1))


def pyg_accuracy(data, model, ids, cfg, device="cpu"):
    loader = neighbor_loader(data, cfg, ids, shuffle=False, workers=0)
    correct = total = 0
    model.eval()
    with torch.no_grad():
        for batch in loader:
            batch = batch.to(device) if device != "cpu" else batch
            b = batch.batch_size
            pred = model(batch.x, batch.edge_index)[:b].argmax(1)
            correct += int((pred == batch.y[:b]).sum())
            total += b
    return correct / max(total, 1)


def run_pyg(ds, data, cfg, args, workers, log, device="cpu"):
    """PyG's NeighborLoader (``workers`` processes) feeding SAGEConv layers on ``device``:
    ``1 + args.epochs`` epochs, the first a warm-up, then the test accuracy."""
    torch.manual_seed(args.seed)
    model = pyg_model(data.x.shape[1], cfg["hidden"], ds.num_classes, len(cfg["fanouts"]),
                      cfg["dropout"]).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    loader = neighbor_loader(data, cfg, ds.train_idx, shuffle=True, workers=workers)
    epochs = []
    try:
        for e in range(1 + args.epochs):
            t0 = time.perf_counter()
            r = pyg_epoch(loader, model, opt, device)
            r["total"] = time.perf_counter() - t0
            log(f"    PyG W={workers} epoch {e}{' (warm-up)' if e == 0 else ''}: "
                f"{r['total']:.3f} s (loader {r['times']['loader']:.3f}, fwd/bwd "
                f"{r['times']['fwd/bwd']:.3f}), loss {r['loss']:.4f}")
            epochs.append(r)
    finally:
        # Persistent workers end with their iterator; drop it now, not at exit.
        loader._iterator = None
        del loader
    acc = pyg_accuracy(data, model, ds.test_idx, cfg, device)
    return summarise(epochs[1:], acc, f"{workers} worker process(es)" if workers
                     else "sampling in the training process")


# ---------------------------------------------------------------------------
# Results


def summarise(epochs, acc, note):
    med = statistics.median
    phases = {k: med(r["times"][k] for r in epochs) for k in epochs[0]["times"]}
    return dict(s_epoch=med(r["total"] for r in epochs), phases=phases,
                all=[r["total"] for r in epochs], edges=med(r["edges"] for r in epochs),
                steps=epochs[0]["steps"], acc=acc, note=note)


def versions(pyg):
    v = {"python": platform.python_version(), "numpy": np.__version__,
         "numba": numba.__version__, "torch": torch.__version__, "spla": spla.__version__}
    if pyg is not None:
        import torch_geometric.typing as tgt
        v["torch_geometric"] = pyg.__version__
        for mod in ("torch_sparse", "pyg_lib"):
            try:
                v[mod] = __import__(mod).__version__
            except Exception:  # noqa: BLE001 - absent or broken: not listed
                pass
        v["NeighborLoader sampler"] = ("pyg-lib" if tgt.WITH_PYG_LIB
                                       else "torch-sparse neighbor_sample")
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        if commit:
            v["repo commit"] = commit + (" (+ uncommitted changes)" if dirty else "")
    except OSError:
        pass
    return v


def _fmt(s):
    return "" if s is None else f"{s:.3f}"


def render(args, info, vers, results, pyg_note, wall, load0, load1, command):
    L = []
    title = "End-to-end GraphSAGE epoch: ours vs PyG NeighborLoader (CPU)"
    L.append(f"# {title}" + (" — SMOKE RUN (--quick)" if args.quick else "") + "\n")
    if args.quick:
        L.append(f"> **Smoke run, not a measurement.** `--quick` ({args.epochs} timed "
                 f"epoch{'s' if args.epochs > 1 else ''} after the warm-up, "
                 f"PyG workers {', '.join(['0'] + [str(w) for w in args.worker_list])}) on a "
                 f"machine shared with other jobs (load average {load0[0]:.2f} / {load0[1]:.2f} "
                 f"/ {load0[2]:.2f} at start, {load1[0]:.2f} at the end, on {info['nproc']} "
                 "cores). It shows that the script runs end to end and what it reports; "
                 "the seconds are noisy. Run the full benchmark on a quiet machine.\n")
    L.append(f"- Command: `{command}`")
    L.append(f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; wall time "
             f"{wall:.0f} s")
    L.append(f"- Machine: {info['nproc']} cores available ({info['cpu_count']} online), "
             f"{info['cpu']}, {info['ram']} RAM, Linux {info['kernel']}; load average at start "
             f"{load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f}, at end {load1[0]:.2f}")
    L.append("- Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    L.append(f"- Threads: training process NUMBA_NUM_THREADS={args.threads}, "
             f"torch.set_num_threads({args.threads}) for every row; PyG's worker processes "
             f"1 torch thread each (numba threading layer: {numba.threading_layer()}, "
             f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')})")
    L.append("- Model (both sides): GraphSAGE, mean aggregation with root weight, one layer "
             "per fanout, ReLU between layers, dropout on every layer's input, Adam, "
             "cross-entropy averaged over the minibatch's seeds; ours "
             "`sampling.models.SAGE`, PyG `SAGEConv(aggr='mean', root_weight=True)` layers "
             "in the same arrangement, run on the whole sampled subgraph (the usual "
             "NeighborLoader recipe; torch-sparse gives no per-hop counts for `trim_to_layer`)")
    L.append(f"- Timing: 1 untimed warm-up epoch (numba compilation, worker start), then the "
             f"median of {args.epochs} timed epoch{'s' if args.epochs > 1 else ''}; an epoch is "
             "the shuffle, sampling, feature gather and one optimiser step per minibatch; "
             "evaluation is outside it")
    L.append(f"- Accuracy: test accuracy after the 1 + {args.epochs} training epochs, test "
             "vertices sampled with the training fanouts (ours: our sampler on a fixed stream; "
             "PyG: a NeighborLoader over the test vertices)")
    L.append("- Columns: *sample* is the time spent waiting for the loader: for ours "
             "`NodeLoader` (shuffle, bulk sampling and the bulk's feature/label gather, "
             "which happen inside that wait), for PyG `NeighborLoader` (sampling, subgraph "
             "relabelling and the feature/label gather, or waiting for the workers); "
             "*features* is the main job's separate fetch phase (0 for the loader rows); *fwd/bwd* is forward, backward and optimiser "
             "step (ours builds its block operators inside it); *edges/epoch* counts every "
             "edge of every block for ours and the merged subgraph's edges for PyG "
             "(`neighbor_sample` expands each vertex once, so it returns fewer); "
             "*PyG / ours* is that row's s/epoch over ours (PyG rows, and the "
             "`--baseline` ablation row); the last column is the range of the "
             "timed epochs. *ours* and *ours, main job* train the same model on the same "
             "minibatches (same seed, same draws), so their test accuracies agree")
    if pyg_note:
        L.append(f"\nPyG rows skipped: {pyg_note}")
    if vers.get("NeighborLoader sampler") == "pyg-lib":
        L.append("\nPyG's NeighborLoader samples with pyg-lib, its default (built from its "
                 "public sources as `../shared/peers/README.md` says, on `PYTHONPATH`).\n")
    else:
        L.append("\nPyG's NeighborLoader samples with torch-sparse here: pyg-lib, its default, "
                 "is not on PyPI (build it as `../shared/peers/README.md` says and put its "
                 "`pyg_lib` package on `PYTHONPATH` to compare against it).\n")
    for name, res in results.items():
        ds, cfg = res["ds"], res["cfg"]
        L.append(f"## {name}\n")
        L.append(f"`{ds!r}`; fanouts {list(cfg['fanouts'])}, batch {cfg['batch_size']}, hidden "
                 f"{cfg['hidden']}, {len(cfg['fanouts'])} layers, dropout {cfg['dropout']}, "
                 f"Adam lr {cfg['lr']}, weight decay {cfg['weight_decay']}; "
                 f"{res['rows'][0][1]['steps']} minibatches per epoch.\n")
        ours = res["rows"][0][1]["s_epoch"]
        L.append("| implementation | how | s/epoch | sample | features | fwd/bwd | edges/epoch "
                 "| test acc | PyG / ours | fastest – slowest epoch |")
        L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for label, r in res["rows"]:
            ph = r["phases"]
            sample = ph.get("sample", ph.get("loader"))
            ratio = (f"{r['s_epoch'] / ours:.2f}x"
                     if label.startswith(("PyG", "ours, models @")) else "")
            L.append(f"| {label} | {r['note']} | {r['s_epoch']:.3f} | {_fmt(sample)} | "
                     f"{_fmt(ph.get('features'))} | {_fmt(ph['fwd/bwd'])} | {r['edges']:,.0f} | "
                     f"{r['acc']:.4f} | {ratio} | {min(r['all']):.3f} – {max(r['all']):.3f} |")
        for label, why in res["skipped"]:
            L.append(f"| {label} | skipped: {why} | | | | | | | | |")
        pyg_rows = [r for label, r in res["rows"] if label.startswith("PyG")]
        if pyg_rows:
            best = min(pyg_rows, key=lambda r: r["s_epoch"])
            L.append(f"\nFastest PyG configuration ({best['note']}): {best['s_epoch']:.3f} s per "
                     f"epoch, **{best['s_epoch'] / ours:.2f}x** our time "
                     f"({ours:.3f} s); test accuracy {best['acc']:.4f} vs ours "
                     f"{res['rows'][0][1]['acc']:.4f}.")
        L.append("")
    return "\n".join(L) + "\n"


def main(args):
    t_start = time.perf_counter()
    load0 = os.getloadavg()
    torch.set_num_threads(args.threads)
    pyg, pyg_note = pyg_or_none()

    def log(msg):
        print(msg, flush=True)

    info = machine_info()
    vers = versions(pyg)
    command = "python benchmarks/bench_e2e.py " + " ".join(sys.argv[1:])
    log(f"machine: {info}")
    log(f"versions: {vers}")
    if pyg_note:
        log(f"skipping PyG: {pyg_note}")
    results = {}
    for name in args.datasets:
        cfg = config_for(name)
        ds, x, y = prepare(name)
        log(f"{name}: {ds!r}; {cfg}")
        rows, skipped = [], []
        log("  ours")
        rows.append(("ours", run_ours(ds, x, y, cfg, args, log)))
        if args.baseline:
            label = f"ours, models @ {args.baseline}"
            log(f"  {label} (ablation)")
            rows.append((label, run_ours(ds, x, y, cfg, args, log,
                                         models_at(args.baseline).GraphSAGE, label)))
        if not args.no_main_job:
            log("  main job (sampling.train.Trainer)")
            rows.append(("ours, main job", run_main_job(ds, cfg, args, log)))
            torch.set_num_threads(args.threads)
        if pyg is not None:
            data = pyg_data(ds, x, y)
            for w in [0] + args.worker_list:
                log(f"  PyG NeighborLoader, {w} workers")
                try:
                    rows.append((f"PyG W={w}", run_pyg(ds, data, cfg, args, w, log)))
                except Exception as exc:  # noqa: BLE001 - workers may not start here
                    if w == 0:
                        raise
                    why = f"{type(exc).__name__}: {exc}"
                    log(f"    skipped: {why}")
                    skipped.append((f"PyG W={w}", why))
        else:
            skipped.append(("PyG", pyg_note))
        for label, r in rows:
            log(f"  {label:15s} {r['s_epoch']:.3f} s/epoch, test acc {r['acc']:.4f}")
        results[name] = dict(ds=ds, cfg=cfg, rows=rows, skipped=skipped)
    wall = time.perf_counter() - t_start
    md = render(args, info, vers, results, pyg_note, wall, load0, os.getloadavg(), command)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(md)
    print(md)
    log(f"wrote {args.out} ({wall:.0f} s)")


if __name__ == "__main__":
    main(ARGS)
