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
