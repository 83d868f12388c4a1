"""Device operations, blocking reads and uploads of one LADIES / FastGCN bulk, per spla operator.

Runs the samplers' GPU path under numba's CUDA simulator with the cupy
stand-in of the tests (``tests/fake_cupy.py``), which counts every device
operation ("launch": kernels, array-module calls that compute, gathers) and
every blocking device-to-host read, and attributes them to the spla
operators the layer-wise composition calls (each operator's own count,
its callees' subtracted).  No GPU needed; the counts are those a GPU pays,
not times.

    NUMBA_ENABLE_CUDASIM=1 python benchmarks/count_layerwise_ops.py
"""

import collections
import functools
import importlib
import os
import sys

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
os.environ.setdefault("SPLA_IN_CUDASIM", "1")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "sampling"), ROOT]

import fake_cupy  # noqa: E402

OWN = collections.defaultdict(lambda: [0, 0, 0])  # name -> launches, reads, calls
STACK = []


def wrap(owner, name, label=None):
    """Count ``owner.name``'s own launches and reads under ``label``."""
    fn = getattr(owner, name)
    label = label or name

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        l0, r0 = fake_cupy.STATS["launches"], fake_cupy.STATS["reads"]
        STACK.append([0, 0])
        try:
            return fn(*args, **kwargs)
        finally:
            inner = STACK.pop()
            dl = fake_cupy.STATS["launches"] - l0
            dr = fake_cupy.STATS["reads"] - r0
            own = OWN[label]
            own[0] += dl - inner[0]
            own[1] += dr - inner[1]
            own[2] += 1
            if STACK:
                STACK[-1][0] += dl
                STACK[-1][1] += dr

    setattr(owner, name, counted)


def main():
    with fake_cupy.installed() as cp:
        import kernels.cuda._util as cuda_util
        cuda_util.CHUNK_ITEMS = 1 << 26   # a GPU's chunks, not the simulator's tiny ones
        import sampling.samplers.base as base
        import sampling.samplers.layerwise as L
        import spla
        from sampling import FastGCN, LADIES
        from test_gpu_path import _graph, _seeds
        for name in ("sample_rows", "reduce_row_groups"):
            wrap(L, name)
        # importance_layer's own operations, and the kernels it calls.
        layer_blocks = importlib.import_module("kernels.cuda.layer_blocks")
        layer_groups = importlib.import_module("kernels.cuda.layer_groups")
        wrap(layer_blocks, "importance_layer", "importance_layer (scales, values)")
        wrap(layer_groups, "kept_columns", "importance_layer: its columns")
        wrap(layer_groups, "kept_columns_unread", "importance_layer: its columns")
        wrap(layer_groups, "extract_groups", "importance_layer: its block")
        wrap(layer_groups, "extract_groups_unread_cols", "importance_layer: its block")
        wrap(spla, "scale_columns")
        wrap(importlib.import_module("spla.mxm").MxmExpr, "new", "MxmExpr.new")
        wrap(L._LayerWise, "_sample_stacked", "the sampler's own array calls")
        wrap(base, "assemble", "assemble (split_blocks)")
        wrap(base, "stack_batches")
        A, _ = _graph(seed=7)
        host = _seeds(A.nrows, k=2)
        given = {"device": [cp.asarray(s) for s in host], "host": host}
        for cls in (LADIES, FastGCN):
            sampler = cls(A.to("cuda"), [6, 5])
            sampler.sample(given["device"][:1], seed=3)   # the graph's one-off work
            # Minibatches as device arrays, and on the host as NodeLoader gives them.
            for where, k in (("device", 1), ("device", 2), ("host", 2)):
                OWN.clear()
                fake_cupy.reset()
                sampler.sample(given[where][:k], seed=3, epoch=1)
                total = dict(fake_cupy.STATS)
                print(f"{cls.__name__} [6, 5], bulk of {k}, minibatches on the {where}: "
                      f"{total['launches']} device operations, {total['reads']} blocking reads, "
                      f"{total['uploads']} host-to-device copies")
                for name, (l, r, c) in sorted(OWN.items(), key=lambda kv: -kv[1][0]):
                    print(f"  {name:32s} calls {c:2d}  launches {l:4d}  reads {r:3d}")


if __name__ == "__main__":
    main()
