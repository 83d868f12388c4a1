#!/usr/bin/env python
"""GPU benchmark in one command: the GPU tests, then samplers and SpGEMM on the device.

    python benchmarks/bench_gpu.py [--quick] [--no-tests] [--profile]
        [--sections tests,equal,train,graphsage,layerwise,spgemm] [--out PATH]

On a machine with a CUDA GPU, cupy and numba-cuda:

1. **tests**: ``pytest -m gpu`` plus every test parametrised over the
   ``backend`` fixture on its ``cupy`` case (each CUDA kernel against its
   CPU twin, each operator on cupy arrays against scipy).
2. **equal**: GraphSAGE (without and with replacement), LADIES and FastGCN
   give the same minibatches on the GPU as on the CPU for the same seed.
   **train**: the main job on Cora with ``--device cuda`` (5 epochs).
3. **graphsage**: fused GraphSAGE [15, 10, 5] on R-MAT scale 20 (edge factor
   16, seed 0), bulks of k minibatches of 1,024 random seeds: ms per bulk,
   ms per minibatch and sampled edges per second (SEPS), each call on its
   own and in a stream of calls that queues each bulk before waiting for
   the last (``sample(wait=False)``, as ``NodeLoader`` samples on a GPU).
4. **layerwise**: LADIES and FastGCN, layers [512, 512], 1,024 seeds, in a
   bulk of 16 and one minibatch per call (four calls).
5. **spgemm**: ``spla.mxm`` (plus_times, float32) against
   ``cupyx.scipy.sparse`` (cuSPARSE) on the same operands: ``A @ A`` of
   R-MAT scale 14 and 16 and ``Q @ A`` with Q selecting 100,000 rows of
   scale 20 (the sampler's product); the results are compared too.

Times are the median of ``--repeats`` timed runs after a warm-up, with the
device synchronised before the clock stops.  ``--profile`` adds the
host-side profile (cProfile, top functions by own time) of GraphSAGE
bulks of 16 and 256, which shows where launch and
synchronisation overheads go; the **trace** section reads every kernel's
GPU time (CUPTI, through torch.profiler) and the calls' busy fraction.  Results go to
``benchmarks/results/gpu_<device>.md`` (e.g. ``gpu_h100.md``) unless
``--out`` says otherwise.  On a machine without a GPU the script exits with
status 2 and says what is missing.
"""

import argparse
import cProfile
import collections
import contextlib
import io
import os
import pstats
import re
import subprocess
import sys
import time
from datetime import datetime, timezone

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from gpu_common import require_gpu, timed  # noqa: E402 - after the path setup

SECTIONS = ("tests", "equal", "train", "graphsage", "uva", "launch", "layerwise", "spgemm",
            "trace")
#: The test directories whose ``cupy``/``gpu`` cases run on the device.
TEST_DIRS = ("kernels", "spla", "sampling")


def device_name(cupy):
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return name, int(props["totalGlobalMem"])


def device_slug(name):
    """``gpu_<slug>.md``: the model number of the card (h100, a100, ...)."""
    m = re.search(r"\b([A-Z]\d{2,4}[A-Z]?)\b", name.upper())
    return (m.group(1) if m else re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")).lower()


def run_tests(out):
    files = [os.path.join("tests", d) for d in TEST_DIRS]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
           "-W", "ignore", "-k", "cupy or gpu", *files]
    try:
        import xdist  # noqa: F401 - spread the tests over the host's cores when it is there
        cmd[3:3] = ["-n", str(min(8, os.cpu_count() or 1))]
    except ImportError:
        pass
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    summary = lines[-1] if lines else "(no output)"
    if proc.returncode != 0:
        print("\n".join(lines[-60:]), flush=True)
    print(f"GPU tests: {summary} ({wall:.0f} s)", flush=True)
    out.append("## GPU tests\n")
    out.append(f"`{' '.join(['python', *cmd[1:]])}`: **{summary}** ({wall:.0f} s)\n")
    return proc.returncode == 0


def same_minibatches(a, b):
    import spla
    to_host = spla.backend.to_host
    return all(x.adj.to("cpu").isequal(y.adj.to("cpu"))
               and np.array_equal(to_host(x.src_nodes), to_host(y.src_nodes))
               for ma, mb in zip(a, b) for x, y in zip(ma.blocks, mb.blocks))


def check_equal(cupy, out):
    import sampling
    import sampling.datasets
    rng = np.random.default_rng(0)
    A = sampling.datasets.load("cora").A
    Ag = A.to("cuda")
    W = A.with_values(rng.random(A.nnz).astype(np.float32) * (rng.random(A.nnz) < 0.8))
    Wg = W.to("cuda")
    makers = {"GraphSAGE": lambda G, W: sampling.GraphSAGE(G, fanouts=[5, 5]),
              "GraphSAGE, replace": lambda G, W: sampling.GraphSAGE(G, fanouts=[5, 5],
                                                                    replace=True),
              "GraphSAGE, weighted": lambda G, W: sampling.GraphSAGE(W, fanouts=[5, 5],
                                                                     weighted=True),
              "GraphSAGE, weighted, replace": lambda G, W: sampling.GraphSAGE(
                  W, fanouts=[5, 5], weighted=True, replace=True),
              "GraphSAGE, fanouts [-1, 5]": lambda G, W: sampling.GraphSAGE(G, fanouts=[-1, 5]),
              "LADIES": lambda G, W: sampling.LADIES(G, layer_sizes=[64, 64]),
              "FastGCN": lambda G, W: sampling.FastGCN(G, layer_sizes=[64, 64])}
    out.append("## GPU minibatches equal the CPU's (4 x 64 seeds, seed 3; each GPU bulk "
               "sampled twice, the second sized by the first's growth)\n")
    ok = True
    from spla.generators import rmat
    R = rmat(16, 16, seed=0)
    RW = R.with_values(rng.random(R.nnz).astype(np.float32))
    graphs = {"Cora": (A, Ag, W, Wg), "R-MAT 16": (R, R.to("cuda"), RW, RW.to("cuda")),
              "R-MAT 16 in mapped host memory": (R, R.to("cuda", memory="host"), RW,
                                                 RW.to("cuda", memory="host"))}
    for gname, (c, g, cw, gw) in graphs.items():
        if gname == "R-MAT 16":  # before the larger graph's CPU references compile
            ok &= hetero_equal(cupy, rng, out)
        sd = [rng.choice(c.nrows, 64, replace=False) for _ in range(4)]
        for name, make in makers.items():
            if gname != "Cora" and name in ("LADIES", "FastGCN"):
                continue
            cpu = make(c, cw).sample(sd, seed=3)
            s = make(g, gw)
            gpu = s.sample([cupy.asarray(x) for x in sd], seed=3)
            # Again, now with the arrays sized by the first bulk's growth.
            again = s.sample([cupy.asarray(x) for x in sd], seed=3)
            same = same_minibatches(cpu, gpu) and same_minibatches(cpu, again)
            ok &= same
            print(f"{gname}, {name}: GPU == CPU {same}", flush=True)
            out.append(f"- {gname}, {name}: {'equal' if same else '**DIFFERENT**'}")
    out.append("")
    return ok


def hetero_equal(cupy, rng, out, scale=10):
    """HeteroGraphSAGE on relations in device memory against the CPU (mag:scale)."""
    import spla
    from sampling import HeteroGraph, HeteroGraphSAGE
    from sampling.datasets.mag import mag_dataset
    H = mag_dataset(scale).to_undirected()
    dev = HeteroGraph(H.num_nodes, {r: A.to("cuda") for r, A in H.relations.items()})
    train = H.split("train", "paper")
    sd = [rng.choice(train, min(64, train.size), replace=False) for _ in range(4)]
    ok = True
    for label, kw in (("HeteroGraphSAGE", {}), ("HeteroGraphSAGE, replace", {"replace": True})):
        cpu = HeteroGraphSAGE(H, [5, 5], **kw).sample(sd, node_type="paper", seed=3)
        gpu = HeteroGraphSAGE(dev, [5, 5], **kw).sample([cupy.asarray(x) for x in sd],
                                                        node_type="paper", seed=3)
        same = all(la.blocks[r].adj.isequal(lb.blocks[r].adj.to("cpu")) and np.array_equal(
                   la.blocks[r].src_nodes, spla.backend.to_host(lb.blocks[r].src_nodes))
                   for a, b in zip(cpu, gpu) for la, lb in zip(a.layers, b.layers)
                   for r in la.blocks)
        ok &= same
        print(f"mag:{scale}, {label}: GPU == CPU {same}", flush=True)
        out.append(f"- mag:{scale}, {label}: {'equal' if same else '**DIFFERENT**'}")
    return ok


def train(out):
    """The main job with the model and the sampling on the GPU (Cora, 5 epochs)."""
    cmd = [sys.executable, "-W", "ignore", "-m", "sampling.train", "--device", "cuda",
           "--epochs", "5", "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    text = (proc.stdout + proc.stderr).strip()
    acc = [ln for ln in text.splitlines() if ln.startswith("test accuracy")]
    line = acc[-1] if acc else f"exit {proc.returncode}: " + " / ".join(text.splitlines()[-3:])
    print(f"train on the GPU: {line} ({wall:.0f} s)", flush=True)
    out += ["## Main job on the GPU\n",
            f"`python {' '.join(cmd[3:])}` (Cora): {line}, {wall:.0f} s with start-up\n"]
    return proc.returncode == 0 and bool(acc)


class unfused:
    """Within the block, GPU node-wise sampling runs operator by operator
    (``spla.sample_hops``' composed path) instead of the fused hops."""

    def __enter__(self):
        import kernels.cuda.hops as hops
        self.hops, self.old = hops, hops.MAX_SLOTS
        hops.MAX_SLOTS = 0

    def __exit__(self, *exc):
        self.hops.MAX_SLOTS = self.old


#: Calls per timed stream of ``queued``.
QUEUED_CALLS = 8


def queued(s, calls, epochs):
    """Sample ``calls`` (each a list of minibatches) one after another as a
    loader does on a GPU: each call's bulk is queued (``wait=False``) before
    the previous one is waited for, so the device samples it while the host
    builds the previous bulk's minibatches.  Returns the last call's."""
    prev = None
    for bulk in calls:
        p = s.sample(bulk, seed=1, epoch=next(epochs), wait=False)
        if prev is not None:
            prev.wait()
        prev = p
    return prev.wait()


def graphsage(cupy, args, out, G, label="", cpu_graph=None):
    """Bulk GraphSAGE [15, 10, 5]: fused hops against the operator-by-operator path."""
    import sampling
    from kernels.opcount import counting
    sync = cupy.cuda.Device().synchronize
    rng = np.random.default_rng(1)
    n = G.nrows
    out += [f"## GraphSAGE [15, 10, 5], R-MAT scale {args.scale}{label}, 1,024 seeds "
            "per minibatch\n",
            "| bulk k | path | ms per bulk | ms per minibatch | sampled edges per minibatch "
            "| SEPS | launches per bulk | blocking reads per bulk |",
            "|---|---|---|---|---|---|---|---|"]
    rows = []
    for k in args.bulks:
        batches = [cupy.asarray(rng.choice(n, 1024, replace=False)) for _ in range(k)]
        s = sampling.GraphSAGE(G, [15, 10, 5])
        for path in ("fused", "unfused"):
            if path == "unfused" and not args.unfused:
                continue
            ctx = unfused() if path == "unfused" else contextlib.nullcontext()
            with ctx:
                mbs = s.sample(batches, seed=1, epoch=0)
                sync()
                edges = sum(int(b.adj.nnz) for mb in mbs for b in mb.blocks)
                del mbs
                with counting() as tally:
                    s.sample(batches, seed=1, epoch=0)
                    sync()
                epoch = iter(range(1, 10**6))
                t = timed(lambda: s.sample(batches, seed=1, epoch=next(epoch)), args.repeats,
                          sync)
            seps = edges / t
            print(f"GraphSAGE{label} k={k} {path}: {t * 1e3:.2f} ms/bulk, "
                  f"{t / k * 1e3:.3f} ms/minibatch, {seps / 1e6:.1f} M SEPS, "
                  f"{tally.launches} launches, {tally.reads} reads", flush=True)
            out.append(f"| {k} | {path} | {t * 1e3:.2f} | {t / k * 1e3:.3f} | {edges // k:,} | "
                       f"{seps / 1e6:,.0f} M | {tally.launches} | {tally.reads} |")
            rows.append((k, path, t, seps))
        # The fused path in a stream of calls, each queued before the last is
        # waited for (the unfused path draws the same edges).
        epoch = iter(range(10**6, 2 * 10**6))
        t = timed(lambda: queued(s, [batches] * QUEUED_CALLS, epoch), args.repeats,
                  sync) / QUEUED_CALLS
        print(f"GraphSAGE{label} k={k} fused, next bulk queued: {t * 1e3:.2f} ms/bulk, "
              f"{edges / t / 1e6:.1f} M SEPS", flush=True)
        out.append(f"| {k} | fused, next bulk queued | {t * 1e3:.2f} | {t / k * 1e3:.3f} | "
                   f"{edges // k:,} | {edges / t / 1e6:,.0f} M | | |")
        rows.append((k, "queued", t, edges / t))
    # One minibatch per call, as a training loop without bulk sampling calls it.
    batches = [cupy.asarray(rng.choice(n, 1024, replace=False)) for _ in range(8)]
    s = sampling.GraphSAGE(G, [15, 10, 5])
    one = timed(lambda: [s.sample([b], seed=1, batch_ids=[i]) for i, b in enumerate(batches)],
                args.repeats, sync) / len(batches)
    edges = sum(int(b.adj.nnz) for i, bt in enumerate(batches)
                for b in s.sample([bt], seed=1, batch_ids=[i])[0].blocks) / len(batches)
    print(f"GraphSAGE{label} one per call: {one * 1e3:.3f} ms, {edges / one / 1e6:.1f} M SEPS",
          flush=True)
    out.append(f"| 1 (one per call) | fused | {one * 1e3:.2f} | {one * 1e3:.3f} | "
               f"{int(edges):,} | {edges / one / 1e6:,.0f} M | | |")
    epoch = iter(range(1, 10**6))
    ahead = timed(lambda: queued(s, [[b] for b in batches], epoch), args.repeats,
                  sync) / len(batches)
    print(f"GraphSAGE{label} one per call, next queued: {ahead * 1e3:.3f} ms, "
          f"{edges / ahead / 1e6:.1f} M SEPS", flush=True)
    out.append(f"| 1 (one per call) | fused, next call queued | {ahead * 1e3:.2f} | "
               f"{ahead * 1e3:.3f} | {int(edges):,} | {edges / ahead / 1e6:,.0f} M | | |")
    out.append("")
    return rows


def uva(cupy, args, out):
    """GraphSAGE with the graph in mapped host memory against device memory and the CPU."""
    import numba
    import sampling
    from spla.generators import rmat
    sync = cupy.cuda.Device().synchronize
    host = rmat(args.scale, 16, seed=0)
    rows = {}
    for label, G in (("device memory", host.to("cuda")),
                     ("mapped host memory (UVA)", host.to("cuda", memory="host"))):
        rng = np.random.default_rng(5)
        s = sampling.GraphSAGE(G, [15, 10, 5])
        for k in (16, 64):
            batches = [cupy.asarray(rng.choice(host.nrows, 1024, replace=False))
                       for _ in range(k)]
            epoch = iter(range(1, 10**6))
            t = timed(lambda: s.sample(batches, seed=1, epoch=next(epoch)), args.repeats, sync)
            rows[label, k] = t / k
            print(f"GraphSAGE, {label}, k={k}: {t / k * 1e3:.3f} ms/minibatch", flush=True)
        del G, s
    threads = numba.get_num_threads()
    numba.set_num_threads(min(2, threads))
    try:
        rng = np.random.default_rng(5)
        s = sampling.GraphSAGE(host, [15, 10, 5])
        batches = [rng.choice(host.nrows, 1024, replace=False) for _ in range(16)]
        cpu = timed(lambda: s.sample(batches, seed=1), max(1, args.repeats - 1), lambda: None) / 16
    finally:
        numba.set_num_threads(threads)
    print(f"GraphSAGE on this host's CPU, 2 threads, k=16: {cpu * 1e3:.3f} ms/minibatch",
          flush=True)
    out += [f"## GraphSAGE [15, 10, 5] with the graph in mapped host memory (UVA), "
            f"R-MAT scale {args.scale}\n",
            "| bulk k | device memory ms/minibatch | UVA ms/minibatch | UVA / device throughput "
            "| UVA vs this host's CPU (2 threads, k = 16) |", "|---|---|---|---|---|"]
    for k in (16, 64):
        d, u = rows["device memory", k], rows["mapped host memory (UVA)", k]
        out.append(f"| {k} | {d * 1e3:.3f} | {u * 1e3:.3f} | {d / u:.2f}x | {cpu / u:.1f}x |")
    out.append(f"\nCPU: {cpu * 1e3:.2f} ms per minibatch (spla, numba on 2 threads of this "
               "host).\n")


def launch_overhead(cupy, out):
    """Host time of one numba-cuda launch: cupy arguments against numba device arrays."""
    from numba import cuda

    @cuda.jit
    def touch(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, n):
        i = cuda.grid(1)
        if i < n:
            a0[i] += a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i] + a7[i] + a8[i] + a9[i] \
                + a10[i] + a11[i]

    arrs = [cupy.zeros(256, np.int64) for _ in range(12)]
    devs = [cuda.as_cuda_array(a) for a in arrs]
    sync = cupy.cuda.Device().synchronize
    res = {}
    for label, args in (("cupy arrays", arrs), ("numba device arrays", devs)):
        touch[1, 256](*args, np.int64(256))
        sync()
        t0 = time.perf_counter()
        for _ in range(300):
            touch[1, 256](*args, np.int64(256))
        sync()
        res[label] = (time.perf_counter() - t0) / 300
    from kernels.cuda import _util
    _util.launch(touch, 256, *arrs, np.int64(256))
    sync()
    t0 = time.perf_counter()
    for _ in range(300):
        _util.launch(touch, 256, *arrs, np.int64(256))
    sync()
    res["kernels.cuda launch() (direct when eligible)"] = (time.perf_counter() - t0) / 300
    t0 = time.perf_counter()
    for _ in range(300):
        arrs[0] += 1
    sync()
    res["one cupy elementwise op"] = (time.perf_counter() - t0) / 300
    res.update(_host_costs(cupy))
    out += ["## Launch overhead (host time per launch, 12 array arguments)\n",
            "| launch | us |", "|---|---|"]
    for k, v in res.items():
        print(f"launch, {k}: {v * 1e6:.1f} us", flush=True)
        out.append(f"| {k} | {v * 1e6:.1f} |")
    out.append("")


def _host_costs(cupy, reps=3000):
    """Host time of the steps a sampled block costs after the bulk's one read."""
    import spla
    from sampling.samplers.minibatch import Block
    a = cupy.arange(1 << 20, dtype=np.int64)
    costs = {}

    def clock(label, fn):
        t0 = time.perf_counter()
        for i in range(reps):
            fn(i)
        costs[label] = (time.perf_counter() - t0) / reps

    clock("cupy 1-D slice a[i:j]", lambda i: a[i:i + 100])
    clock("cupy.ndarray over a pointer", lambda i: cupy.ndarray(
        (100,), np.int64, a.data + 8 * i))
    starts = list(range(0, 25600, 100))
    stops = [x + 100 for x in starts]
    t0 = time.perf_counter()
    for _ in range(reps // 256):
        spla.backend.views(a, starts, stops)
    costs["spla.backend.views, per view (256 at once)"] = (
        (time.perf_counter() - t0) / (reps // 256 * 256))
    ptr, idx = a[:11], a[:100]
    clock("Matrix.from_csr(check=False, copy=False)", lambda i: spla.Matrix.from_csr(
        ptr, idx, None, (10, 10), check=False, copy=False))
    m = spla.Matrix.from_csr(ptr, idx, None, (10, 10), check=False, copy=False)
    clock("Block(adj, dst, src)", lambda i: Block(m, a, a))
    clock("int(numpy int64)", lambda i: int(np.int64(i)))
    return costs


def layerwise(cupy, args, out, G):
    import sampling
    from kernels.opcount import counting
    sync = cupy.cuda.Device().synchronize
    rng = np.random.default_rng(2)
    batches = [cupy.asarray(rng.choice(G.nrows, 1024, replace=False)) for _ in range(16)]
    out += ["## LADIES and FastGCN, layers [512, 512], R-MAT scale %d, 1,024 seeds\n" % args.scale,
            "| sampler | bulk of 16: ms per minibatch | one per call: ms per minibatch "
            "| one per call: launches / blocking reads (spla's counters) |",
            "|---|---|---|---|"]
    for name, cls in (("LADIES", sampling.LADIES), ("FastGCN", sampling.FastGCN)):
        s = cls(G, [512, 512])
        bulk = timed(lambda: s.sample(batches, seed=1), args.repeats, sync) / len(batches)
        # Four calls: enough for a per-call time, and bounded where a call is slow.
        few = batches[:4]
        one = timed(lambda: [s.sample([b], seed=1, batch_ids=[i]) for i, b in enumerate(few)],
                    args.repeats, sync) / len(few)
        # The minibatch on the host, as NodeLoader gives it.
        host = [cupy.asnumpy(few[0])]
        with counting() as tally:
            s.sample(host, seed=1)
            sync()
        print(f"{name}: bulk {bulk * 1e3:.2f} ms/minibatch, one per call {one * 1e3:.2f} ms, "
              f"{tally.launches} launches, {tally.reads} reads", flush=True)
        out.append(f"| {name} | {bulk * 1e3:.2f} | {one * 1e3:.2f} | "
                   f"{tally.launches} / {tally.reads} |")
    out.append("")
    layer_operator(cupy, args, out, G, batches)


def layer_operator(cupy, args, out, G, batches):
    """``spla.importance_layer`` (its own kernels on a GPU) against the
    composition of the operators it stands for, on one LADIES layer's draws,
    and whether the two agree bit for bit."""
    import spla
    from spla import reduce_row_groups
    # The composition, from spla's public operators (the tests' reference).
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from layer_reference import composed_layer
    sync = cupy.cuda.Device().synchronize
    A = G.with_values(cupy.ones(G.nnz, np.float32)) if G.values is None else G
    sq = spla.ewise_mult(A, A)
    out += ["### One layer after its draws: `importance_layer` against its composition\n",
            "| minibatches | fused ms | composition ms | composition / fused | same blocks |",
            "|---|---|---|---|---|"]
    for k in (1, 16):
        dst = cupy.concatenate([cupy.asarray(b, dtype=np.int64) for b in batches[:k]])
        ptr = np.concatenate([[0], np.cumsum([b.size for b in batches[:k]])]).astype(np.int64)
        W = reduce_row_groups(sq, dst, ptr, check=False)
        S = spla.sample_rows(W, 512, seed=1)
        rows = np.arange(k, dtype=np.int64)
        fused = timed(lambda: spla.importance_layer(A, S, dst, ptr, 512, W=W, w_rows=rows,
                                                    check=False), args.repeats, sync)
        comp = timed(lambda: composed_layer(A, S, dst, ptr, 512, W=W, w_rows=rows),
                     args.repeats, sync)
        (a1, s1, p1) = spla.importance_layer(A, S, dst, ptr, 512, W=W, w_rows=rows)
        (a2, s2, p2) = composed_layer(A, S, dst, ptr, 512, W=W, w_rows=rows)
        same = (np.array_equal(p1, p2) and bool((s1 == s2).all())
                and a1.to("cpu").isequal(a2.to("cpu"))
                and cupy.asnumpy(a1.values).tobytes() == cupy.asnumpy(a2.values).tobytes())
        print(f"importance_layer, {k} minibatch(es): fused {fused * 1e3:.3f} ms, composition "
              f"{comp * 1e3:.3f} ms, same {same}", flush=True)
        out.append(f"| {k} | {fused * 1e3:.3f} | {comp * 1e3:.3f} | {comp / fused:.2f}x | "
                   f"{same} |")
    out.append("")


def spgemm(cupy, args, out):
    import spla
    from spla.generators import rmat
    sync = cupy.cuda.Device().synchronize
    out += ["## SpGEMM: `spla.mxm` (plus_times, float32) against cupyx.scipy.sparse (cuSPARSE)\n",
            "| product | nnz(C) | ours ms | cupyx ms | cupyx / ours | same result |",
            "|---|---|---|---|---|---|"]
    cases = []
    for scale in args.spgemm_scales:
        A = rmat(scale, 16, seed=0)
        A = A.with_values(np.ones(A.nnz, np.float32)).to("cuda")
        cases.append((f"A @ A, scale {scale}", A, A))
    big = rmat(args.scale, 16, seed=0)
    big = big.with_values(np.ones(big.nnz, np.float32)).to("cuda")
    # 100,000 rows as in the sampler's product; half the rows of a smaller (--quick) graph.
    nq = min(100_000, big.nrows // 2)
    rows = np.sort(np.random.default_rng(3).choice(big.nrows, nq, replace=False))
    Q = spla.Matrix.from_csr(np.arange(rows.size + 1), rows, np.ones(rows.size, np.float32),
                             (rows.size, big.nrows)).to("cuda")
    cases.append((f"Q @ A, {nq:,} rows of scale {args.scale}", Q, big))
    for name, X, Y in cases:
        Xc, Yc = X.to_cupyx(), Y.to_cupyx()
        ours = timed(lambda: spla.mxm(X, Y).new(), args.repeats, sync)
        C = spla.mxm(X, Y).new()
        try:
            theirs = timed(lambda: Xc @ Yc, args.repeats, sync)
            R = Xc @ Yc
        except Exception as exc:  # noqa: BLE001 - cuSPARSE refuses some sizes: say so, go on
            print(f"{name}: ours {ours * 1e3:.2f} ms, cupyx failed: {exc}", flush=True)
            out.append(f"| {name} | {C.nnz:,} | {ours * 1e3:.2f} | failed: "
                       f"`{type(exc).__name__}: {exc}` | - | - |")
            continue
        R.sum_duplicates()
        R.sort_indices()
        same = (C.nnz == R.nnz and bool(cupy.array_equal(C.to_cupyx().indices, R.indices))
                and bool(cupy.allclose(C.to_cupyx().data, R.data, rtol=1e-5)))
        print(f"{name}: ours {ours * 1e3:.2f} ms, cupyx {theirs * 1e3:.2f} ms "
              f"({theirs / ours:.2f}x), same {same}", flush=True)
        out.append(f"| {name} | {C.nnz:,} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | "
                   f"{theirs / ours:.2f}x | {same} |")
        del C, R
    out.append("")


def profile(cupy, out, G):
    """Host-side profile (cProfile) of calls whose wall time the host bounds."""
    import sampling
    sync = cupy.cuda.Device().synchronize
    rng = np.random.default_rng(4)
    batches = [cupy.asarray(rng.choice(G.nrows, 1024, replace=False)) for _ in range(256)]
    out.append("## Host-side profile (cProfile)\n")
    cases = (("GraphSAGE [15, 10, 5], bulk 1", sampling.GraphSAGE(G, [15, 10, 5]), 1),
             ("GraphSAGE [15, 10, 5], bulk 16", sampling.GraphSAGE(G, [15, 10, 5]), 16),
             ("GraphSAGE [15, 10, 5], bulk 256", sampling.GraphSAGE(G, [15, 10, 5]), 256),
             ("LADIES [512, 512], bulk 1", sampling.LADIES(G, [512, 512]), 1),
             ("FastGCN [512, 512], bulk 1", sampling.FastGCN(G, [512, 512]), 1))
    for name, s, k in cases:
        bs = batches[:k]
        s.sample(bs, seed=1)
        sync()
        prof = cProfile.Profile()
        prof.enable()
        for e in range(4):
            s.sample(bs, seed=1, epoch=e + 1)
        sync()
        prof.disable()
        for order, count in (("tottime", 25), ("cumulative", 30)):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats(order).print_stats(count)
            text = buf.getvalue()
            print(f"{name}, 4 calls, by {order}\n", text, flush=True)
            out += [f"### {name}, 4 calls, by {order}\n", "```", text.strip(), "```", ""]


def _kernel_name(mangled):
    """``module.function`` of a numba-cuda kernel's mangled name; other names cut short."""
    if not mangled.startswith("_ZN"):
        name = re.sub(r"\[abi:[^\]]*\]?|\(.*|<.*", "", mangled)
        return re.sub(r"CUB_\w+", "cub", ".".join(name.split("::")[-2:]))[:48]
    parts, i = [], 3
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while mangled[j].isdigit():
            j += 1
        size = int(mangled[i:j])
        parts.append(mangled[j:j + size])
        i = j + size
    return ".".join(p.split("$")[0] for p in parts[-2:]) or mangled[:48]


def trace(cupy, out, G):
    """GPU busy time of GraphSAGE and LADIES calls, read by CUPTI (torch.profiler).

    Every kernel of the process (numba-cuda, cupy, cuSPARSE) is recorded
    with its GPU duration, without synchronising between launches:
    the busy fraction (kernel time / wall time) says whether a call is
    bound by the GPU or by the host's launches and reads.
    """
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile as tprofile
    except ImportError:
        out.append("## GPU trace\n\ntorch is not installed: no trace.\n")
        return
    import sampling
    sync = cupy.cuda.Device().synchronize
    rng = np.random.default_rng(5)
    batches = [cupy.asarray(rng.choice(G.nrows, 1024, replace=False)) for _ in range(256)]
    out += ["## GPU trace (CUPTI through torch.profiler, 3 calls each)\n",
            "| call | wall ms per call | GPU busy ms per call | busy | kernels per call "
            "| largest kernels (GPU ms per call, launches per call) |",
            "|---|---|---|---|---|---|"]
    torch.zeros(1, device="cuda")
    cases = [(f"GraphSAGE [15, 10, 5], bulk {k}", sampling.GraphSAGE(G, [15, 10, 5]),
              batches[:k]) for k in (1, 16, 256)]
    cases += [("LADIES [512, 512], bulk 16", sampling.LADIES(G, [512, 512]), batches[:16]),
              ("LADIES [512, 512], bulk 1", sampling.LADIES(G, [512, 512]), batches[:1]),
              ("FastGCN [512, 512], bulk 1", sampling.FastGCN(G, [512, 512]), batches[:1])]
    for name, s, bs in cases:
        s.sample(bs, seed=1)
        sync()
        with tprofile(activities=[ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            for e in range(3):
                s.sample(bs, seed=1, epoch=e + 1)
            sync()
            wall = (time.perf_counter() - t0) / 3
        per = collections.defaultdict(float)
        cnt = collections.Counter()
        for ev in prof.events():
            if getattr(ev.device_type, "name", "") == "CUDA":
                key = _kernel_name(ev.name)
                per[key] += ev.time_range.elapsed_us() / 3e3
                cnt[key] += 1
        busy = sum(per.values())
        # One layer-wise minibatch per call is the case whose GPU time is not
        # yet explained (230 kernels): list more of its kernels.
        top = sorted(per.items(), key=lambda kv: -kv[1])[:16 if name.endswith("bulk 1") else 6]
        text = ", ".join(f"`{k}` {v:.3f} (x{cnt[k] / 3:g})" for k, v in top)
        print(f"trace {name}: wall {wall * 1e3:.2f} ms, GPU {busy:.2f} ms "
              f"({busy / (wall * 1e3):.0%}), {sum(cnt.values()) / 3:g} kernels: {text}",
              flush=True)
        out.append(f"| {name} | {wall * 1e3:.2f} | {busy:.2f} | {busy / (wall * 1e3):.0%} | "
                   f"{sum(cnt.values()) / 3:g} | {text} |")
    out.append("")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sections", default=",".join(SECTIONS),
                   help="comma-separated subset of: " + ", ".join(SECTIONS))
    p.add_argument("--quick", action="store_true", help="scale 16, bulks 4 and 16, 2 repeats")
    p.add_argument("--no-tests", action="store_true", help="skip the GPU test run")
    p.add_argument("--profile", action="store_true",
                   help="add the host-side profile and the GPU time per kernel")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-unfused", dest="unfused", action="store_false",
                   help="skip the operator-by-operator GraphSAGE path (the fused one only)")
    p.add_argument("--out", default=None, help="results file (default: results/gpu_<device>.md)")
    p.add_argument("--watchdog", type=float, default=0,
                   help="after this many seconds print every thread's stack and exit (a "
                        "hang on a lent machine then says where it is)")
    args = p.parse_args(argv)
    if args.watchdog > 0:
        import faulthandler
        faulthandler.dump_traceback_later(args.watchdog, exit=True)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    bad = sorted(set(sections) - set(SECTIONS))
    if bad:
        p.error(f"--sections: unknown {bad}; expected a subset of {list(SECTIONS)}")
    if args.no_tests and "tests" in sections:
        sections.remove("tests")
    args.scale, args.bulks, args.spgemm_scales = 20, (1, 16, 64, 256), (14, 16)
    if args.quick:
        args.scale, args.bulks, args.spgemm_scales, args.repeats = 16, (4, 16), (12,), 2

    cupy = require_gpu("bench_gpu.py")
    name, mem = device_name(cupy)
    path = args.out or os.path.join(HERE, "results", f"gpu_{device_slug(name)}.md")
    command = "python benchmarks/bench_gpu.py " + " ".join(sys.argv[1:] if argv is None else argv)
    t0 = time.perf_counter()
    out = [f"# GPU benchmark on one {name}\n",
           f"- Command: `{command.strip()}`",
           f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
           f"- Device: {name}, {mem / 2**30:.0f} GiB; host {os.cpu_count()} CPU cores",
           f"- Versions: {versions(cupy)}", ""]
    print("\n".join(out), flush=True)
    ok = True
    if "tests" in sections:
        ok &= run_tests(out)
    if "equal" in sections:
        ok &= check_equal(cupy, out)
    if "train" in sections:
        ok &= train(out)
    G = None
    if {"graphsage", "layerwise", "trace"} & set(sections) or args.profile:
        from spla.generators import rmat
        G = rmat(args.scale, 16, seed=0).to("cuda")
    if "graphsage" in sections:
        graphsage(cupy, args, out, G)
    if "uva" in sections:
        uva(cupy, args, out)
    if "launch" in sections:
        launch_overhead(cupy, out)
    if "layerwise" in sections:
        layerwise(cupy, args, out, G)
    if args.profile:
        profile(cupy, out, G)
    if "trace" in sections:
        trace(cupy, out, G)
    if "spgemm" in sections:
        spgemm(cupy, args, out)
    out.insert(5, f"- Wall time {time.perf_counter() - t0:.0f} s\n")
    from machine import write_results
    write_results(path, "\n".join(out) + "\n")
    print("wrote", path, flush=True)
    return 0 if ok else 1


def versions(cupy):
    from importlib import metadata
    found = []
    for dist in ("numba", "numba-cuda", "numpy", "scipy"):
        try:
            found.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    found.append(f"cupy {cupy.__version__}")
    return ", ".join(found)


if __name__ == "__main__":
    sys.exit(main())
