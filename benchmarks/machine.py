"""What a results file records about the machine (benchmark-only code).

Imported by the scripts of ``benchmarks/`` (run as ``python
benchmarks/<script>.py``, so this folder is on ``sys.path``).
"""

import os
import platform
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _first_field(path, key, convert):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return convert(line)
    except OSError:
        pass
    return "unknown"


def machine_info():
    """Cores available and online, CPU model, RAM and kernel release, for a results header.

    Examples
    --------
    >>> sorted(machine_info())
    ['cpu', 'cpu_count', 'kernel', 'nproc', 'ram']
    """
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        nproc = os.cpu_count()
    return dict(
        nproc=nproc, cpu_count=os.cpu_count(),
        cpu=_first_field("/proc/cpuinfo", "model name", lambda ln: ln.split(":", 1)[1].strip()),
        ram=_first_field("/proc/meminfo", "MemTotal",
                         lambda ln: f"{int(ln.split()[1]) / 2**20:.1f} GiB"),
        kernel=platform.release())


def training_versions():
    """Versions of what an MPI training benchmark runs on, and the repository commit.

    Imports numpy, numba, torch and mpi4py (the training benchmarks need
    them all).
    """
    import mpi4py
    import numba
    import numpy as np
    import torch
    from mpi4py import MPI
    v = {"python": platform.python_version(), "numpy": np.__version__,
         "numba": numba.__version__, "torch": torch.__version__,
         "mpi4py": mpi4py.__version__,
         "MPI": " ".join(MPI.Get_library_version().splitlines()[0].split())}
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True,
                               text=True).stdout.strip()
        if commit:
            v["repo commit"] = commit + (" (+ uncommitted changes)" if dirty else "")
    except OSError:
        pass
    return v


def mpi_command(script, comm, argv):
    """The command line that ran an MPI benchmark, for its results header."""
    return (f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')} mpiexec -n "
            f"{comm.Get_size()} python benchmarks/{script} " + " ".join(argv)).strip()


def write_results(path, md):
    """Write a results file, keeping the hand-written ``## Conclusion`` of the old one."""
    keep = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        marker = "\n## Conclusion"
        if marker in old:
            keep = old[old.index(marker):]
    with open(path, "w") as f:
        f.write(md + keep)


def emit_results(lines, out=None):
    """Join a results file's lines; write them to ``out`` (keeping its
    ``## Conclusion``) or print them when ``out`` is None."""
    text = "\n".join(lines) + "\n"
    if out:
        write_results(out, text)
    else:
        print(text)


def run_or_report(parser, argv, run, report, json_default):
    """Finish an MPI benchmark's command line and run it or render a past run.

    Adds the options every MPI benchmark shares (``--json`` where a run
    writes its figures, ``--report JSON`` with ``--out``/``--png`` to render
    them without MPI), parses ``argv`` and calls ``report(args)`` or
    ``run(args)``.
    """
    parser.add_argument("--json", default=json_default)
    parser.add_argument("--report", metavar="JSON", help="render a run's JSON (no MPI)")
    parser.add_argument("--out", help="with --report: write the markdown table here")
    parser.add_argument("--png", help="with --report: write the plot here")
    args = parser.parse_args(argv)
    (report if args.report else run)(args)


def run_on_world(script, run):
    """Run ``run(comm)`` on COMM_WORLD, every rank ending the job if one fails.

    Returns ``(comm, result, load averages at start, wall seconds)``; the
    caller writes results on rank 0.
    """
    import time
    from mpi4py import MPI
    import spla.comm as C
    comm = MPI.COMM_WORLD
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    with C.abort_on_error(comm, prefix=f"{script}: "):
        result = run(comm)
    return comm, result, load0, time.perf_counter() - t0


def results_header(title, command, wall, load0, vers):
    """The first lines of a results file: title, command, date, machine, versions."""
    from datetime import datetime, timezone
    info, load1 = machine_info(), os.getloadavg()
    return [f"# {title}\n",
            f"- Command: `{command}`",
            f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; wall time "
            f"{wall:.0f} s",
            f"- Machine: {info['nproc']} cores, {info['cpu']}, {info['ram']} RAM, Linux "
            f"{info['kernel']}; load average at start {load0[0]:.2f} / {load0[1]:.2f} / "
            f"{load0[2]:.2f}, at end {load1[0]:.2f}",
            "- Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items())]
