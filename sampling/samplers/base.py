"""The sampler base class and what every sampler shares.

A sampler is built once per graph and called once per bulk:
``sampler.sample(batches, seed=..., epoch=...)`` returns one ``MiniBatch``
per minibatch.  All minibatches of a bulk are stacked and sampled together;
the random draws are keyed by (seed, epoch, layer, minibatch id, vertex), so
a minibatch comes out identical whether it is sampled alone or in any bulk.

Layer-size lists (fanouts, layer sizes) are given **output layer first**,
in hop order, as PyG's ``num_neighbors``: ``fanouts[0]`` is drawn for the
seeds.  ``MiniBatch.blocks`` are returned input layer first.
"""

import abc
import copy
import os
import sys
import threading
import warnings
import weakref
from dataclasses import dataclass

import numpy as np

from spla import Pending, backend, is_symmetric_pattern
from spla import comm as C
from spla.checks import as_int, as_u64, describe, fail
from spla.exceptions import (DimensionMismatch, DTypeError, IndexOutOfRange,
                             InvalidValue)
from spla.matrix import Matrix

from sampling.samplers.batches import Batches, stack_batches
from sampling.samplers.minibatch import Block, MiniBatch

_LAYER_BITS = 8  # up to 255 layers per sampler


def stream_of(epoch, layer):
    """The ``sample_rows`` stream of one (epoch, layer): distinct for distinct pairs.

    A draw of ``spla.sample_rows`` is a pure function of ``(seed, stream,
    row id, pick number)``.  Samplers derive ``stream`` from the epoch and
    the layer (or the step of a walk) with this function, and put the
    minibatch and the vertex in the row id, so every draw of an epoch has a
    key of its own and a minibatch is the same sampled alone or in a bulk
    (``docs/custom_sampler.rst``, "Keying the draws").

    Parameters
    ----------
    epoch : int
        ``0 <= epoch < 2**56``.
    layer : int
        The layer, hop or walk step, ``0 <= layer < 256``: a sampler draws
        at most 256 times from one row id per epoch (the built-in samplers
        take at most 255 layers).  A sampler needing more must put the
        extra draws into the row ids.

    Returns
    -------
    int
        ``epoch * 256 + layer``, in ``[0, 2**64)``.

    Raises
    ------
    InvalidValue
        ``epoch`` or ``layer`` out of range or not an integer (bools
        refused).

    Examples
    --------
    >>> from sampling import stream_of
    >>> stream_of(0, 0), stream_of(0, 1), stream_of(1, 0)
    (0, 1, 256)
    >>> stream_of(3, 256)
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: stream_of: argument 'layer' must be an integer in [0, 256); got 256
    """
    func = "stream_of"
    epoch = as_int(func, "epoch", epoch, minimum=0)
    layer = as_int(func, "layer", layer, minimum=0)
    if epoch >= 1 << (64 - _LAYER_BITS):
        fail(InvalidValue, func, "epoch", f"an integer in [0, 2**{64 - _LAYER_BITS})", epoch)
    if layer >= 1 << _LAYER_BITS:
        fail(InvalidValue, func, "layer", f"an integer in [0, {1 << _LAYER_BITS})", layer)
    return (epoch << _LAYER_BITS) | layer


#: Largest per-layer size (fanout, layer size): the kernels count picks in int64,
#: and a frontier times a size must stay representable there.
MAX_LAYER_SIZE = 2 ** 31 - 1

#: Bytes the sampling kernels hold per drawn pick (position and column index),
#: for the allocation bound of sampling with replacement.
BYTES_PER_DRAW = 16


#: A GraphSAGE fanout meaning "every neighbour" (PyG's ``num_neighbors=-1``,
#: DGL's fanout -1).  Layer-wise samplers refuse it.
ALL_NEIGHBORS = -1


def layer_sizes_tuple(func, arg, sizes, *, allow_all=False):
    """Validate a list of per-layer sizes (each in ``[1, MAX_LAYER_SIZE]``, at least one layer).

    Parameters
    ----------
    func, arg : str
        Named in the error message.
    sizes : iterable of int
    allow_all : bool, default False
        Also accept ``ALL_NEIGHBORS`` (-1): every neighbour (node-wise
        fanouts).  Without it, -1 is refused with a message saying that it
        is a node-wise fanout only: a layer-wise sampler draws a fixed
        number of vertices per layer.

    Returns
    -------
    tuple of int
        The sizes, -1 kept as is.

    Raises
    ------
    InvalidValue
        Not a non-empty list, a non-integer, 0, a negative size other than
        -1 (or -1 without ``allow_all``), a size above ``MAX_LAYER_SIZE``,
        255 layers or more.

    Examples
    --------
    >>> layer_sizes_tuple("GraphSAGE", "fanouts", [10, 5])
    (10, 5)
    >>> layer_sizes_tuple("GraphSAGE", "fanouts", [-1, 5], allow_all=True)
    (-1, 5)
    """
    each = ("a positive integer or -1 (all neighbours)" if allow_all
            else "a positive integer")
    whole = ("a non-empty list of positive integers or -1 (all neighbours)" if allow_all
             else "a non-empty list of positive integers")
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        fail(InvalidValue, func, arg, whole, describe(sizes))
    sizes = tuple(sizes)
    if not sizes:
        fail(InvalidValue, func, arg, whole, "an empty list")
    if len(sizes) >= (1 << _LAYER_BITS):
        fail(InvalidValue, func, arg, f"fewer than {1 << _LAYER_BITS} layers", len(sizes))
    out = []
    for i, s in enumerate(sizes):
        s = as_int(func, f"{arg}[{i}]", s)
        if s == ALL_NEIGHBORS and not allow_all:
            fail(InvalidValue, func, f"{arg}[{i}]",
                 "a positive integer (-1, all neighbours, is a node-wise fanout only: a "
                 "layer-wise sampler draws a fixed number of vertices per layer)", s)
        if s < 1 and s != ALL_NEIGHBORS:
            fail(InvalidValue, func, f"{arg}[{i}]", each, s)
        if s > MAX_LAYER_SIZE:
            fail(InvalidValue, func, f"{arg}[{i}]",
                 f"-1 (all neighbours) or an integer in [1, {MAX_LAYER_SIZE}]" if allow_all
                 else f"an integer in [1, {MAX_LAYER_SIZE}]", s)
        out.append(s)
    return tuple(out)


def memory_limit():
    """Bytes of physical memory of this machine (None where the OS does not say).

    The bound that argument checks compare an allocation with: a request
    larger than the machine can only fail later, slowly (swapping or an
    out-of-memory kill), so it is refused up front with an error naming the
    argument.
    """
    try:
        import os
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not Linux
        return None


def graph_comm(A):
    """The communicator of a distributed graph (``DistMatrix.comm``), None for a local one.

    The checks of a sampler built on a DistMatrix run collectively over it,
    so a bad argument on one rank raises on every rank instead of hanging
    the others.
    """
    from spla.dist import DistMatrix
    return A.comm if isinstance(A, DistMatrix) else None


@dataclass(frozen=True)
class SamplerConfig:
    """Base of the frozen, self-validating sampler configurations."""

    def __post_init__(self):
        self.validate()

    def validate(self):  # pragma: no cover - overridden
        pass


class DirectedGraphWarning(UserWarning):
    """A sampler was given a graph whose pattern is not symmetric.

    Samplers aggregate over a row's columns: the block of vertex ``v``
    holds (a sample of) row ``v`` of A, the vertices whose messages ``v``
    receives.  On an undirected graph that is every neighbour; on a directed
    one it is the in-neighbours when A was built by
    ``spla.Matrix.from_edge_index`` (PyG's convention), and the
    out-neighbours when A was built as ``from_coo(sources, targets)``.  The
    warning is given once per graph; silence it with
    ``warnings.filterwarnings("ignore", category=sampling.DirectedGraphWarning)``.
    """


# The graphs already warned about, held weakly (a graph dies with its last
# user): the one piece of module state, and the lock makes it thread safe.
_WARNED = weakref.WeakSet()
_WARNED_LOCK = threading.Lock()


def warn_if_directed(func, A):
    """Warn (``DirectedGraphWarning``, once per graph) when A's pattern is not symmetric.

    Only the pattern is compared (``spla.is_symmetric_pattern``, cached on
    the matrix, 0.2-0.4 s for 31 M entries on one core): a symmetric graph
    with unequal values ``A[u, v] != A[v, u]`` does not warn.  A
    ``DistMatrix`` is not checked (no rank holds the transpose's rows).

    Examples
    --------
    >>> import warnings, spla
    >>> A = spla.Matrix.from_coo([1], [0], shape=(2, 2))     # one edge, 0 -> 1
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_directed("MySampler", A)
    ...     warn_if_directed("MySampler", A)                   # once per graph
    >>> [w.category.__name__ for w in caught]
    ['DirectedGraphWarning']
    """
    if not isinstance(A, Matrix) or A.nrows != A.ncols:
        return
    with _WARNED_LOCK:
        if A in _WARNED:
            return
    if is_symmetric_pattern(A):
        return
    with _WARNED_LOCK:
        if A in _WARNED:
            return
        _WARNED.add(A)
    warnings.warn(
        f"{func}: the graph A is directed (its pattern is not symmetric). The sampler "
        "aggregates over row v's columns: vertex v receives messages from the u with "
        "A[v, u] stored, its in-neighbours when A was built with "
        "spla.Matrix.from_edge_index(edge_index) (PyG's source_to_target), its "
        "out-neighbours when built as Matrix.from_coo(sources, targets). If that is what "
        "you mean, silence this with warnings.filterwarnings('ignore', "
        "category=sampling.DirectedGraphWarning); for an undirected graph, symmetrise A "
        "(spla.ewise_add(A, spla.transpose(A))).",
        DirectedGraphWarning, stacklevel=_caller_level())


def _caller_level():
    """``stacklevel`` of the first frame outside the sampling package (the user's call)."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    return level


def as_graph(func, A):
    """(local matrix, DistMatrix or None) for a square spla.Matrix or DistMatrix.

    For a DistMatrix the local matrix is this rank's block of rows.  A local
    graph whose pattern is not symmetric gets a ``DirectedGraphWarning``
    (once per graph, see ``warn_if_directed``).
    """
    from spla.dist import DistMatrix
    if isinstance(A, DistMatrix):
        if A.nrows != A.ncols:
            fail(DimensionMismatch, func, "A", "a square adjacency matrix", f"shape {A.shape}")
        return A.local, A
    if not isinstance(A, Matrix):
        hint = ""
        if type(A).__module__.startswith("scipy.sparse"):
            hint = " (convert it with spla.Matrix.from_scipy(A))"
        elif type(A).__module__.startswith("cupyx.scipy.sparse"):
            hint = " (convert it with spla.Matrix.from_cupyx(A))"
        elif type(A).__module__.startswith("torch"):
            hint = " (an edge_index converts with spla.Matrix.from_edge_index(edge_index))"
        fail(DTypeError, func, "A", "a spla.Matrix or spla.DistMatrix (adjacency, rows = "
             "vertices)", describe(A) + hint)
    if A.nrows != A.ncols:
        fail(DimensionMismatch, func, "A", "a square adjacency matrix", f"shape {A.shape}")
    warn_if_directed(func, A)
    return A, None


def owned_batches(k, layout, rank, by_process_row):
    """Positions of the minibatches of a bulk that ``rank`` samples.

    Node-wise samplers spread the k minibatches over all p ranks
    (``chunk(k, p, rank)``); layer-wise ones over the p/c process rows, then
    over the c members of a row (each member extracts its own minibatches).
    """
    from spla.layout import chunk
    if layout.replicated or not by_process_row:
        s, e = chunk(k, layout.p, rank)
        return list(range(s, e))
    row, col = layout.position(rank)
    rs, re_ = chunk(k, layout.grid_rows, row)
    s, e = chunk(re_ - rs, layout.c, col)
    return list(range(rs + s, rs + e))


class Sampler(abc.ABC):
    """Base class of bulk samplers.

    Subclasses implement ``_sample_stacked(batches, seed, epoch)`` and
    return, per layer from the output layer inward, a tuple
    ``(adj, dst, dst_ptr, src, src_ptr)`` of stacked block-diagonal results;
    ``sample`` validates the input and splits them into ``MiniBatch``
    objects.
    """

    #: the graph (spla.Matrix; this rank's rows when distributed)
    A: Matrix
    #: the distributed graph, or None
    D = None
    #: the graph as given to the constructor, when its entries sit elsewhere than
    #: in ``A`` / ``D`` (a sampler that samples a transformed copy sets it);
    #: ``MiniBatch.edge_ids`` look sampled edges up in it
    graph = None
    #: layer-wise samplers assign minibatches by process row
    _by_process_row = False

    @property
    def by_process_row(self):
        """Whether, on a 1.5D DistMatrix, a bulk's minibatches go to process rows.

        ``sampling.samplers.base.owned_batches`` takes it: layer-wise samplers
        sample a minibatch with every rank of a process row, node-wise ones
        give each rank its own.
        """
        return self._by_process_row

    @property
    def num_nodes(self):
        return self.A.ncols

    def _rows(self, M, D, vertices):
        """A matrix that holds rows ``vertices`` of the graph ``M`` (or ``D``).

        Local: ``M`` itself.  Distributed: a collective sparsity-aware fetch
        (no communication when the graph is replicated).
        """
        if D is None:
            return M
        return D.rows_view(backend.to_host(vertices))

    def dup(self):
        """Collective when distributed: a twin that samples on duplicated communicators.

        A shallow copy whose distributed matrices (every ``DistMatrix``
        attribute but ``graph``) are replaced by their ``DistMatrix.dup()``:
        it samples exactly what this sampler samples, but its collectives
        run on their own communicators, so a background thread may sample
        with it while this thread communicates (``NodeLoader(prefetch=k)``
        does so).  Local samplers have nothing to duplicate and return
        themselves.  ``graph`` stays the original, so minibatches refer to
        the user's graph.  A custom sampler that keeps distributed matrices
        elsewhere (in a list, in another object) overrides ``dup``.

        Every rank of the graph's communicator must call it.

        Returns
        -------
        Sampler

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import GraphSAGE
        >>> D = spla.distribute(spla.Matrix.from_dense(np.ones((4, 4))))   # on 1 rank
        >>> s = GraphSAGE(D, [2])
        >>> t = s.dup()
        >>> t.D.comm is s.D.comm
        False
        >>> [mb.input_nodes.tolist() for mb in t.sample([[0, 1]], seed=3)] == \\
        ...     [mb.input_nodes.tolist() for mb in s.sample([[0, 1]], seed=3)]
        True
        """
        if self.D is None:
            return self
        from spla.dist import DistMatrix
        twin = copy.copy(self)
        twins = {}
        # Sorted: every rank duplicates the same matrices in the same order.
        for name in sorted(vars(self)):
            value = vars(self)[name]
            if name == "graph" or not isinstance(value, DistMatrix):
                continue
            if id(value) not in twins:
                twins[id(value)] = value.dup()
            setattr(twin, name, twins[id(value)])
        return twin

    @property
    @abc.abstractmethod
    def num_layers(self):
        """Number of blocks per minibatch."""

    def sample(self, batches, *, seed, epoch=0, batch_ids=None, wait=True):
        """Sample k minibatches in one bulk pass.

        Parameters
        ----------
        batches : list of 1-D int arrays, or a (k, b) int array
            Seed vertices of each minibatch; distinct within a minibatch.
        seed : int
            User seed, ``0 <= seed < 2**64``.
        epoch : int, default 0
            Selects an independent random stream per epoch.
        batch_ids : sequence of int, optional
            Id of each minibatch (default ``0..k-1``).  The draws of a
            minibatch depend only on (seed, epoch, its id, its seeds): sample
            ``[batches[i]]`` with ``batch_ids=[i]`` to get exactly the
            ``i``-th minibatch of a bulk.
        wait : bool, default True
            False: return a ``spla.Pending`` whose ``wait()`` returns the
            minibatches.  Where the sampler's device work can run ahead (a
            node-wise sampler on a GPU graph: ``spla.sample_hops``' fused
            hops) it is queued and the call returns before the bulk's one
            blocking read; sample the next bulk before waiting for this one
            and the GPU samples it while the host builds this bulk's
            minibatches (``NodeLoader`` does so).  Elsewhere the minibatches
            are made by the call.  The arguments are checked by the call; a
            vertex id that the GPU finds out of range or repeated raises in
            ``wait()``, with the message the call would have raised.

        Returns
        -------
        list of MiniBatch, or spla.Pending of it (``wait=False``)

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import GraphSAGE
        >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
        >>> s = GraphSAGE(A, [2])
        >>> p = s.sample([[0, 1], [2]], seed=3, wait=False)
        >>> [mb.input_nodes.tolist() for mb in p.wait()] == \\
        ...     [mb.input_nodes.tolist() for mb in s.sample([[0, 1], [2]], seed=3)]
        True
        """
        func = f"{type(self).__name__}.sample"
        D = self.D
        comm = None if D is None else D.comm
        # Every check runs inside one collective block: a bad seed, epoch or
        # minibatch on one rank raises on every rank instead of leaving the
        # others waiting in the first row fetch.
        with C.collective_checks(comm):
            seed = as_u64(func, "seed", seed)
            epoch = as_int(func, "epoch", epoch, minimum=0)
            if epoch >= 2 ** (64 - _LAYER_BITS):
                fail(InvalidValue, func, "epoch", f"an integer below 2**{64 - _LAYER_BITS}",
                     epoch)
            xp = np if D is not None else self.A.xp
            B = stack_batches(func, batches, self.num_nodes, xp, batch_ids,
                              check_ids=not (D is None and self._hops_check_ids(xp)))
            k = B.k
            if D is not None:
                B = _own_share(B, owned_batches(B.k, D.layout, comm.Get_rank(),
                                                self._by_process_row))
            self.check_bulk(func, B)
        if comm is not None:
            # The number of minibatches steers which ones each rank samples
            # and how many steps a bulk trains; seed and epoch select the
            # draws: all must be the same on every rank.
            C.check_same(comm, func, "(len(batches), epoch, seed >> 32, seed % 2**32)",
                         [k, epoch, seed >> 32, seed & 0xFFFFFFFF])
        graph = self.graph if self.graph is not None else (D if D is not None else self.A)

        def named(step):
            try:
                return step()
            except (IndexOutOfRange, InvalidValue):
                if not B.checked:
                    # The hops found a bad id: the usual check names it and its minibatch.
                    stack_batches(func, batches, self.num_nodes, xp, batch_ids)
                raise

        layers = named(lambda: self._sample_stacked(B, seed, epoch))
        if not isinstance(layers, Pending):
            layers = Pending.ready(layers)
        out = Pending(lambda: assemble(named(layers.wait), B.ids, graph))
        if wait or layers.done:
            out.wait()  # nothing left on a device: the minibatches are made by the call
        return out.wait() if wait else out

    def _hops_check_ids(self, xp):
        """Whether this sampler's hops on ``xp``'s device check the minibatches'
        ids as they go (``Batches.checked`` is then False and the sampler
        passes its seeds to ``spla.sample_hops`` with ``check=True``); the
        default: no, they are checked before sampling."""
        return False

    def check_bulk(self, func, B):
        """Refuse a bulk whose sampling cannot be allocated (override in samplers).

        Called inside the collective checks of ``sample`` with the stacked
        minibatches this rank samples; raise through ``spla.checks.fail``
        naming the argument at fault.  The default accepts every bulk.
        """

    @abc.abstractmethod
    def _sample_stacked(self, B, seed, epoch):
        """Per layer (output layer first): (adj, dst, dst_ptr, src, src_ptr); or a
        ``spla.Pending`` of that list (``spla.sample_hops(..., wait=False)``),
        which ``sample`` waits for when its caller does."""


def _own_share(B, mine):
    """The minibatches at positions ``mine`` (consecutive) of the stacked bulk ``B``."""
    if not mine:
        return Batches(np.zeros(0, np.int64), np.zeros(1, np.int64), (), np.zeros(1, np.int64))
    ptr = B.ptr_host
    nodes = B.nodes[ptr[mine[0]]:ptr[mine[-1] + 1]]
    own = ptr[mine[0]:mine[-1] + 2] - ptr[mine[0]]
    return Batches(nodes, own, tuple(B.ids[i] for i in mine), own)


def assemble(layers, ids, graph=None):
    """Split stacked block-diagonal layers into one MiniBatch per group.

    A layer is ``(adj, dst, dst_ptr, src, src_ptr)``: ``adj`` the stacked
    block-diagonal matrix, or already the list of its diagonal blocks (as
    ``spla.sample_hops`` returns them).  ``graph`` (the graph the sampler
    was built on) is recorded on every MiniBatch for its edge ids
    (``MiniBatch.edge_ids``): a reference, no work here.
    """
    from spla import split_blocks
    per_group = [[] for _ in ids]
    cuts = {}  # a layer's sources are often the next layer's destinations: cut once

    def cut(arr, ptr):
        key = (id(arr), tuple(ptr))
        found = cuts.get(key)
        if found is None:
            found = cuts[key] = backend.views(arr, ptr[:-1], ptr[1:])
        return found

    for adj, dst, dst_ptr, src, src_ptr in reversed(layers):  # input layer first
        dp = backend.to_host(dst_ptr).tolist()
        sp = backend.to_host(src_ptr).tolist()
        blocks = adj if isinstance(adj, list) else split_blocks(adj, dp, sp, check=False)
        dsts, srcs = cut(dst, dp), cut(src, sp)
        for g in range(len(ids)):
            per_group[g].append(Block(blocks[g], dsts[g], srcs[g]))
    return [MiniBatch(bl, index=i, graph=graph) for bl, i in zip(per_group, ids)]
