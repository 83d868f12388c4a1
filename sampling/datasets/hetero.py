"""``HeteroGraph``: typed vertices and relations, one sparse matrix per relation.

A heterogeneous graph has vertex types (``"paper"``, ``"author"``, ...),
each with its own count, and relations ``(src_type, name, dst_type)``.
Relation ``r`` is a ``spla.Matrix`` of shape ``(n[dst_type], n[src_type])``
in the samplers' orientation: row ``v`` holds the vertices whose features
flow into ``v`` along ``r`` (PyG's ``edge_index[0]`` are the columns,
``edge_index[1]`` the rows).  Features, labels and splits are dicts by
vertex type; a type may have none of them.
"""

import numpy as np

from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.dist import DistMatrix
from spla.matrix import Matrix

from sampling.datasets.validation import as_features, check_labels, host_array


def _name(func, arg, t):
    if not isinstance(t, str) or not t:
        fail(DTypeError, func, arg, "a non-empty str", describe(t))
    return t


class HeteroGraph:
    """A graph with typed vertices and typed relations.

    Parameters
    ----------
    num_nodes : dict of str -> int
        Vertex count of every type.
    relations : dict of (str, str, str) -> spla.Matrix or spla.DistMatrix
        ``(src_type, name, dst_type)`` -> matrix of shape
        ``(num_nodes[dst_type], num_nodes[src_type])``.  Distributed
        relations (``spla.distribute`` of each, rows by destination) must
        share one communicator; ``to_undirected`` and ``to_homogeneous``
        need local matrices (distribute afterwards).
    x : dict of str -> array, optional
        Features per type (``(n_t, f_t)``, widths may differ; types without
        features are left out: see ``sampling.Embedding``).
    y : dict of str -> int array, optional
        Labels per type (-1 for unknown).
    train_idx, val_idx, test_idx : dict of str -> int array, optional
        Split vertex ids per type.
    num_classes : int, optional
        Default: one more than the largest label.
    name : str, default "hetero"

    Raises
    ------
    InvalidValue
        A relation of an unknown type, a negative count, no relation.
    DimensionMismatch
        A relation matrix whose shape disagrees with the type counts,
        features or labels of the wrong length.
    DTypeError
        A relation that is not a ``spla.Matrix`` / ``DistMatrix``, a malformed key.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling import HeteroGraph
    >>> G = HeteroGraph.from_edge_index(
    ...     {"paper": 3, "author": 2},
    ...     {("author", "writes", "paper"): np.array([[0, 1, 1], [0, 0, 2]])})
    >>> G.edge_types, G.relation(("author", "writes", "paper")).shape
    ((('author', 'writes', 'paper'),), (3, 2))
    >>> G.to_undirected().edge_types[1]
    ('paper', 'rev_writes', 'author')
    """

    def __init__(self, num_nodes, relations, *, x=None, y=None, train_idx=None, val_idx=None,
                 test_idx=None, num_classes=None, name="hetero"):
        func = "HeteroGraph"
        if not isinstance(num_nodes, dict) or not num_nodes:
            fail(DTypeError, func, "num_nodes", "a non-empty dict type -> count",
                 describe(num_nodes))
        self.num_nodes = {}
        for t, n in num_nodes.items():
            _name(func, "num_nodes", t)
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
                fail(InvalidValue, func, f"num_nodes[{t!r}]", "a count >= 0", n)
            self.num_nodes[t] = int(n)
        if not isinstance(relations, dict) or not relations:
            fail(InvalidValue, func, "relations", "a non-empty dict relation -> matrix",
                 describe(relations))
        self.relations = {}
        for key, A in relations.items():
            key = self._check_key(func, key)
            if not isinstance(A, (Matrix, DistMatrix)):
                fail(DTypeError, func, f"relations[{key}]", "a spla.Matrix or DistMatrix",
                     describe(A))
            want = (self.num_nodes[key[2]], self.num_nodes[key[0]])
            if tuple(A.shape) != want:
                fail(DimensionMismatch, func, f"relations[{key}]",
                     f"shape {want} (n[{key[2]!r}] x n[{key[0]!r}])", f"shape {A.shape}")
            self.relations[key] = A
        self.x = {t: as_features(func, f"x[{t!r}]", v, self.num_nodes[self._type(func, "x", t)])
                  for t, v in (x or {}).items()}
        self.y = {t: check_labels(func, f"y[{t!r}]", v, self.num_nodes[self._type(func, "y", t)])
                  for t, v in (y or {}).items()}
        labels = [int(v.max()) for v in self.y.values() if v.size]
        self.num_classes = (int(num_classes) if num_classes is not None
                            else (max(labels) + 1 if labels else 0))
        self.splits = {}
        for part, ids in (("train", train_idx), ("val", val_idx), ("test", test_idx)):
            self.splits[part] = {
                t: as_index_array(func, f"{part}_idx[{t!r}]", host_array(func, part, v),
                                  self.num_nodes[self._type(func, f"{part}_idx", t)])
                for t, v in (ids or {}).items()}
        self.name = str(name)

    def _type(self, func, arg, t):
        if t not in self.num_nodes:
            fail(InvalidValue, func, arg, f"a vertex type among {sorted(self.num_nodes)}", t)
        return t

    def _check_key(self, func, key):
        if not (isinstance(key, tuple) and len(key) == 3
                and all(isinstance(p, str) for p in key)):
            fail(DTypeError, func, "relations", "keys (src_type, name, dst_type) of str",
                 describe(key))
        self._type(func, f"relations[{key}]", key[0])
        self._type(func, f"relations[{key}]", key[2])
        return key

    # ---- views -------------------------------------------------------------
    @property
    def node_types(self):
        """Vertex types, in the order given."""
        return tuple(self.num_nodes)

    @property
    def edge_types(self):
        """Relations ``(src_type, name, dst_type)``, in the order given (it keys the draws)."""
        return tuple(self.relations)

    def relation(self, key):
        """The matrix of relation ``key``: a full triple, or a name no other relation has.

        Raises ``InvalidValue`` for an unknown or ambiguous relation.
        """
        return self.relations[self.edge_type(key, "HeteroGraph.relation")]

    def edge_type(self, key, func="HeteroGraph.edge_type"):
        """The full ``(src_type, name, dst_type)`` of ``key`` (a triple or a unique name)."""
        if isinstance(key, tuple) and key in self.relations:
            return key
        if isinstance(key, str):
            hits = [k for k in self.relations if k[1] == key]
            if len(hits) == 1:
                return hits[0]
        fail(InvalidValue, func, "relation",
             f"one of {list(self.relations)} (or a name only one of them has)", key)

    def split(self, part, node_type):
        """The ``part`` ("train", "val", "test") vertex ids of ``node_type`` (empty if none)."""
        return self.splits[part].get(node_type, np.zeros(0, np.int64))

    def __repr__(self):
        counts = ", ".join(f"{t}={n}" for t, n in self.num_nodes.items())
        return f"HeteroGraph({self.name!r}: {counts}; {len(self.relations)} relations)"

    # ---- constructors and transforms ----------------------------------------
    @classmethod
    def from_edge_index(cls, num_nodes, edge_index, **kwargs):
        """A graph from per-relation ``(2, E)`` edge indices (PyG's reading: row 0 sends).

        Repeated edges are kept once.  ``kwargs`` go to ``HeteroGraph``.

        Examples
        --------
        >>> import numpy as np
        >>> from sampling import HeteroGraph
        >>> G = HeteroGraph.from_edge_index({"a": 2}, {("a", "to", "a"): [[0, 0], [1, 1]]})
        >>> G.relation("to").to_dense()
        array([[0., 0.],
               [1., 0.]])
        """
        func = "HeteroGraph.from_edge_index"
        if not isinstance(edge_index, dict):
            fail(DTypeError, func, "edge_index", "a dict relation -> (2, E) array",
                 describe(edge_index))
        rel = {}
        for key, ei in edge_index.items():
            ei = np.asarray(host_array(func, f"edge_index[{key}]", ei))
            if ei.ndim != 2 or ei.shape[0] != 2 or (ei.size and ei.dtype.kind not in "iu"):
                fail(DimensionMismatch, func, f"edge_index[{key}]", "a (2, E) integer array",
                     describe(ei))
            if not (isinstance(key, tuple) and len(key) == 3):
                fail(DTypeError, func, "edge_index", "keys (src_type, name, dst_type)",
                     describe(key))
            for t in (key[0], key[2]):
                if t not in num_nodes:
                    fail(InvalidValue, func, f"edge_index[{key}]",
                         f"a vertex type among {sorted(num_nodes)}", t)
            shape = (int(num_nodes[key[2]]), int(num_nodes[key[0]]))
            src = as_index_array(func, f"edge_index[{key}][0]", ei[0].astype(np.int64), shape[1])
            dst = as_index_array(func, f"edge_index[{key}][1]", ei[1].astype(np.int64), shape[0])
            rel[key] = Matrix.from_coo(dst, src, None, shape=shape).structure()
        return cls(num_nodes, rel, **kwargs)

    def _with(self, relations):
        G = object.__new__(HeteroGraph)
        G.__dict__.update(self.__dict__)
        G.relations = relations
        return G

    def to_undirected(self):
        """Every relation in both directions, as PyG's ``ToUndirected``.

        A relation between two types gets a reverse ``(dst, "rev_" + name,
        src)`` (unless one of that key exists); a relation within one type
        is symmetrised.  Values are dropped (the result is structural).

        Examples
        --------
        >>> import numpy as np
        >>> from sampling import HeteroGraph
        >>> G = HeteroGraph.from_edge_index({"a": 2}, {("a", "to", "a"): [[0], [1]]})
        >>> G.to_undirected().relation("to").to_dense()
        array([[0., 1.],
               [1., 0.]])
        """
        from spla.structure import transpose
        from spla.elementwise import ewise_add
        out = {}
        for (s, name, d), A in self.relations.items():
            A = A.structure()
            out[(s, name, d)] = ewise_add(A, transpose(A)).structure() if s == d else A
        for (s, name, d), A in self.relations.items():
            rev = (d, f"rev_{name}", s)
            if s != d and rev not in out:
                out[rev] = transpose(A.structure())
        return self._with(out)

    def to_homogeneous(self):
        """One type and one relation: ``(A, offsets)``, types stacked in ``node_types`` order.

        Vertex ``v`` of type ``t`` becomes ``offsets[t] + v``; ``A`` is the
        union of all relations (structural).  A relation-blind view of the
        graph, for baselines.

        Examples
        --------
        >>> import numpy as np
        >>> from sampling import HeteroGraph
        >>> G = HeteroGraph.from_edge_index({"a": 1, "b": 2}, {("a", "r", "b"): [[0], [1]]})
        >>> A, off = G.to_homogeneous()
        >>> A.shape, off, A.to_dense()[2].tolist()
        ((3, 3), {'a': 0, 'b': 1}, [1.0, 0.0, 0.0])
        """
        off, total = {}, 0
        for t, n in self.num_nodes.items():
            off[t] = total
            total += n
        rows, cols = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for (s, _, d), A in self.relations.items():
            ptr = np.asarray(A.indptr)
            rows.append(np.repeat(np.arange(A.nrows, dtype=np.int64), np.diff(ptr)) + off[d])
            cols.append(np.asarray(A.indices, np.int64) + off[s])
        M = Matrix.from_coo(np.concatenate(rows), np.concatenate(cols), None,
                            shape=(total, total)).structure()
        return M, off

    def partition(self, parts, *, seed=0, imbalance=1.03, method="metis"):
        """A vertex partition that balances every type and the training vertices.

        Partitions the homogeneous view (``to_homogeneous``: every relation,
        symmetrised) with one METIS balance constraint per vertex type (its
        indicator) plus one for the training vertices (of every type with
        a ``train`` split), so that every part holds about ``1 / parts`` of
        each type and of the training vertices while few edges are cut.

        Parameters
        ----------
        parts : int
            ``1 <= parts <=`` the number of vertices.
        seed : int, default 0
            METIS's seed (``method="metis"``) or the hash's
            (``method="hash"``).
        imbalance : float, default 1.03
            METIS's tolerance on every constraint (``spla.partition.metis``).
        method : {"metis", "hash"}, default "metis"
            ``"hash"``: ``spla.partition.hashed``, the locality-blind baseline.

        Returns
        -------
        HeteroPartition

        Raises
        ------
        InvalidValue
            Bad ``parts``, ``seed``, ``imbalance`` or ``method``.
        DTypeError
            Distributed relations (partition the local graph, then distribute).
        MissingDependency
            ``method="metis"`` without ``pymetis``.

        Examples
        --------
        >>> from sampling.datasets.mag import mag_dataset
        >>> P = mag_dataset(8).partition(2, seed=1)
        >>> P.part["paper"].shape, sorted(P.imbalance)
        ((256,), ['author', 'field_of_study', 'institution', 'paper', 'train'])
        >>> max(P.imbalance.values()) <= 1.1
        True
        """
        func = "HeteroGraph.partition"
        from spla import partition as spart

        for key, A in self.relations.items():
            if not isinstance(A, Matrix):
                fail(DTypeError, func, f"relations[{key}]",
                     "a local spla.Matrix (partition first, then distribute)",
                     f"a {type(A).__name__}")
        A, off = self.to_homogeneous()
        parts = as_int(func, "parts", parts, minimum=1)
        if parts > A.shape[0]:
            fail(InvalidValue, func, "parts", f"an integer in [1, {A.shape[0]}] (the vertices)",
                 parts)
        W = self._balance_columns(off, A.shape[0])
        if method == "metis":
            P = spart.metis(A, parts, seed=seed, imbalance=imbalance, vertex_weights=W)
        elif method == "hash":
            P = spart.hashed(A, parts, seed=seed)
        else:
            fail(InvalidValue, func, "method", "'metis' or 'hash'", repr(method))
        return HeteroPartition(P, off, dict(self.num_nodes), W)

    def distribute(self, comm=None, *, layout="1d", replication=1, replicate_graph=False,
                   partition=None):
        """Collective: this graph with every relation a ``spla.DistMatrix``, rows by destination.

        Relation ``(s, name, d)`` is distributed with ``spla.distribute``
        (the same ``comm``, ``layout``, ``replication`` and
        ``replicate_graph`` for every relation): its rows are the vertices
        of ``d``, so a rank holds the rows of every relation for the
        destination vertices it holds.  Features, labels and splits are
        kept as they are (``NodeLoader`` keeps only each rank's block of
        the features: ``HeteroFeatureStore``).

        Parameters
        ----------
        comm : MPI communicator, optional
            Default COMM_WORLD.
        layout, replication, replicate_graph
            As for ``spla.distribute``.
        partition : HeteroPartition, optional
            Place the rows of every relation by its destination type's
            parts (``partition.part[d]``, ``p / c`` parts): process row
            ``i`` holds the vertices of part ``i`` of every type.  Ids stay
            the graph's, so sampling gives the same minibatches.

        Returns
        -------
        HeteroGraph

        Examples
        --------
        >>> from sampling.datasets.mag import mag_dataset
        >>> D = mag_dataset(4).distribute()                  # on one rank
        >>> type(D.relation("writes")).__name__, D.relation("writes").shape
        ('DistMatrix', (16, 16))
        """
        import spla
        from spla.partition import Partition
        func = "HeteroGraph.distribute"
        if partition is not None and not isinstance(partition, HeteroPartition):
            fail(DTypeError, func, "partition", "a HeteroPartition (HeteroGraph.partition) or "
                 "None", describe(partition))
        by_type = {} if partition is None else {
            t: Partition(partition.part[t], partition.parts, method="hetero")
            for t in self.num_nodes}
        rel = {key: spla.distribute(A, comm, layout=layout, replication=replication,
                                    replicate_graph=replicate_graph,
                                    partition=by_type.get(key[2]))
               for key, A in self.relations.items()}
        return self._with(rel)

    def _balance_columns(self, off, total):
        """One indicator column per vertex type, then the training vertices."""
        W = np.zeros((total, len(off) + 1), np.int64)
        for j, (t, o) in enumerate(off.items()):
            W[o:o + self.num_nodes[t], j] = 1
            W[o + self.splits["train"].get(t, np.zeros(0, np.int64)), -1] = 1
        return W


class HeteroPartition:
    """What ``HeteroGraph.partition`` returns: the part of every vertex, by type.

    Attributes
    ----------
    parts : int
    part : dict of str -> numpy.ndarray of int64
        The part of every vertex of each type (``part[t][v]``).
    partition : spla.partition.Partition
        The same partition of the homogeneous view (type ``t``'s vertex
        ``v`` is ``offsets[t] + v``).
    offsets : dict of str -> int
    counts : dict of str -> numpy.ndarray of int64, shape (parts,)
        Vertices of each type per part, and ``'train'``: training vertices.
    imbalance : dict of str -> float
        ``max / mean`` of each of ``counts`` (1.0 is perfect; a type with
        no vertex, or no training vertex, counts as 1.0).

    Examples
    --------
    >>> from sampling import HeteroGraph
    >>> G = HeteroGraph.from_edge_index({"a": 2, "b": 2}, {("a", "r", "b"): [[0, 1], [0, 1]]})
    >>> P = G.partition(2)
    >>> P.counts["a"].tolist(), P.imbalance["b"], P.part["a"].tolist() == P.part["b"].tolist()
    ([1, 1], 1.0, True)
    """

    def __init__(self, partition, offsets, num_nodes, weights):
        self.partition = partition
        self.parts = partition.parts
        self.offsets = dict(offsets)
        self.part = {t: partition.part[o:o + num_nodes[t]] for t, o in self.offsets.items()}
        names = list(self.offsets) + ["train"]
        self.counts = {name: np.bincount(partition.part, weights=weights[:, j],
                                         minlength=self.parts).astype(np.int64)
                       for j, name in enumerate(names)}
        self.imbalance = {name: (float(c.max() / c.mean()) if c.sum() else 1.0)
                          for name, c in self.counts.items()}

    def __repr__(self):
        worst = max(self.imbalance.values())
        return f"HeteroPartition({self.parts} parts, worst max/mean {worst:.3f})"


def from_pyg_hetero(data, *, name="pyg", num_classes=None):
    """A ``HeteroGraph`` from a ``torch_geometric.data.HeteroData`` (read by attribute).

    Node stores give ``num_nodes`` (or ``x``'s rows), ``x``, ``y``, and the
    splits as ``train_mask``/``val_mask``/``test_mask``; edge stores give
    ``edge_index``.

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.data import HeteroData
    >>> from sampling.datasets import from_pyg
    >>> d = HeteroData()
    >>> d["paper"].x = torch.ones(3, 2); d["paper"].y = torch.tensor([0, 1, 0])
    >>> d["author"].num_nodes = 2
    >>> d["author", "writes", "paper"].edge_index = torch.tensor([[0, 1], [2, 2]])
    >>> G = from_pyg(d)
    >>> G.num_nodes, G.relation("writes").row_degrees().tolist()
    ({'paper': 3, 'author': 2}, [0, 0, 2])
    """
    func = "from_pyg"
    counts, x, y, splits = {}, {}, {}, {"train": {}, "val": {}, "test": {}}
    for t in data.node_types:
        store = data[t]
        n = store.num_nodes
        if n is None:
            fail(InvalidValue, func, f"data[{t!r}]", "a node store with num_nodes or x",
                 "neither")
        counts[t] = int(n)
        if getattr(store, "x", None) is not None:
            x[t] = store.x
        if getattr(store, "y", None) is not None:
            y[t] = host_array(func, f"data[{t!r}].y", store.y).reshape(-1)
        for part in splits:
            mask = getattr(store, f"{part}_mask", None)
            if mask is not None:
                splits[part][t] = np.flatnonzero(host_array(func, f"{part}_mask", mask))
    edges = {tuple(k): data[k].edge_index for k in data.edge_types}
    return HeteroGraph.from_edge_index(counts, edges, x=x, y=y, train_idx=splits["train"],
                                       val_idx=splits["val"], test_idx=splits["test"],
                                       num_classes=num_classes, name=name)


__all__ = ["HeteroGraph", "HeteroPartition", "from_pyg_hetero"]
