"""Compile the numba kernels before the tests run (CI's warm-up step).

Every kernel is compiled with ``cache=True``: compiled here once, it is
loaded from disk by each test process, simulator child and MPI rank instead
of being compiled again in each of them (a kernel with many inlined helpers
takes tens of seconds per signature on a slow core).  numba compiles on one
core, so the work is split into parts that CI runs side by side (three
processes of unequal length share the two cores better than two)::

    python .ci/warm_numba.py serial &
    python .ci/warm_numba.py parallel &
    python .ci/warm_numba.py twins &
    wait

* ``serial``: the main operators on tiny inputs (each kernel's serial twin,
  which small inputs choose) and one call of each sampler;
* ``parallel``: the same operator calls with every kernel's parallel twin
  (what the tests' larger inputs choose), and the heterogeneous sampler;
* ``twins``: the CPU kernels on the index and value types that the CUDA
  simulator tests compare their CUDA twins with (the simulator child's
  checks, run with the CPU kernels on both sides).

The masked products (GraphBLAS) are left to the tests that use them:
warming both twins of their kernels for every value type here cost more
warm-up time (about 140 s more on 2 cores) than the tests saved.

The parts overlap a little (helpers that several kernels call, and the
simulator checks' int64 cases): a part finding a kernel in the cache loads
it, and ``kernels.cache_lock`` keeps the cache consistent while two
processes write it.
"""

import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def operators():
    """The spla operators on tiny inputs, for each value type."""
    import spla

    rng = np.random.default_rng(0)
    r = rng.integers(0, 8, 40)
    c = rng.integers(0, 8, 40)
    for values in (None, rng.random(40), rng.random(40).astype(np.float32)):
        A = spla.Matrix.from_coo(r, c, values, shape=(8, 8))
        spla.Matrix.from_csr(A.indptr, A.indices, A.values, A.shape)
        Q = spla.Matrix.from_coo([0, 1, 2], [5, 0, 5], shape=(3, 8))
        for sr in ("plus_times", "plus_pair", "min_plus"):
            spla.mxm(A, A, sr).new()
            spla.mxm(Q, A, sr).new()
        spla.extract(A, rows=[3, 1, 3], cols=[0, 2, 7])
        spla.take_rows(A, np.array([3, 1, 3]))
        spla.compact_columns(A)
        spla.reduce_rowwise(A)
        spla.ewise_add(A, A.T)
        spla.ewise_mult(A, A.T)
        for replace in (False, True):
            spla.sample_rows(A, 2, seed=1, replace=replace)
            spla.sample_rows(Q @ A, 2, seed=1, replace=replace)


def samplers():
    """One bulk of each homogeneous sampler on Cora."""
    import sampling
    import sampling.datasets
    import spla

    rng = np.random.default_rng(0)
    G = sampling.datasets.load("cora").A
    seeds = [np.arange(0, 64), np.arange(64, 128)]
    weighted = G.with_values(rng.random(G.nnz).astype(np.float32))
    # Cora's file gives int64 column ids, a graph built by ``from_coo`` int32
    # ones: the fused hop's two signatures (this part ends before
    # ``parallel`` does, so the second costs the warm-up no wall time).
    coo = G.to_scipy().tocoo()
    narrow = spla.Matrix.from_coo(coo.row, coo.col, shape=G.shape)
    for sampler in (sampling.GraphSAGE(G, fanouts=[5, 5]),
                    sampling.GraphSAGE(narrow, fanouts=[5, 5]),
                    sampling.GraphSAGE(weighted, fanouts=[5, 5], weighted=True, replace=True),
                    sampling.LADIES(G, layer_sizes=[64, 64]),
                    sampling.FastGCN(G, layer_sizes=[64, 64])):
        sampler.sample(seeds, seed=0)


def hetero_sampler():
    """One bulk of the heterogeneous sampler on a small synthetic MAG graph."""
    import sampling
    from sampling.datasets.mag import mag_dataset

    G = mag_dataset(8)
    sampler = sampling.HeteroGraphSAGE(G, fanouts=[3, 3])
    sampler.sample([np.arange(0, 8), np.arange(8, 16)], node_type="paper", seed=0)


def parallel_twins_only():
    """Make every CPU kernel choose its parallel twin, whatever the work."""
    import importlib
    import pkgutil

    import kernels.cpu
    from kernels.parallel import ParallelKernel

    for info in pkgutil.iter_modules(kernels.cpu.__path__):
        module = importlib.import_module(f"kernels.cpu.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, ParallelKernel):
                obj.threshold = 0


def simulator_twins():
    """The CPU side of the simulator tests' comparisons (CPU on both sides)."""
    # The packages first: with tests/ on the path, tests/spla and
    # tests/sampling would be found as namespace packages before an
    # editable install's finder is asked.
    import sampling  # noqa: F401
    import spla  # noqa: F401

    sys.path.extend([os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "kernels")])
    import test_cuda_kernels as sim
    from kernels import cpu

    for name in sorted(vars(sim)):
        if name.startswith("check_"):
            getattr(sim, name)(cpu, cpu, sim._np)


PARTS = {
    "serial": (operators, samplers),
    "parallel": (parallel_twins_only, operators, hetero_sampler),
    "twins": (simulator_twins,),
}


def main(argv):
    if not argv or any(part not in PARTS for part in argv):
        sys.exit(f"usage: python .ci/warm_numba.py PART [PART ...], PART in {sorted(PARTS)}")
    for part in argv:
        t0 = time.perf_counter()
        for step in PARTS[part]:
            step()
        print(f"warm-up {part}: kernels compiled or loaded in {time.perf_counter() - t0:.1f} s",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
