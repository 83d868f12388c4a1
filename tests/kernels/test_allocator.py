"""``kernels.allocator``: large arrays come from freed memory, not fresh mappings.

Each check runs in a fresh interpreter: the policy is process-wide and is
applied when ``kernels`` is imported.  glibc's ``mallinfo2`` says how many
bytes are held in mappings of their own (``hblkhd``): a 64 MiB array adds
to them under the system's policy, not under ``reuse``.
"""

import ctypes
import os
import subprocess
import sys

import pytest

from kernels import allocator

GLIBC = allocator._glibc() is not None and hasattr(ctypes.CDLL(None), "mallinfo2")
pytestmark = pytest.mark.skipif(not GLIBC, reason="needs glibc 2.33+ (mallinfo2)")

PROBE = """
import ctypes, sys
import numpy as np
{setup}
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
{alloc}
"""

#: A 64 MiB array on the main thread.
ON_MAIN = """
before = libc.mallinfo2().hblkhd
a = np.ones(2 ** 23)
print(libc.mallinfo2().hblkhd - before)
"""

#: A 128 MiB array on a new thread, as a prefetching loader's: above the
#: 64 MiB heaps glibc gives a thread's own arena.
ON_THREAD = """
import threading
before = libc.mallinfo2().hblkhd
held = []
t = threading.Thread(target=lambda: held.append(np.ones(2 ** 24)))
t.start(); t.join()
print(libc.mallinfo2().hblkhd - before)
"""


def _mapped_bytes(setup, policy=None, alloc=ON_MAIN):
    env = dict(os.environ)
    env.pop(allocator.ENV, None)
    if policy is not None:
        env[allocator.ENV] = policy
    out = subprocess.run([sys.executable, "-c", PROBE.format(setup=setup, alloc=alloc)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


@pytest.mark.slow
def test_import_serves_large_arrays_from_the_heap():
    assert _mapped_bytes("import kernels") < 2 ** 26
    assert _mapped_bytes("import kernels", " Reuse ") < 2 ** 26


@pytest.mark.slow
def test_threads_started_after_import_share_the_heap():
    assert _mapped_bytes("import kernels", alloc=ON_THREAD) < 2 ** 26
    assert _mapped_bytes("import kernels", "system", alloc=ON_THREAD) >= 2 ** 27


@pytest.mark.slow
def test_system_policy_and_switching_off_leave_fresh_mappings():
    assert _mapped_bytes("import kernels", "system") >= 2 ** 26
    off = "import kernels\nfrom kernels.allocator import reuse_freed_memory\n" \
          "assert reuse_freed_memory(False)"
    assert _mapped_bytes(off) >= 2 ** 26
    # Not importing kernels: the probe itself sees the system's mapping.
    assert _mapped_bytes("") >= 2 ** 26


@pytest.mark.slow
def test_unknown_policy_is_a_clear_error():
    with pytest.raises(ValueError, match=r"SPLA_MALLOC.*\['reuse', 'system'\].*'bogus'"):
        allocator.apply_policy({"SPLA_MALLOC": "bogus"})
    env = dict(os.environ, SPLA_MALLOC="bogus")
    out = subprocess.run([sys.executable, "-c", "import kernels"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "environment variable 'SPLA_MALLOC' must be one of" in out.stderr


def test_system_policy_changes_nothing():
    assert allocator.apply_policy({"SPLA_MALLOC": "system"}) is False
