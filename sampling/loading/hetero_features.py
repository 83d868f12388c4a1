"""Per-type feature stores of a ``HeteroGraph``: each rank holds its block of every type.

A heterogeneous graph's vertex types have features of different widths
(or none).  ``HeteroFeatureStore`` keeps, for every type with features,
only the rows of the vertices this rank's block owns: the rows of type
``t`` are cut into ``p / c`` blocks (``spla.layout.chunk``, the row blocks
of a relation distributed by destination, or the parts of a
``HeteroGraph.partition``) and block ``i`` is held by the ``c`` ranks of
process row ``i`` (``i = rank // c``).

A fetch asks for the rows of every type at once, with ONE exchange: a
request all-to-allv and a reply all-to-allv, whatever the number of types.
Each rank sends every rank of its process column (the ranks ``k * c +
rank % c``) a message of ``T`` int64 counts (requests per type, in the
store's fixed type order) followed by the requested storage positions of
type 0, then type 1, ...; the owner answers with the float32 rows of type
0, then type 1, ..., each type at its own width, so the requester cuts the
answer with the counts it sent.  Every distinct row travels once.  The
plan, the serving and the unpacking are separate methods
(``plan``/``serve``/``unpack``) so that they can be tested without MPI.
Bytes are counted by ``spla.comm`` under ``'features.hetero.request'`` and
``'features.hetero.reply'``.
"""

import copy
import zlib
from typing import NamedTuple

import numpy as np

from spla import backend
from spla import comm as C
from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError
from spla.layout import chunk_bounds

#: ``spla.comm`` operation name of the exchange (``.request`` / ``.reply``)
OP = "features.hetero"


class TypeRows:
    """Where the rows of one vertex type live, and the block of them held here.

    Parameters
    ----------
    X : numpy array of shape (n, f)
        The type's whole feature matrix (only this rank's block is kept,
        as float32).
    parts : int
        Row blocks (``p / c``).
    block : int
        The block held here.
    part : 1-D int array of length n, or spla.partition.Partition, optional
        The part of every vertex (a ``HeteroPartition.part[t]``), in
        ``parts`` parts; default: contiguous ``chunk`` blocks.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(10, dtype=np.float32).reshape(5, 2)
    >>> rows = TypeRows(X, 2, 1, part=[1, 0, 1, 0, 0])
    >>> rows.row_ids.tolist(), rows.local[:, 0].tolist()
    ([0, 2], [0.0, 4.0])
    """

    def __init__(self, X, parts, block, part=None):
        self.num_nodes, self.width = int(X.shape[0]), int(X.shape[1])
        self.perm = self.inverse = None
        if part is None:
            self.bounds = chunk_bounds(self.num_nodes, parts)
        else:
            from spla.partition import Partition
            P = part if isinstance(part, Partition) else Partition(part, parts)
            self.bounds, self.perm, self.inverse = P.bounds, P.perm, P.inverse
        self.start, self.stop = int(self.bounds[block]), int(self.bounds[block + 1])
        pick = slice(self.start, self.stop) if self.perm is None else \
            self.perm[self.start:self.stop]
        # A slice of a float32 C-contiguous array is kept as a view, no copy.
        self.local = np.ascontiguousarray(X[pick], np.float32)

    @property
    def row_ids(self):
        """The vertices whose rows ``local`` holds, in order (int64)."""
        if self.perm is None:
            return np.arange(self.start, self.stop, dtype=np.int64)
        return np.asarray(self.perm[self.start:self.stop], np.int64)

    def slots(self, ids):
        """Storage positions of vertex ids (the ids themselves without a partition)."""
        return ids if self.inverse is None else np.asarray(self.inverse[ids], np.int64)


class HeteroRequest(NamedTuple):
    """What one rank asks for in a fetch (``HeteroFeatureStore.plan``).

    Attributes
    ----------
    send : numpy int64 array
        Per destination rank, ``T`` counts then the storage positions.
    sendcounts : numpy int64 array of length p
    counts : numpy int64 array of shape (p, T)
        Rows of each type asked of each rank.
    undo : list of (order, inverse) per type
        How the rows that come back (grouped by owner, ascending storage
        position) map back onto the ids asked for.
    sizes : list of int
        The number of ids asked for, per type.

    Examples
    --------
    >>> import numpy as np
    >>> store = HeteroFeatureStore({"a": np.ones((3, 2), np.float32)})
    >>> req = store.plan({"a": np.array([2, 0, 2])})
    >>> req.send.tolist(), req.sendcounts.tolist()
    ([2, 0, 2], [3])
    """

    send: np.ndarray
    sendcounts: np.ndarray
    counts: np.ndarray
    undo: list
    sizes: list


class HeteroFeatureStore:
    """Per-type feature rows, each rank holding its block of every type.

    Parameters
    ----------
    features : dict of str -> array of shape (n_t, f_t)
        Every type's whole feature matrix (numpy, torch or cupy; any real
        dtype, kept as float32), the same on every rank; each rank keeps
        only its block of each.  Widths may differ (0 too).  Types without
        features are left out (they use ``sampling.Embedding``).
    comm : MPI communicator, optional
        None (or one rank): every row is held here and ``fetch`` is local.
    replication : int, default 1
        ``c``: the ranks per process row, which hold the same blocks (a
        1.5D layout's replication); it must divide the ranks.
    partition : HeteroPartition, or dict of str -> spla.partition.Partition, optional
        Place the rows by ``partition.part[t]`` in ``p / c`` parts (part
        ``i`` on process row ``i``) instead of contiguous blocks; a dict
        gives a ``Partition`` per type (types left out: contiguous
        blocks), e.g. the ``partition`` of a relation distributed with
        ``HeteroGraph.distribute(partition=)`` whose destination is the
        type.  Ids stay the graph's: ``fetch`` returns the same rows
        either way.
    agree : bool, default True
        Check with one collective message that every rank passes the same
        types, shapes, replication and partition (a mismatch would answer
        with other rows).  ``False`` sends nothing while building, for a
        caller that knows the ranks agree (``NodeLoader`` building the
        store from the graph every rank holds).

    Raises
    ------
    DTypeError
        ``features`` not a dict of str -> 2-D numeric arrays; a
        ``partition`` that is not a ``HeteroPartition``.
    DimensionMismatch
        A partition whose types or counts differ from the features'.
    LayoutError
        A ``replication`` that does not divide the ranks, a partition not
        in ``p / c`` parts, ranks that disagree (``agree=True``).

    Examples
    --------
    >>> import numpy as np
    >>> F = {"paper": np.arange(6, dtype=np.float32).reshape(3, 2),
    ...      "author": np.arange(4, dtype=np.float32).reshape(4, 1)}
    >>> store = HeteroFeatureStore(F)
    >>> out = store.fetch({"paper": np.array([2, 2]), "author": np.array([3])})
    >>> out["paper"].tolist(), out["author"].tolist()
    ([[4.0, 5.0], [4.0, 5.0]], [[3.0]])
    >>> store.widths
    {'author': 1, 'paper': 2}
    """

    def __init__(self, features, *, comm=None, replication=1, partition=None, agree=True):
        func = "HeteroFeatureStore"
        if comm is not None and comm.Get_size() == 1:
            comm = None
        self.comm = comm
        self.p = 1 if comm is None else comm.Get_size()
        self.rank = 0 if comm is None else comm.Get_rank()
        with C.collective_checks(comm if agree else None):
            arrays = _check_features(func, features)
            self.c = as_int(func, "replication", replication, minimum=1)
            if self.p % self.c:
                fail(LayoutError, func, "replication", f"a divisor of the number of ranks "
                     f"p = {self.p}", self.c)
            self.parts = self.p // self.c
            part = _check_partition(func, partition, arrays, self.parts)
            # A fixed type order (sorted names): the order of the packed messages.
            self.types = tuple(sorted(arrays))
            block = self.rank // self.c
            self.rows = {t: TypeRows(arrays[t], self.parts, block, part.get(t))
                         for t in self.types}
        self.partition = partition
        if agree and comm is not None:
            C.check_same(comm, func, "features", self._digest(),
                         expected="the same types, shapes, replication and partition on "
                                  "every rank")

    def _digest(self):
        schema = repr([(t, r.num_nodes, r.width) for t, r in self.rows.items()] + [self.c])
        parts = [r.perm.tobytes() if r.perm is not None else b"" for r in self.rows.values()]
        return [zlib.crc32(schema.encode()), zlib.crc32(b"".join(parts))]

    @property
    def replicated(self):
        """Whether every row is held here (one rank): ``fetch`` sends nothing."""
        return self.p == 1

    @property
    def widths(self):
        """``{type: f_t}``."""
        return {t: r.width for t, r in self.rows.items()}

    @property
    def num_nodes(self):
        """``{type: n_t}``."""
        return {t: r.num_nodes for t, r in self.rows.items()}

    @property
    def local(self):
        """``{type: the rows held here}`` (float32, C-contiguous)."""
        return {t: r.local for t, r in self.rows.items()}

    def row_ids(self, node_type):
        """The vertices of ``node_type`` whose rows are held here, in order (int64).

        Examples
        --------
        >>> import numpy as np
        >>> HeteroFeatureStore({"a": np.zeros((3, 1))}).row_ids("a").tolist()
        [0, 1, 2]
        """
        return self.rows[node_type].row_ids

    @property
    def nbytes(self):
        """Bytes of the rows held here."""
        return sum(int(r.local.nbytes) for r in self.rows.values())

    def __repr__(self):
        where = ("every row here" if self.replicated else
                 f"block {self.rank // self.c} of {self.parts} here, {self.p} ranks, c = "
                 f"{self.c}" + (", by partition" if self.partition is not None else ""))
        shapes = ", ".join(f"{t} {r.num_nodes}x{r.width}" for t, r in self.rows.items())
        return f"<HeteroFeatureStore {shapes} float32, {where}>"

    def dup(self):
        """Collective (under MPI): a twin fetching over ``comm.Dup()``, sharing the rows.

        ``NodeLoader(prefetch=k)`` fetches with the twin in its background
        thread.  Itself when every row is held here.

        Examples
        --------
        >>> import numpy as np
        >>> s = HeteroFeatureStore({"a": np.zeros((2, 1))})
        >>> s.dup() is s
        True
        """
        if self.comm is None:
            return self
        twin = copy.copy(self)
        twin.comm = self.comm.Dup()
        return twin

    def fetch(self, ids):
        """The rows of the ids of every type, with one exchange (collective under MPI).

        Parameters
        ----------
        ids : dict of str -> 1-D int array
            Vertex ids per type (any order, repeats allowed); types left
            out ask for nothing.  Under MPI every rank calls it (with its
            own ids, possibly none).

        Returns
        -------
        dict of str -> numpy float32 array of shape (len(ids[t]), f_t)
            For the types of ``ids``.

        Raises
        ------
        InvalidValue
            A type the store does not hold (on every rank).
        DTypeError, IndexOutOfRange
            Ids that are not integers in ``[0, n_t)`` (on every rank).

        Examples
        --------
        >>> import numpy as np
        >>> s = HeteroFeatureStore({"a": np.eye(3), "b": np.ones((2, 0))})
        >>> out = s.fetch({"a": [2, 0], "b": []})
        >>> out["a"].tolist(), out["b"].shape
        ([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], (0, 0))
        """
        func = "HeteroFeatureStore.fetch"
        with C.collective_checks(self.comm):
            asked = self._check_ids(func, ids)
        if self.comm is None:
            return {t: self._local_rows(t, a) for t, a in asked.items()}
        req = self.plan(asked)
        recv, recvcounts = C.alltoallv(self.comm, req.send, req.sendcounts, OP + ".request")
        reply, replycounts = self.serve(recv, recvcounts)
        got, _ = C.alltoallv(self.comm, reply, replycounts, OP + ".reply")
        out = self.unpack(req, got)
        return {t: out[t] for t in asked}

    def _local_rows(self, t, ids):
        rows = self.rows[t]
        return rows.local[rows.slots(ids) - rows.start]

    def _check_ids(self, func, ids):
        if not isinstance(ids, dict):
            fail(DTypeError, func, "ids", "a dict of vertex type -> ids", describe(ids))
        out = {}
        for t, a in ids.items():
            if t not in self.rows:
                fail(InvalidValue, func, "ids", f"types the store holds ({', '.join(self.types)})",
                     f"type {t!r}")
            a = np.asarray(backend.to_host(a))
            out[t] = as_index_array(func, f"ids[{t!r}]", a.reshape(-1), self.rows[t].num_nodes)
        return out

    def plan(self, ids):
        """The request of this rank: ids per type -> ``HeteroRequest`` (no messages).

        ``ids`` holds checked int64 ids per type (types left out: none).

        Examples
        --------
        >>> import numpy as np
        >>> s = HeteroFeatureStore({"a": np.zeros((4, 1)), "b": np.zeros((2, 3))})
        >>> s.plan({"b": np.array([1, 1, 0])}).counts.tolist()   # types a, b
        [[0, 2]]
        """
        p, T = self.p, len(self.types)
        counts = np.zeros((p, T), np.int64)
        slots, undo, sizes = [], [], []
        col = self.rank % self.c
        for j, t in enumerate(self.types):
            rows = self.rows[t]
            a = np.asarray(ids.get(t, np.zeros(0, np.int64)), np.int64)
            unique, inverse = np.unique(a, return_inverse=True)
            s = rows.slots(unique)
            order = None
            if rows.inverse is not None:
                # Storage positions ascending, hence grouped by owner block.
                order = np.argsort(s, kind="stable")
                s = s[order]
            dest = (np.searchsorted(rows.bounds, s, side="right") - 1) * self.c + col
            counts[:, j] = np.bincount(dest, minlength=p)
            slots.append(s)
            undo.append((order, inverse.reshape(-1)))
            sizes.append(int(a.size))
        offsets = np.zeros((p + 1, T), np.int64)
        np.cumsum(counts, axis=0, out=offsets[1:])
        # Only the ranks of this process column hold blocks for this rank:
        # each gets the T counts (also when they are 0), the others nothing.
        column = np.arange(p) % self.c == col
        pieces = []
        for r in np.flatnonzero(column):
            pieces.append(counts[r])
            pieces += [slots[j][offsets[r, j]:offsets[r + 1, j]] for j in range(T)]
        send = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
        return HeteroRequest(send, np.where(column, T + counts.sum(axis=1), 0), counts, undo,
                             sizes)

    def serve(self, recv, recvcounts):
        """The reply to the requests received: ``(float32 rows, counts per rank)``.

        ``recv`` holds each source rank's message (``T`` counts, then the
        storage positions per type; nothing from the ranks of other process
        columns), ``recvcounts`` their lengths.  The reply to a rank is its
        rows of type 0, then type 1, ... (flat).

        Examples
        --------
        On one rank, a request served by this rank itself:

        >>> import numpy as np
        >>> s = HeteroFeatureStore({"a": np.arange(4.0).reshape(2, 2), "b": np.ones((3, 1))})
        >>> req = s.plan({"a": np.array([1]), "b": np.array([2, 0])})
        >>> reply, counts = s.serve(req.send, req.sendcounts)
        >>> reply.tolist(), counts.tolist()            # a's row 1, then b's rows 0 and 2
        ([2.0, 3.0, 1.0, 1.0], [4])
        """
        T = len(self.types)
        displs = np.zeros(len(recvcounts) + 1, np.int64)
        np.cumsum(recvcounts, out=displs[1:])
        heads = np.zeros((len(recvcounts), T), np.int64)
        for src in np.flatnonzero(np.asarray(recvcounts) > 0):    # this process column
            heads[src] = recv[displs[src]:displs[src] + T]
        rows = []
        for j, t in enumerate(self.types):
            lo = displs[:-1] + T + heads[:, :j].sum(axis=1)
            want = np.concatenate([recv[a:a + k] for a, k in zip(lo, heads[:, j])])
            R = self.rows[t]
            rows.append(R.local[want.astype(np.int64) - R.start])
        start = np.zeros((len(recvcounts) + 1, T), np.int64)
        np.cumsum(heads, axis=0, out=start[1:])
        pieces = [rows[j][start[s, j]:start[s + 1, j]].reshape(-1)
                  for s in range(len(recvcounts)) for j in range(T)]
        widths = np.array([self.rows[t].width for t in self.types], np.int64)
        reply = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        return reply, heads @ widths

    def unpack(self, req, got):
        """The rows per type from the replies ``got`` to request ``req``.

        Returns ``{type: float32 rows in the order of the ids asked}``.

        Examples
        --------
        >>> import numpy as np
        >>> s = HeteroFeatureStore({"a": np.arange(4.0).reshape(2, 2)})
        >>> req = s.plan({"a": np.array([1, 0, 1])})
        >>> s.unpack(req, s.serve(req.send, req.sendcounts)[0])["a"].tolist()
        [[2.0, 3.0], [0.0, 1.0], [2.0, 3.0]]
        """
        T = len(self.types)
        widths = [self.rows[t].width for t in self.types]
        parts = [[] for _ in range(T)]
        off = 0
        for r in range(self.p):
            for j in range(T):
                k = int(req.counts[r, j]) * widths[j]
                parts[j].append(got[off:off + k])
                off += k
        out = {}
        for j, t in enumerate(self.types):
            rows = np.concatenate(parts[j]).reshape(int(req.counts[:, j].sum()), widths[j])
            order, inverse = req.undo[j]
            if order is not None:
                back = np.empty_like(rows)
                back[order] = rows
                rows = back
            out[t] = rows[inverse] if req.sizes[j] else np.zeros((0, widths[j]), np.float32)
        return out


def _check_features(func, features):
    if not isinstance(features, dict):
        fail(DTypeError, func, "features", "a dict of vertex type -> (n_t, f_t) array",
             describe(features))
    out = {}
    for t, X in features.items():
        if not isinstance(t, str) or not t:
            fail(DTypeError, func, "features", "vertex types that are non-empty str",
                 describe(t))
        X = np.asarray(backend.to_host(X))
        if X.ndim != 2 or X.dtype.kind not in "fiub":
            fail(DimensionMismatch if X.ndim != 2 else DTypeError, func, f"features[{t!r}]",
                 "a 2-D numeric (n_t, f_t) array", describe(X))
        out[t] = X
    return out


def _check_partition(func, partition, arrays, parts):
    """``{type: part array}`` of a ``HeteroPartition`` (``{}`` for None), checked."""
    if partition is None:
        return {}
    from spla.partition import Partition
    from sampling.datasets.hetero import HeteroPartition
    if isinstance(partition, HeteroPartition):
        by_type = partition.part
        given = {t: partition.parts for t in partition.part}
    elif isinstance(partition, dict) and all(isinstance(P, Partition)
                                             for P in partition.values()):
        by_type = {t: P for t, P in partition.items() if t in arrays}
        given = {t: P.parts for t, P in by_type.items()}
    else:
        fail(DTypeError, func, "partition", "a HeteroPartition (HeteroGraph.partition), a "
             "dict of type -> spla.partition.Partition, or None", describe(partition))
    for t, count in given.items():
        if count != parts:
            fail(LayoutError, func, "partition", f"a partition in p / c = {parts} parts",
                 f"{count} parts for type {t!r}")
    for t, X in arrays.items():
        if isinstance(partition, dict) and t not in by_type:
            continue
        got = by_type.get(t)
        n = None if got is None else (got.n if isinstance(got, Partition) else got.shape[0])
        if n != X.shape[0]:
            fail(DimensionMismatch, func, "partition", f"parts of the {X.shape[0]} vertices of "
                 f"type {t!r}", "none" if got is None else f"{n} vertices")
    return {t: by_type[t] for t in arrays if t in by_type}


__all__ = ["HeteroFeatureStore", "HeteroRequest", "TypeRows", "OP"]
