"""Run the commands whose results the documentation quotes, and compare.

Every accuracy the docs quote is the printed result of a command; when a
default changes, this script says which quotes went stale::

    python benchmarks/docs_figures.py            # run all, print a table
    python benchmarks/docs_figures.py --check    # exit 1 if a quote differs

Each quote is found in its page by a pattern (so the script reads what the
page says today) and compared at the quote's precision.  The runs use one
numba and one torch thread per rank, as the docs' runs do; they take a few
minutes on two cores.
"""

import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = [sys.executable, "-m", "sampling.train"]

#: (page, pattern whose group 1 is the quoted figure, ranks, options)
FIGURES = [
    ("docs/training.rst", r"``test accuracy: <value>``: (0\.\d+) with\s+seed 0", 1, []),
    ("docs/training.rst", r"reach (0\.\d+) on Cora with the graph replicated", 4, []),
    ("docs/training.rst", r"replicated and (0\.\d+)\s+partitioned", 4,
     ["--graph", "partitioned", "--replication", "2"]),
    ("docs/training.rst", r"--split global`` it is the replicated\s+run up to the row "
                          r"fetches \((0\.\d+)", 4,
     ["--graph", "partitioned", "--replication", "2", "--split", "global"]),
    ("docs/p3.rst", r"trains\s+to (0\.\d+) test accuracy on 2 ranks", 2,
     ["--graph", "partitioned", "--features", "columns"]),
    ("docs/p3.rst", r"on 2 ranks and (0\.\d+) on 4", 4,
     ["--graph", "partitioned", "--features", "columns"]),
]


def quoted(page, pattern):
    """The figure ``page`` quotes (a string, as written)."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        m = re.search(pattern, f.read())
    if m is None:
        raise SystemExit(f"{page}: the quote /{pattern}/ is gone; update FIGURES")
    return m.group(1)


def run(ranks, options):
    """The printed test accuracy of the main job with ``options`` on ``ranks`` processes."""
    cmd = TRAIN + options + ["--threads", "1", "--no-progress"]
    if ranks > 1:
        cmd = ["mpiexec", "-n", str(ranks)] + cmd
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=1800)
    m = re.search(r"^test accuracy: (\d\.\d+)$", proc.stdout, re.M)
    if proc.returncode or m is None:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    shown = ["python" if c == sys.executable else c for c in cmd]
    return float(m.group(1)), " ".join(shown)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a quote differs")
    args = ap.parse_args(argv)
    stale = 0
    print(f"{'page':20} {'quoted':>7} {'printed':>8}  command")
    for page, pattern, ranks, options in FIGURES:
        q = quoted(page, pattern)
        t0 = time.monotonic()
        acc, cmd = run(ranks, options)
        decimals = len(q.split(".")[1])
        same = f"{acc:.{decimals}f}" == q
        stale += not same
        print(f"{page:20} {q:>7} {acc:8.4f}  {cmd}  ({time.monotonic() - t0:.0f} s)"
              + ("" if same else "   <-- stale"))
    if stale:
        print(f"{stale} quote(s) differ from what the commands print")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
