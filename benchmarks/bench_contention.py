#!/usr/bin/env python
"""The main job under CPU contention: default numba threads against ``--threads 1``.

    python benchmarks/bench_contention.py [--samplers sage,ladies] [--competitors 4]
                                          [--repeats 1] [--env KEY=VALUE ...]
                                          [--out benchmarks/results/contention_cpu.md]

For each sampler, ``python -m sampling.train --sampler S`` (Cora, the
default dataset and settings) runs with the default thread count and with
``--threads 1``, first on a quiet machine, then with ``--competitors``
CPU-bound processes (``while True: pass``) started beside it.  When a core is
taken from one thread of a parallel region, the other threads of the region
wait for it at its end; a runtime that spins while it waits burns the core
the late thread needs, and many small regions turn into a collapse.  The
figure of merit is the ratio default / ``--threads 1`` under contention
(goal: at most 2x; 1x means the threads cost nothing when cores are taken).

Reported per run: the wall time of the process, the training time it prints
(``trained N epochs in X s``: excludes imports and compilation) and the sum
of its per-epoch sampling column.  Each configuration runs once untimed
first (numba's cache, Cora's load), then ``--repeats`` timed runs; the
minimum is reported (contention only ever adds time).

Competitors stop by themselves after ``--competitor-limit`` seconds even if
this script dies, and are killed in a ``finally`` when it does not.  Every
child run is bounded by ``--timeout``.
"""

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

_TRAINED = re.compile(r"trained \d+ epochs in ([0-9.]+) s")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samplers", default="sage,ladies",
                   help="samplers of sampling.train, comma separated (default sage,ladies: GraphSAGE and LADIES)")
    p.add_argument("--competitors", type=int, default=4,
                   help="CPU-bound processes started for the contended runs (default 4)")
    p.add_argument("--repeats", type=int, default=1,
                   help="timed runs per configuration; the minimum is reported (default 1)")
    p.add_argument("--timeout", type=float, default=240.0,
                   help="seconds after which a training run is killed (default 240)")
    p.add_argument("--competitor-limit", type=float, default=1800.0,
                   help="seconds after which a competitor stops by itself (default 1800)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="extra environment of every training run (repeatable), e.g. "
                        "OMP_WAIT_POLICY=ACTIVE to compare wait policies")
    p.add_argument("--train-args", default="",
                   help="extra arguments of sampling.train, e.g. '--epochs 5'")
    p.add_argument("--out", default=os.path.join(HERE, "results", "contention_cpu.md"),
                   help="markdown output (default benchmarks/results/contention_cpu.md); "
                        "'-' for none")
    p.add_argument("--note", default="", help="a line added to the results file")
    args = p.parse_args(argv)
    for kv in args.env:
        if "=" not in kv:
            p.error(f"--env expects KEY=VALUE; got {kv!r}")
    return args


def start_competitors(n, limit):
    """``n`` busy processes that stop by themselves after ``limit`` seconds."""
    code = f"import time\nend = time.monotonic() + {float(limit)}\nwhile time.monotonic() < end: pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


def train_once(sampler, threads, env, train_args, timeout):
    """(wall s, training s, sampling s) of one ``sampling.train`` run."""
    cmd = [sys.executable, "-m", "sampling.train", "--sampler", sampler, "--no-progress"]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    cmd += train_args.split()
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr[-2000:]}")
    m = _TRAINED.search(r.stdout)
    trained = float(m.group(1)) if m else float("nan")
    return wall, trained, _sampling_seconds(r.stdout)


def _sampling_seconds(stdout):
    """Sum of the per-epoch 'sample s' column of the training log."""
    lines = stdout.splitlines()
    for h, line in enumerate(lines):
        if line.startswith("epoch") and "sample s" in line:
            total = 0.0
            for row in lines[h + 1:]:
                parts = row.split()
                if not parts or not parts[0].isdigit():
                    break
                total += float(parts[3])   # epoch, loss, val acc, sample s, ...
            return total
    return float("nan")


def machine_line():
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    except OSError:
        model = platform.processor() or "?"
    la = os.getloadavg()
    return (f"{len(os.sched_getaffinity(0))} cores available ({os.cpu_count()} online), {model}, "
            f"Linux {platform.release()}; load average at start {la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f}")


def versions_line():
    import numba
    import numpy
    out = [f"python {platform.python_version()}", f"numpy {numpy.__version__}",
           f"numba {numba.__version__}"]
    try:
        import torch
        out.append(f"torch {torch.__version__}")
    except ImportError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    out.append(f"repo commit {commit or '?'}")
    return ", ".join(out)


def threading_line(env):
    """The threading layer and OpenMP settings a training process sees."""
    code = ("import kernels, numba, numpy as np, os\n"
            "from numba import prange\n"
            "@numba.njit(parallel=True)\n"
            "def f(a):\n"
            "    for i in prange(a.size): a[i] += 1\n"
            "f(np.zeros(4))\n"
            "print(numba.threading_layer(), numba.config.NUMBA_NUM_THREADS,"
            " os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True)
    if r.returncode:
        return f"(could not query: {r.stderr.strip()[-200:]})"
    layer, nt, wp, sc = r.stdout.split()
    return (f"numba threading layer {layer}, NUMBA_NUM_THREADS={nt}, "
            f"OMP_WAIT_POLICY={wp}, GOMP_SPINCOUNT={sc} (as seen after `import kernels`)")


def main(argv=None):
    args = parse_args(argv)
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for kv in args.env:
        k, v = kv.split("=", 1)
        env[k] = v
    samplers = [s for s in args.samplers.split(",") if s]
    started = datetime.now(timezone.utc)
    t_start = time.perf_counter()
    header = [machine_line(), versions_line(), threading_line(env)]
    for line in header:
        print(line, flush=True)

    # Untimed warm-up: compiles or loads the numba cache, loads Cora.
    for s in samplers:
        train_once(s, 1, env, args.train_args, args.timeout)

    rows = []
    for contended in (False, True):
        comps = start_competitors(args.competitors, args.competitor_limit) if contended else []
        try:
            if comps:
                time.sleep(0.5)   # let them start spinning
            for s in samplers:
                res = {}
                for threads in (None, 1):
                    best = None
                    for _ in range(max(1, args.repeats)):
                        r = train_once(s, threads, env, args.train_args, args.timeout)
                        best = r if best is None or r[1] < best[1] else best
                    res[threads] = best
                    label = "default" if threads is None else "--threads 1"
                    print(f"{'contended' if contended else 'quiet':9s} {s:10s} {label:12s} "
                          f"wall {best[0]:7.2f} s  train {best[1]:7.2f} s  "
                          f"sample {best[2]:7.3f} s", flush=True)
                ratio = res[None][1] / res[1][1]
                sratio = res[None][2] / res[1][2]
                print(f"{'':9s} {s:10s} ratio default / --threads 1: train {ratio:.2f}x, "
                      f"sample {sratio:.2f}x", flush=True)
                rows.append((contended, s, res, ratio, sratio))
        finally:
            stop(comps)

    wall = time.perf_counter() - t_start
    if args.out != "-":
        write_md(args, header, rows, started, wall)
        print(f"wrote {args.out}")


def write_md(args, header, rows, started, wall):
    cmd = "python benchmarks/bench_contention.py " + " ".join(
        a if " " not in a else repr(a) for a in sys.argv[1:])
    lines = [
        "# The main job under CPU contention (CPU)",
        "",
        f"- Command: `{cmd.strip()}`",
        f"- Date: {started:%Y-%m-%d %H:%M} UTC; wall time {wall:.0f} s",
        f"- Machine: {header[0]}",
        f"- Versions: {header[1]}",
        f"- Threads: {header[2]}",
        f"- Runs: `python -m sampling.train --sampler S --no-progress {args.train_args}`"
        " (Cora, default settings) with the default numba threads and with `--threads 1`;"
        f" contended: {args.competitors} CPU-bound processes (`while True: pass`) beside it."
        f" Minimum of {max(1, args.repeats)} timed run(s) after an untimed one.",
        "- Columns: wall = the whole process (imports included); train = `trained N epochs in"
        " X s` from its log; sample = sum of its per-epoch sampling column.",
    ]
    if args.env:
        lines.append(f"- Extra environment: {' '.join(args.env)}")
    if args.note:
        lines.append(f"- {args.note}")
    lines += ["", "| condition | sampler | threads | wall s | train s | sample s "
                  "| ratio default / 1: train | sample |",
              "|---|---|---|---:|---:|---:|---:|---:|"]
    for contended, s, res, ratio, sratio in rows:
        cond = f"{args.competitors} competitors" if contended else "quiet"
        for threads in (None, 1):
            w, t, smp = res[threads]
            label = "default" if threads is None else "1"
            lines.append(f"| {cond} | {s} | {label} | {w:.2f} | {t:.2f} | {smp:.3f} | "
                         f"{f'{ratio:.2f}x' if threads == 1 else ''} | "
                         f"{f'{sratio:.2f}x' if threads == 1 else ''} |")
    lines.append("")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
