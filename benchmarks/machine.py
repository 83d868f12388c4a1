"""What a results file records about the machine (benchmark-only code).

Imported by the scripts of ``benchmarks/`` (run as ``python
benchmarks/<script>.py``, so this folder is on ``sys.path``).
"""

import os
import platform


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
