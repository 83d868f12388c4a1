"""Where a one-GPU job samples: ``choose_placement`` and the device-memory cap.

Three placements of the graph for ``--device cuda``:

* ``"cuda"``: the graph's arrays in device memory (``A.to("cuda")``), the
  fastest sampling;
* ``"uva"``: the graph's column indices and values in pinned,
  device-mapped host memory (``A.to("cuda", memory="host")``): the same
  CUDA kernels read them over the bus; only the row pointer
  (``pointer_bytes``, 8 bytes a vertex) takes device memory;
* ``"cpu"``: the CPU samplers, with the minibatches' inputs copied to the
  device through the pinned staging ring (``sampling.loading.staging``).

The rule (``choose_placement``): of the device memory free now (or the
cap, if lower), a ``reserve`` share is left for the model, activations,
the allocator's slack and the staging buffers; of the rest, ``working``
bytes are taken by the bulk's minibatches.  The graph goes to device
memory (``"cuda"``) when it fits in what is left, together with the
features when ``features_on_device``; otherwise it is read through UVA
when that is allowed (its row pointer and the features, if on the
device, must then fit); otherwise the CPU samples.  A placement thus never
puts more bytes in device memory than the rule allows, and more free
memory never moves the choice down the order cpu < uva < cuda, nor a
larger graph up it.

The cap: ``device_memory_limit`` (the main job's ``--device-memory-limit
BYTES``, or the ``SPLA_DEVICE_MEMORY_LIMIT`` environment variable) stands
for the free device memory when it is lower, and ``cap_device_memory``
holds cupy's memory pool and torch's caching allocator to it, so a graph
"larger than the GPU" is tested on any GPU: a placement that put more on
the device than the cap allows fails with an out-of-memory error instead
of running on the memory the real GPU has.

Examples
--------
>>> choose_placement(graph_bytes=6 << 30, feature_bytes=0, free_bytes=16 << 30)
'cuda'
>>> choose_placement(graph_bytes=20 << 30, feature_bytes=0, free_bytes=16 << 30)
'uva'
>>> choose_placement(20 << 30, 0, 16 << 30, uva=False)
'cpu'
"""

import os

from spla.checks import as_int, describe, fail
from spla.exceptions import InvalidValue

#: the placements, from the least to the most device memory they take
PLACEMENTS = ("cpu", "uva", "cuda")
#: the environment variable that caps the free device memory (bytes)
LIMIT_ENV = "SPLA_DEVICE_MEMORY_LIMIT"
#: default share of the free device memory kept out of the placement
DEFAULT_RESERVE = 0.25


def usable_bytes(free_bytes, reserve=DEFAULT_RESERVE, working_bytes=0):
    """Device bytes the graph (and features) may take: ``free * (1 - reserve) - working``.

    Examples
    --------
    >>> usable_bytes(1000, 0.25, 100)
    650
    >>> usable_bytes(100, 0.5, 80)
    0
    """
    func = "usable_bytes"
    free = as_int(func, "free_bytes", free_bytes, minimum=0)
    work = as_int(func, "working_bytes", working_bytes, minimum=0)
    if isinstance(reserve, bool) or not isinstance(reserve, (int, float)) or not 0 <= reserve < 1:
        fail(InvalidValue, func, "reserve", "a fraction in [0, 1)", describe(reserve))
    return max(0, int(free * (1 - reserve)) - work)


def device_bytes(placement, graph_bytes, feature_bytes, features_on_device=False,
                 pointer_bytes=0):
    """Bytes ``placement`` puts in device memory (the graph's and the features').

    ``pointer_bytes`` is the graph's row pointer (a part of ``graph_bytes``),
    which ``"uva"`` keeps in device memory.

    Examples
    --------
    >>> device_bytes("cuda", 10, 5), device_bytes("uva", 10, 5, True), device_bytes("cpu", 10, 5)
    (10, 5, 0)
    >>> device_bytes("uva", 10, 5, True, pointer_bytes=2)
    7
    """
    func = "device_bytes"
    if placement not in PLACEMENTS:
        fail(InvalidValue, func, "placement", f"one of {PLACEMENTS}", describe(placement))
    ptr = as_int(func, "pointer_bytes", pointer_bytes, minimum=0)
    g = graph_bytes if placement == "cuda" else ptr if placement == "uva" else 0
    f = feature_bytes if features_on_device and placement != "cpu" else 0
    return g + f


def choose_placement(graph_bytes, feature_bytes, free_bytes, *, working_bytes=0,
                     reserve=DEFAULT_RESERVE, features_on_device=False, uva=True,
                     pointer_bytes=0):
    """The placement for a graph of ``graph_bytes`` given ``free_bytes`` of device memory.

    Parameters
    ----------
    graph_bytes, feature_bytes : int
        Bytes of the graph's arrays and of the feature matrix.
    free_bytes : int
        Free device memory (or the cap, see ``free_device_bytes``).
    working_bytes : int, default 0
        Device bytes of one bulk's minibatches (inputs and activations).
    reserve : float, default 0.25
        Share of ``free_bytes`` left out (model, allocator slack, staging).
    features_on_device : bool, default False
        Whether the features are held in device memory too (in ``"cuda"``
        and ``"uva"``); the main job gathers them on the host, so False.
    uva : bool, default True
        Whether the UVA placement is available (False under MPI).
    pointer_bytes : int, default 0
        Bytes of the graph's row pointer (``A.indptr.nbytes``, part of
        ``graph_bytes``): ``"uva"`` keeps it in device memory.

    Returns
    -------
    str
        ``"cuda"``, ``"uva"`` or ``"cpu"`` (see the module's rule).

    Examples
    --------
    >>> choose_placement(100, 0, 1000, working_bytes=700)
    'uva'
    >>> choose_placement(300, 500, 1000, features_on_device=True)
    'uva'
    """
    func = "choose_placement"
    g = as_int(func, "graph_bytes", graph_bytes, minimum=0)
    f = as_int(func, "feature_bytes", feature_bytes, minimum=0)
    room = usable_bytes(free_bytes, reserve, working_bytes)
    p = as_int(func, "pointer_bytes", pointer_bytes, minimum=0)
    for placement in ("cuda", "uva") if uva else ("cuda",):
        if device_bytes(placement, g, f, features_on_device, p) <= room and (
                placement == "cuda" or features_on_device or room > 0):
            return placement
    return "cpu"


def memory_limit(limit=None):
    """The device-memory cap in bytes: ``limit``, else ``$SPLA_DEVICE_MEMORY_LIMIT``, else None.

    Examples
    --------
    >>> memory_limit(1 << 20)
    1048576
    """
    if limit is None:
        env = os.environ.get(LIMIT_ENV)
        if env is None or env.strip() == "":
            return None
        try:
            return as_int(LIMIT_ENV, "value", int(env), minimum=1)
        except ValueError:
            fail(InvalidValue, "memory_limit", LIMIT_ENV, "a number of bytes", repr(env))
    return as_int("memory_limit", "limit", limit, minimum=1)


def free_device_bytes(limit=None):
    """Free device memory now (``cupy.cuda.runtime.memGetInfo``), capped by ``memory_limit``.

    Without cupy or a device, the cap alone (or 0).

    Examples
    --------
    >>> free_device_bytes(1) <= 1
    True
    """
    cap = memory_limit(limit)
    try:
        import cupy
        free = int(cupy.cuda.runtime.memGetInfo()[0])
    except Exception:  # noqa: BLE001 - no cupy, no driver or no device: no free memory
        free = 0 if cap is None else cap
    return free if cap is None else min(free, cap)


def cap_device_memory(limit=None, *, device=0, cupy=None, torch=None):
    """Hold cupy's memory pool and torch's caching allocator to the device-memory cap.

    With a cap (``memory_limit(limit)``), cupy's default memory pool may
    hold at most that many bytes (``MemoryPool.set_limit``) and torch's
    caching allocator on ``device`` at most the same share of the GPU's
    memory (``torch.cuda.set_per_process_memory_fraction``): each of the
    two allocators is held to the cap, so together they hold at most twice
    it.  Both settings are the process's, for every later allocation; the
    main job applies them when ``--device cuda`` runs with a cap.  Mapped
    host memory (``Matrix.to("cuda", memory="host")``) and pinned staging
    buffers are host memory and do not count.

    Parameters
    ----------
    limit : int, optional
        The cap in bytes; None reads ``$SPLA_DEVICE_MEMORY_LIMIT``.
    device : int or torch.device, default 0
        The GPU whose allocators are capped.
    cupy, torch : modules, optional
        The modules to configure (default: import them); tests pass stand-ins.

    Returns
    -------
    int or None
        The cap applied, or None when there is none (nothing is changed).

    Examples
    --------
    >>> cap_device_memory(None) is None   # no cap given and none in the environment
    True
    """
    cap = memory_limit(limit)
    if cap is None:
        return None
    if cupy is None:
        import cupy
    if torch is None:
        import torch
    index = getattr(device, "index", device)
    index = 0 if index is None else int(index)
    cupy.get_default_memory_pool().set_limit(size=cap)
    total = int(torch.cuda.get_device_properties(index).total_memory)
    torch.cuda.set_per_process_memory_fraction(min(1.0, cap / max(total, 1)), index)
    return cap


def device_oom(exc):
    """The device out-of-memory error in ``exc``'s chain (cupy's or torch's), or None.

    Matched by class name (``OutOfMemoryError``), so neither cupy nor torch
    is imported; causes and contexts are followed (a prefetch thread's error
    re-raised, a wrapped kernel error).

    Examples
    --------
    >>> class OutOfMemoryError(Exception): pass
    >>> e = RuntimeError("in the loader")
    >>> e.__cause__ = OutOfMemoryError("out of memory allocating 1024 bytes")
    >>> str(device_oom(e)), device_oom(ValueError())
    ('out of memory allocating 1024 bytes', None)
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ in ("OutOfMemoryError", "CUDAOutOfMemoryError"):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def oom_message(exc, cap=None):
    """One line saying the device ran out of memory and what to lower (or raise).

    ``cap``: the device-memory cap the job ran under (``cap_device_memory``),
    which the line then names first: under a cap, running out of memory
    may only mean that the cap is too low.

    Examples
    --------
    >>> oom_message(MemoryError("out of memory allocating 512 bytes")).split(";")[0]
    'the GPU ran out of memory (out of memory allocating 512 bytes)'
    >>> oom_message(MemoryError("oom"), cap=1 << 30).split(";")[1].split("(")[0]
    ' the job is capped at 1073741824 bytes of device memory '
    """
    what = " ".join(str(exc).split()) or type(exc).__name__
    advice = ["lower --bulk or --memory-budget (fewer minibatches per bulk)",
              "keep the graph in host memory with --sample-on uva or sample on the CPU with "
              "--sample-on cpu", "lower --feature-cache"]
    if cap is None:
        advice.append("cap what the placement assumes free with --device-memory-limit BYTES")
        lead = ""
    else:
        lead = (f"the job is capped at {cap} bytes of device memory (--device-memory-limit "
                f"or ${LIMIT_ENV}): raise the cap, or ")
    return (f"the GPU ran out of memory ({what}); {lead}" + ", ".join(advice[:-1])
            + ", or " + advice[-1])


__all__ = ["choose_placement", "device_oom", "oom_message", "device_bytes", "usable_bytes",
           "memory_limit", "free_device_bytes", "cap_device_memory", "PLACEMENTS", "LIMIT_ENV",
           "DEFAULT_RESERVE"]
