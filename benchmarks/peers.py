"""Peer GraphSAGE samplers for ``bench_sampling.py`` (benchmark-only code).

* torch-sparse's two CPU neighbour samplers, as PyG calls them:

  - ``torch.ops.torch_sparse.neighbor_sample(colptr, row, seeds, fanouts,
    replace, directed)``: what ``NeighborLoader`` runs when pyg-lib is absent.
    One call samples every hop; each hop samples only the vertices that the
    previous hop *added* (a vertex is expanded once), and the output is one
    merged subgraph (``node, row, col, edge``).
  - ``SparseTensor.sample_adj``: the older ``NeighborSampler`` path, hop by
    hop over the whole current node set (every hop re-samples the previous
    hop's vertices, as a DGL-style block does), building each hop's
    ``edge_index`` as ``NeighborSampler.sample`` does.

  Both run in one process, or in worker processes forked from a parent that
  holds the graph (inherited copy-on-write, nothing copied), each worker
  sampling its share of the minibatches and sending the results back through
  torch's shared-memory pickling, as ``NeighborLoader(num_workers=2)`` does.

* pyg-lib's ``neighbor_sample`` (``pyglib_neighbor_sample``): what
  ``NeighborLoader`` runs by default; the same expansion as torch-sparse's
  (each vertex once, one merged subgraph).  Optional like torch-sparse
  (``pyg_lib_or_none``), in 1 process or in the same forked workers.

* ``scipy_graphsage``: a straightforward one-minibatch-at-a-time GraphSAGE in
  scipy/numpy, the method's literal reading: per hop, form ``P = A[frontier]``
  (the product ``Q @ A``), draw ``min(f, deg)`` distinct entries per row by
  sorting random keys, relabel the frontier with ``np.unique``.

* ``numpy_rmat``: a small seeded R-MAT in numpy, a stand-in used only when
  ``spla.generators.rmat`` is not available.

torch and torch-sparse are optional: ``torch_sparse_or_none()`` says why they
are missing, and the benchmark skips those peers with that message.
"""

import os

import numpy as np

# ---------------------------------------------------------------------------
# Graph stand-in


def numpy_rmat(scale, edge_factor=16, *, seed, a=0.57, b=0.19, c=0.19):
    """A symmetric structural R-MAT graph as CSR ``(indptr int64, indices int32)``.

    Graph500 quadrant probabilities, no self loops, repeated edges stored
    once, vertex ids relabelled by a seeded permutation.  Not the same graph
    as ``spla.generators.rmat`` for the same seed (only a fallback).
    """
    rng = np.random.default_rng(seed)
    n = 1 << scale
    m = edge_factor * n
    u = np.zeros(m, np.int64)
    v = np.zeros(m, np.int64)
    ab, abc = a + b, a + b + c
    for level in range(scale):
        r = rng.random(m)
        bit = np.int64(1) << (scale - 1 - level)
        right = ((r >= a) & (r < ab)) | (r >= abc)
        down = r >= ab
        u += down * bit
        v += right * bit
    perm = rng.permutation(n)
    u, v = perm[u], perm[v]
    keep = u != v
    u, v = u[keep], v[keep]
    key = np.unique(np.concatenate([u * n + v, v * n + u]))
    rows, cols = key // n, key % n
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, cols.astype(np.int32)


# ---------------------------------------------------------------------------
# torch-sparse


def torch_sparse_or_none():
    """``(torch, torch_sparse, None)`` or ``(None, None, reason)``."""
    try:
        import torch
        import torch_sparse  # noqa: F401  (registers torch.ops.torch_sparse)
    except Exception as exc:  # ImportError, or an ABI mismatch
        return None, None, (f"torch-sparse not available ({type(exc).__name__}: {exc}); "
                            "install it with `pip install torch==2.13.0 ../shared/wheels/*.whl`")
    try:
        torch.ops.torch_sparse.neighbor_sample
    except Exception as exc:
        return None, None, f"torch.ops.torch_sparse.neighbor_sample missing ({exc})"
    return torch, torch_sparse, None


def pyg_lib_or_none():
    """``(pyg_lib, None)`` or ``(None, reason)``.

    pyg-lib is not on PyPI: build it from its public sources as
    ``../shared/peers/README.md`` describes and put the directory holding
    its ``pyg_lib`` package on ``PYTHONPATH`` (it needs the same torch as
    this venv).
    """
    try:
        import torch
        import pyg_lib
        torch.ops.pyg.neighbor_sample
    except Exception as exc:  # ImportError, an ABI mismatch, a missing op
        return None, (f"pyg-lib not available ({type(exc).__name__}: {exc}); build it as "
                      "../shared/peers/README.md says and put it on PYTHONPATH")
    return pyg_lib, None


class TorchGraph:
    """The graph in the layouts torch-sparse's samplers read.

    Row ``v`` of the spla matrix lists the neighbours of ``v`` (messages flow
    from them to ``v``).  ``neighbor_sample`` reads CSC (``colptr``, ``row``):
    the in-neighbours of ``v`` are ``row[colptr[v]:colptr[v+1]]``, so A's CSR
    arrays are passed as they are.  ``sample_adj`` samples rows of
    ``adj_t`` (``NeighborSampler``'s transposed adjacency): again A's rows,
    with ``value = arange(nnz)`` (edge ids, ``return_e_id=True``).  Built
    once; indices are int64 as torch-sparse requires.
    """

    def __init__(self, indptr, indices, n):
        import torch
        self.n = int(n)
        # Own, writable int64 copies (spla's arrays are read-only views).
        self.colptr = torch.from_numpy(np.array(indptr, dtype=np.int64))
        self.row = torch.from_numpy(np.array(indices, dtype=np.int64))
        self.adj_t = None
        try:
            from torch_sparse import SparseTensor
        except ImportError:  # pyg-lib alone reads only colptr and row
            return
        self.adj_t = SparseTensor(rowptr=self.colptr, col=self.row,
                                  value=torch.arange(self.row.numel()),
                                  sparse_sizes=(self.n, self.n), is_sorted=True,
                                  trust_data=True)


def neighbor_sample(g, seeds, fanouts):
    """One minibatch through ``torch.ops.torch_sparse.neighbor_sample``.

    ``replace=False, directed=True`` (NeighborLoader's defaults).  Returns
    ``(out, n_edges)``: ``out = (node, row, col, edge)``, ``n_edges`` the
    sampled edges (each edge of the merged subgraph once).
    """
    import torch
    seeds_t = torch.from_numpy(np.ascontiguousarray(seeds, dtype=np.int64))
    out = torch.ops.torch_sparse.neighbor_sample(g.colptr, g.row, seeds_t, list(fanouts),
                                                 False, True)
    return out, int(out[1].numel())


def sample_adj(g, seeds, fanouts):
    """One minibatch the way ``NeighborSampler.sample`` builds it.

    Per hop: ``adj_t, n_id = adj_t.sample_adj(n_id, size)``, then the hop's
    ``edge_index`` (``stack([col, row])``), edge ids and size.  Returns
    ``(out, n_edges)``, ``n_edges`` summed over the hops (every block's
    edges, as for spla's blocks).
    """
    import torch
    n_id = torch.from_numpy(np.ascontiguousarray(seeds, dtype=np.int64))
    batch_size = n_id.numel()
    adjs = []
    n_edges = 0
    for size in fanouts:
        adj_t, n_id = g.adj_t.sample_adj(n_id, size, replace=False)
        e_id = adj_t.storage.value()
        sizes = adj_t.sparse_sizes()[::-1]
        row, col, _ = adj_t.coo()
        edge_index = torch.stack([col, row], dim=0)
        adjs.append((edge_index, e_id, sizes))
        n_edges += int(edge_index.size(1))
    return (batch_size, n_id, adjs[::-1]), n_edges


def pyglib_neighbor_sample(g, seeds, fanouts):
    """One minibatch through ``torch.ops.pyg.neighbor_sample``, as
    ``NeighborLoader`` calls it when pyg-lib is installed (its default):
    CSC input (A's CSR arrays, as for torch-sparse), ``replace=False``,
    ``directed=True``, not disjoint, edge ids returned.  Returns ``(out,
    n_edges)`` like ``neighbor_sample``.
    """
    import torch
    seeds_t = torch.from_numpy(np.ascontiguousarray(seeds, dtype=np.int64))
    out = torch.ops.pyg.neighbor_sample(g.colptr, g.row, seeds_t, list(fanouts), None, None,
                                        None, None, True, False, True, False, "uniform", True)
    return out, int(out[0].numel())


PEER_FUNCS = {"neighbor_sample": neighbor_sample, "sample_adj": sample_adj,
              "pyglib": pyglib_neighbor_sample}

# Set in the parent before the pool forks; workers inherit it.
_WORKER_GRAPH = {}


def _worker_init(torch_seed):
    import torch
    torch.set_num_threads(1)  # as DataLoader workers run
    torch.manual_seed(torch_seed + os.getpid())


def _worker_task(args):
    method, batches, fanouts = args
    g = _WORKER_GRAPH["g"]
    fn = PEER_FUNCS[method]
    outs, edges = [], 0
    for b in batches:
        out, e = fn(g, b, fanouts)
        outs.append(out)
        edges += e
    return outs, edges


class WorkerPool:
    """``n`` forked worker processes sharing the parent's ``TorchGraph``.

    ``run(method, batches, fanouts)`` gives each worker a contiguous share of
    the minibatches (half each for two workers) and returns
    ``(outputs, n_edges)`` once every result is back in the parent (the
    tensors come back through torch's shared-memory pickling, as
    DataLoader's do).
    """

    def __init__(self, g, n, torch_seed=0):
        import multiprocessing
        import torch.multiprocessing  # noqa: F401  (registers tensor pickling via shm)
        _WORKER_GRAPH["g"] = g
        self.n = n
        self.pool = multiprocessing.get_context("fork").Pool(
            n, initializer=_worker_init, initargs=(torch_seed,))

    def run(self, method, batches, fanouts):
        parts = np.array_split(np.arange(len(batches)), self.n)
        tasks = [(method, [batches[i] for i in p], tuple(fanouts)) for p in parts if p.size]
        outs, edges = [], 0
        for o, e in self.pool.map(_worker_task, tasks, chunksize=1):
            outs.extend(o)
            edges += e
        return outs, edges

    def close(self):
        self.pool.close()
        self.pool.join()
        _WORKER_GRAPH.clear()


# ---------------------------------------------------------------------------
# scipy, one minibatch at a time


def scipy_graphsage(A, seeds, fanouts, rng):
    """One minibatch of GraphSAGE in scipy: blocks, input layer first.

    ``A`` is a ``scipy.sparse.csr_matrix`` (row v = neighbours of v).  Each
    block is ``(adj csr n_dst x n_src, dst, src)`` with ``src`` starting with
    ``dst``, like spla's blocks (every hop samples the whole frontier).
    Returns ``(blocks, n_edges)``.
    """
    import scipy.sparse as sp
    frontier = np.asarray(seeds, dtype=np.int64)
    blocks = []
    n_edges = 0
    for f in fanouts:
        P = A[frontier]                               # Q @ A, materialised
        deg = np.diff(P.indptr)
        rows = np.repeat(np.arange(frontier.size), deg)
        order = np.argsort(rows + rng.random(P.nnz))  # rows stay grouped, random order inside
        rank = np.arange(P.nnz) - np.repeat(P.indptr[:-1], deg)
        take = np.sort(order[rank < f])               # first min(f, deg) of each row
        cols = P.indices[take].astype(np.int64)
        r = rows[take]
        both = np.concatenate([frontier, cols])
        uniq, first_at, inv = np.unique(both, return_index=True, return_inverse=True)
        by_first = np.argsort(first_at, kind="stable")
        local_of = np.empty_like(by_first)
        local_of[by_first] = np.arange(by_first.size)
        src = uniq[by_first]                          # dst first, then new vertices
        local = local_of[inv[frontier.size:]]
        ptr = np.zeros(frontier.size + 1, np.int64)
        np.cumsum(np.bincount(r, minlength=frontier.size), out=ptr[1:])
        adj = sp.csr_matrix((np.ones(local.size, np.float32), local, ptr),
                            shape=(frontier.size, src.size))
        adj.sort_indices()
        blocks.append((adj, frontier, src))
        n_edges += adj.nnz
        frontier = src
    return blocks[::-1], n_edges
