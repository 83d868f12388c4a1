"""Datasets: embedded, synthetic, OGB's, and users' own graphs.

* ``load("cora")``, ``load("citeseer")``: the pickle-free ``.npz`` files
  shipped inside the package (standard Planetoid split).
* ``load("rmat:SCALE")``: a seeded R-MAT graph with planted community
  labels and features that carry signal, so accuracy means something at
  any size.
* ``load("path/to/graph.npz")``: a user's graph in the same format
  (``load_npz`` lists the arrays; ``save_npz`` writes one).
* ``load("ogbn-arxiv", root=...)``: OGB's node property datasets through
  the optional ``ogb`` package, converted once to the npz format and read
  from it afterwards (``sampling.datasets.ogb``).
* ``from_pyg(data)``, ``from_scipy(adj, x, y, ...)``: a graph already in
  memory.

Every dataset's adjacency is in sampler orientation: row ``v`` holds the
vertices whose features flow into ``v`` (row = target, column = source).
"""

import contextlib
import os
import uuid

import numpy as np

from spla.checks import as_index_array, as_int, describe, fail
from spla.elementwise import ewise_add
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.matrix import Matrix
from spla.structure import transpose

from sampling.datasets import ogb
from sampling.datasets.dataset import Dataset
from sampling.datasets.synthetic import rmat_dataset
from sampling.datasets.validation import as_features, check_labels, host_array

DATA_DIR = os.path.join(os.path.dirname(__file__), "embedded")
#: The embedded Planetoid graphs and their number of classes.
EMBEDDED = {"cora": 7, "citeseer": 6}
_GRAPH_KEYS = ("indptr", "indices", "y", "train_idx", "val_idx", "test_idx")
_SPARSE_X_KEYS = ("x_indptr", "x_indices", "x_data")
_SPLITS = ("train_idx", "val_idx", "test_idx")
_LOAD_EXPECTED = ("'cora', 'citeseer', 'rmat:SCALE', an OGB name 'ogbn-*' or the path of "
                  "an .npz file")


def load(name_or_path, *, root=None, to_undirected=None):
    """Load a dataset by name or from an ``.npz`` file.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        * ``'cora'``, ``'citeseer'``: the embedded Planetoid graphs;
        * ``'rmat:SCALE'``: ``sampling.datasets.synthetic.rmat_dataset(SCALE)``;
        * ``'mag:SCALE'``: ``sampling.datasets.mag.mag_dataset(SCALE)``, and
          ``'ogbn-mag'``: OGB's files under ``root`` (``load_ogbn_mag``),
          both a ``HeteroGraph`` (with reverse relations unless
          ``to_undirected=False``);
        * an OGB node property name, ``'ogbn-arxiv'``, ``'ogbn-products'``
          or ``'ogbn-papers100M'`` (needs the ``ogb`` extra the first time:
          ``pip install -e ".[ogb]"``);
        * otherwise the path of an ``.npz`` file in ``load_npz``'s format.
          Names are matched first: a file called ``cora`` needs ``./cora``.
    root : str or os.PathLike, optional
        OGB only: the data folder.  OGB's files go to
        ``root/<name with underscores>/`` (downloaded by ogb when they are
        not there), and the converted dataset to ``spla.npz`` beside them.
        Default: ``$SPLA_DATA`` if set, else ``~/.cache/spla-sampling``.
    to_undirected : bool, optional
        Symmetrise the adjacency (keep an edge in both directions).
        Default: True for OGB datasets (ogbn-arxiv and ogbn-papers100M are
        directed citation graphs, and training on the symmetrised graph is
        the usual practice), False for an ``.npz`` file (its graph as
        stored).  The embedded and synthetic graphs are symmetric already.

    Returns
    -------
    Dataset

    Raises
    ------
    InvalidValue
        An unknown name, a missing file, or bad data in it (see
        ``load_npz``); an OGB name that is not node classification.
    MissingDependency
        An OGB dataset not converted yet, without the ogb package.

    Notes
    -----
    The first load of an OGB dataset runs ogb (which may download
    gigabytes; it asks on the terminal before downloads over 1 GB, so run it
    once interactively before a batch or MPI job), converts its arrays and
    writes ``root/<ogb folder>/spla.npz`` atomically (a temporary file
    renamed, under a lock when several processes load at once).  Later
    loads read that file and never import ogb.  The file holds the graph as
    OGB ships it (directed where it is); ``to_undirected`` is applied when
    loading.

    Examples
    --------
    >>> from sampling.datasets import load
    >>> load("cora")
    <Dataset cora: 2708 nodes, 10556 edges, 1433 features, 7 classes, 140/500/1000 split>
    """
    func = "load"
    if to_undirected is not None:
        to_undirected = _as_bool(func, "to_undirected", to_undirected)
    if root is not None and not isinstance(root, (str, os.PathLike)):
        fail(InvalidValue, func, "root", "a folder path (str or os.PathLike)", describe(root))
    if isinstance(name_or_path, os.PathLike):
        return _load_path(func, os.fspath(name_or_path), bool(to_undirected))
    if not isinstance(name_or_path, str):
        fail(InvalidValue, func, "name_or_path", _LOAD_EXPECTED, describe(name_or_path))
    name = name_or_path
    key = name.lower()
    if key in EMBEDDED:
        return load_npz(os.path.join(DATA_DIR, f"{key}.npz"), name=key,
                        num_classes=EMBEDDED[key])
    if key.startswith("mag:") or key == "ogbn-mag":
        from sampling.datasets.mag import load_mag
        return load_mag(func, name, root, to_undirected)
    if key.startswith("rmat:"):
        try:
            scale = int(key.split(":", 1)[1])
        except ValueError:
            fail(InvalidValue, func, "name", "'rmat:SCALE' with an integer SCALE", repr(name))
        return rmat_dataset(scale)
    if ogb.is_ogb_name(name) and not _looks_like_path(name):
        return _load_ogbn(func, name, root, True if to_undirected is None else to_undirected)
    if _looks_like_path(name) or os.path.exists(name):
        return _load_path(func, name, bool(to_undirected))
    fail(InvalidValue, func, "name_or_path", _LOAD_EXPECTED, f"{name!r} (no such file)")


def _looks_like_path(name):
    return name.endswith(".npz") or os.sep in name or (os.altsep or os.sep) in name


def _load_path(func, path, to_undirected):
    if not os.path.isfile(path):
        fail(InvalidValue, func, "name_or_path", _LOAD_EXPECTED, f"{path!r} (no such file)")
    return load_npz(path, to_undirected=to_undirected)


def _load_ogbn(func, name, root, to_undirected):
    name = ogb.canonical_name(func, name)
    path = ogb.cache_path(name, root)
    if not os.path.exists(path):
        with ogb.cache_lock(path):
            if not os.path.exists(path):  # another process may have converted it meanwhile
                d = ogb.read(name, root, func=func)
                n = d["x"].shape[0]
                ds = Dataset(d["name"], _adjacency_from_edge_index(func, "edge_index",
                                                                   d["edge_index"], n),
                             d["x"], d["y"], d["train_idx"], d["val_idx"], d["test_idx"],
                             classes=d["num_classes"])
                del d
                save_npz(ds, path)
                del ds
    return load_npz(path, name=name, to_undirected=to_undirected)


def load_npz(path, *, name=None, num_classes=None, to_undirected=False):
    """Load a dataset from a pickle-free ``.npz`` file (the embedded graphs' format).

    Parameters
    ----------
    path : str or os.PathLike
        An ``.npz`` file (``numpy.savez``) with these arrays:

        ==============  =======================  =================================
        key             dtype, shape             meaning
        ==============  =======================  =================================
        ``indptr``      int64 (n + 1,)           CSR of the adjacency, row =
        ``indices``     int32/int64 (nnz,)       target: row v lists v's in-
                                                 neighbours, sorted, no repeats
        ``x``           float (n, f)             dense features, or instead:
        ``x_indptr``    int64 (n + 1,)           CSR of sparse features
        ``x_indices``   int32/int64 (nnz_x,)     (columns sorted in each row)
        ``x_data``      float (nnz_x,)
        ``y``           int (n,)                 labels, -1 for unknown
        ``train_idx``   int (n_train,)           vertices of each split (known
        ``val_idx``     int (n_val,)             labels only)
        ``test_idx``    int (n_test,)
        ==============  =======================  =================================

        and optionally the integer scalars ``num_classes`` (labels must be
        below it; default ``max(y) + 1``) and ``num_features`` (the column
        count of sparse features; default one past the largest
        ``x_indices``).  Other arrays are ignored.  Object arrays (pickles)
        are refused.
    name : str, optional
        Default: the file name without its extension.
    num_classes : int, optional
        Overrides the file's ``num_classes``; labels must be below it.
    to_undirected : bool, default False
        Symmetrise the adjacency (``A`` or its transpose has the edge).

    Returns
    -------
    Dataset
        Dense ``x`` stays a dense float32 array; sparse becomes a
        ``spla.Matrix``.

    Raises
    ------
    InvalidValue
        A missing array, both feature encodings, NaN or infinite features,
        labels out of range, a file that is not an npz of plain arrays.
    DTypeError
        Non-integer labels (float labels are refused, not truncated).
    InvalidCSR
        Inconsistent CSR arrays.

    Examples
    --------
    >>> import os
    >>> from sampling.datasets import load_npz, DATA_DIR
    >>> load_npz(os.path.join(DATA_DIR, "cora.npz")).num_classes
    7
    """
    func = "load_npz"
    path = os.fspath(path)
    to_undirected = _as_bool(func, "to_undirected", to_undirected)
    name = name or os.path.splitext(os.path.basename(path))[0]
    arrays = _read_npz(func, path)
    missing = [k for k in _GRAPH_KEYS if k not in arrays]
    sparse_keys = [k for k in _SPARSE_X_KEYS if k in arrays]
    if "x" in arrays and sparse_keys:
        fail(InvalidValue, func, "path", "features as 'x' (dense) or as x_indptr, x_indices, "
             "x_data (sparse), not both", f"{path} with x and {', '.join(sparse_keys)}")
    if "x" not in arrays:
        missing += [k for k in _SPARSE_X_KEYS if k not in arrays]
    if missing:
        fail(InvalidValue, func, "path", f"an .npz file with the arrays {', '.join(_GRAPH_KEYS)}"
             f" and x (or {', '.join(_SPARSE_X_KEYS)})", f"{path} without {', '.join(missing)}")
    if num_classes is None and "num_classes" in arrays:
        num_classes = _scalar(func, arrays, "num_classes")
    n = arrays["indptr"].size - 1
    A = Matrix.from_csr(arrays["indptr"], arrays["indices"], None, (n, n))
    if to_undirected:
        A = symmetrize(A)
    if "x" in arrays:
        x = arrays["x"]
        if "num_features" in arrays and x.ndim == 2 and \
                _scalar(func, arrays, "num_features") != x.shape[1]:
            fail(DimensionMismatch, func, "path", f"num_features equal to x's {x.shape[1]} "
                 "columns", int(arrays["num_features"]))
    else:
        xi = arrays["x_indices"]
        ncols = (_scalar(func, arrays, "num_features") if "num_features" in arrays
                 else int(xi.max()) + 1 if xi.size else 0)
        x = Matrix.from_csr(arrays["x_indptr"], xi, arrays["x_data"],
                            (arrays["x_indptr"].size - 1, ncols))
    return Dataset(name, A, x, arrays["y"], arrays["train_idx"], arrays["val_idx"],
                   arrays["test_idx"], classes=num_classes)


def _read_npz(func, path):
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except FileNotFoundError:
        raise
    except OSError as e:
        fail(InvalidValue, func, "path", "a readable .npz file", f"{path} ({e})")
    if head != b"PK\x03\x04" and head[:1] != b"\x93":
        # numpy reads anything else as a pickle, and would say "pickled data".
        fail(InvalidValue, func, "path", "an .npz file of plain arrays (numpy.savez)",
             f"{path}, which is not one (an .npz file is a zip archive; this one starts "
             f"with {head!r})")
    try:
        f = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError) as e:
        fail(InvalidValue, func, "path", "an .npz file of plain arrays (numpy.savez)",
             f"{path} ({e})")
    if not isinstance(f, np.lib.npyio.NpzFile):
        fail(InvalidValue, func, "path", "an .npz file of named arrays (numpy.savez)",
             f"{path} holding a single {describe(f)}")
    with f:
        try:
            return {k: f[k] for k in f.files}
        except ValueError as e:  # an object array, which would need pickle
            fail(InvalidValue, func, "path", "an .npz file of plain arrays (no pickled "
                 "objects)", f"{path} ({e})")


def _scalar(func, arrays, key):
    v = arrays[key]
    if v.shape != () or v.dtype.kind not in "iu":
        fail(DTypeError, func, "path", f"an integer scalar {key!r} in the file",
             f"{v.dtype} of shape {v.shape}")
    return int(v)


def save_npz(dataset, path):
    """Write a dataset in ``load_npz``'s format, atomically.

    The arrays are written to a temporary file in the same folder, which
    is then renamed to ``path``: a reader never sees a half-written file,
    and an interrupted write leaves the old file (or none).  The file is
    written exactly at ``path`` (no ``.npz`` is added).  Dense features are
    stored as ``x``, sparse ones as ``x_indptr``, ``x_indices``, ``x_data``
    and ``num_features``.

    Parameters
    ----------
    dataset : Dataset
        Its adjacency must be structural (the format stores the pattern).
    path : str or os.PathLike

    Examples
    --------
    >>> import os, tempfile
    >>> ds = load("cora")
    >>> path = os.path.join(tempfile.mkdtemp(), "cora-copy.npz")
    >>> save_npz(ds, path)
    >>> load_npz(path).A.isequal(ds.A)
    True
    """
    func = "save_npz"
    if not isinstance(dataset, Dataset):
        fail(DTypeError, func, "dataset", "a sampling Dataset", describe(dataset))
    A = dataset.A.to("cpu")
    if A.values is not None:
        fail(InvalidValue, func, "dataset", "a structural adjacency (the npz format stores "
             "the pattern only)", f"an adjacency with {A.dtype} values")
    arrays = {"indptr": A.indptr, "indices": A.indices, "y": dataset.y}
    for split in _SPLITS:
        arrays[split] = getattr(dataset, split)
    if dataset.classes is not None:
        arrays["num_classes"] = np.int64(dataset.classes)
    x = dataset.x
    if isinstance(x, Matrix):
        x = x.to("cpu")
        arrays.update(x_indptr=x.indptr, x_indices=x.indices,
                      x_data=np.ones(x.nnz, np.float32) if x.values is None else x.values,
                      num_features=np.int64(x.ncols))
    else:
        arrays["x"] = x
    _atomic_savez(os.fspath(path), arrays)


def _atomic_savez(path, arrays):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def from_pyg(data, *, name=None, num_classes=None, to_undirected=False):
    """A Dataset from a ``torch_geometric.data.Data`` (or any object with its attributes).

    torch_geometric is not imported: the attributes are read by name.

    Parameters
    ----------
    data : torch_geometric.data.Data or HeteroData
        A ``HeteroData`` gives a ``sampling.HeteroGraph``
        (``sampling.datasets.hetero.from_pyg_hetero``; ``to_undirected``
        adds the reverse relations).  A ``Data`` needs

        * ``edge_index``: (2, E) integer tensor in PyG's default
          ``source_to_target`` flow (``edge_index[0]`` sends to
          ``edge_index[1]``); it becomes the adjacency in sampler
          orientation, row = target (``edge_index[1]``), column = source.
          Repeated edges are kept once; self loops are kept; ``edge_attr``
          and ``edge_weight`` are ignored (the adjacency is a pattern).
        * ``x``: (n, f) features, dense (kept dense, float32) or sparse
          (a ``spla.Matrix``); ``n`` is the number of vertices.
        * ``y``: (n,) or (n, 1) integer labels (-1 for unknown; float labels
          are refused, not truncated).
        * each split as a boolean mask ``train_mask``, ``val_mask``,
          ``test_mask`` of shape (n,) or as vertex ids ``train_idx``,
          ``val_idx``, ``test_idx`` (if both are there they must agree).
          A 2-D mask (several alternative splits, one per column) is refused:
          pick one first, e.g. ``data.train_mask = data.train_mask[:, 0]``.
    name : str, optional
        Default ``'pyg'``.
    num_classes : int, optional
        Default ``max(y) + 1``.  When given, labels must be below it.
    to_undirected : bool, default False
        Symmetrise the adjacency (keep every edge in both directions).

    Returns
    -------
    Dataset

    Raises
    ------
    InvalidValue
        A missing attribute (named), NaN features, labels out of range.
    DimensionMismatch, DTypeError, IndexOutOfRange
        Shapes or dtypes of the attributes; edges or split ids outside the
        graph.

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.data import Data
    >>> data = Data(edge_index=torch.tensor([[0, 0], [1, 2]]),   # 0 -> 1, 0 -> 2
    ...             x=torch.eye(3), y=torch.tensor([0, 1, 1]),
    ...             train_mask=torch.tensor([True, False, False]),
    ...             val_mask=torch.tensor([False, True, False]),
    ...             test_mask=torch.tensor([False, False, True]))
    >>> ds = from_pyg(data)
    >>> ds.A.to_dense().tolist()          # row = target: 1 and 2 receive from 0
    [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    >>> ds.train_idx.tolist(), ds.num_classes
    ([0], 2)
    """
    func = "from_pyg"
    to_undirected = _as_bool(func, "to_undirected", to_undirected)
    if hasattr(data, "node_types") and hasattr(data, "edge_types"):  # a HeteroData
        from sampling.datasets.hetero import from_pyg_hetero
        G = from_pyg_hetero(data, name=name or "pyg", num_classes=num_classes)
        return G.to_undirected() if to_undirected else G

    def attr(key):
        return getattr(data, key, None)

    for key in ("edge_index", "x", "y"):
        if attr(key) is None:
            fail(InvalidValue, func, "data", f"a graph with the attribute {key!r}",
                 f"{type(data).__name__} without it")
    x = as_features(func, "data.x", attr("x"))
    n = int(x.shape[0])
    given_n = attr("num_nodes")
    if given_n is not None and int(given_n) != n:
        fail(DimensionMismatch, func, "data.x", f"one row per vertex (num_nodes = {given_n})",
             f"{n} rows")
    y = host_array(func, "data.y", attr("y"))
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    y = check_labels(func, "data.y", y, n, num_classes)
    splits = {}
    for split in _SPLITS:
        part = split[:-len("_idx")]
        splits[split] = _pyg_split(func, attr(f"{part}_mask"), attr(split), part, n)
    A = _adjacency_from_edge_index(func, "data.edge_index", attr("edge_index"), n)
    if to_undirected:
        A = symmetrize(A)
    return Dataset(name or "pyg", A, x, y, splits["train_idx"], splits["val_idx"],
                   splits["test_idx"], classes=num_classes)


def _pyg_split(func, mask, ids, part, n):
    """The vertex ids of one split of a PyG Data, from its mask or its ids."""
    mkey, ikey = f"data.{part}_mask", f"data.{part}_idx"
    if mask is None and ids is None:
        fail(InvalidValue, func, "data", f"a split {part!r}: a '{part}_mask' or '{part}_idx' "
             "attribute", "neither")
    out = None
    if mask is not None:
        m = host_array(func, mkey, mask)
        if m.dtype != np.bool_:
            fail(DTypeError, func, mkey, f"a boolean mask (or vertex ids in '{part}_idx')",
                 describe(m))
        if m.ndim == 2:
            fail(DimensionMismatch, func, mkey,
                 f"a 1-D mask of {n} vertices (a 2-D mask holds several alternative splits: "
                 f"pick one, e.g. data.{part}_mask = data.{part}_mask[:, 0])", describe(m))
        if m.shape != (n,):
            fail(DimensionMismatch, func, mkey, f"a 1-D mask of {n} vertices", describe(m))
        out = np.flatnonzero(m).astype(np.int64)
    if ids is not None:
        i = np.asarray(as_index_array(func, ikey, host_array(func, ikey, ids), n))
        if out is not None and not np.array_equal(np.unique(i), out):
            fail(InvalidValue, func, ikey, f"the vertices of {mkey} (both are given)",
                 f"{i.size} ids that differ from the mask's {out.size} vertices")
        out = i if out is None else out
    return out


def from_scipy(adj, x, y, train_idx, val_idx, test_idx, *, name="graph", num_classes=None):
    """A Dataset from a scipy.sparse adjacency and arrays.

    Parameters
    ----------
    adj : scipy.sparse matrix or array (n, n), or spla.Matrix
        The adjacency in sampler orientation: **row = target**, column =
        source (row ``v`` lists the vertices whose features flow into
        ``v``).  For an adjacency with one row per source (``adj[u, v]`` for
        an edge ``u -> v``, as ``to_scipy_sparse_matrix(edge_index)`` gives),
        pass ``adj.T``.  A symmetric adjacency reads the same both ways.
        Only the pattern is kept: stored zeros are not edges, other values
        are dropped.
    x : array or sparse matrix (n, f)
        Features: dense (numpy, torch, cupy: kept dense as float32) or
        sparse (scipy, spla: a ``spla.Matrix``).
    y : int array (n,)
        Labels, -1 for unknown (numpy or torch; float labels are refused).
    train_idx, val_idx, test_idx : int arrays
        Vertex ids of each split.
    name : str, default 'graph'
    num_classes : int, optional
        Default ``max(y) + 1``.  When given, labels must be below it.

    Returns
    -------
    Dataset

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> adj = sp.csr_matrix(np.array([[0, 1], [1, 0]]))
    >>> ds = from_scipy(adj, np.ones((2, 3)), np.array([0, 1]), [0], [1], [], num_classes=2)
    >>> ds
    <Dataset graph: 2 nodes, 2 edges, 3 features, 2 classes, 1/1/0 split>
    """
    func = "from_scipy"
    if isinstance(adj, Matrix):
        A = adj.to("cpu").structure()
    else:
        import scipy.sparse as sp
        if not sp.issparse(adj):
            fail(DTypeError, func, "adj", "a scipy.sparse matrix (row = target) or a "
                 "spla.Matrix", describe(adj))
        if adj.shape[0] != adj.shape[1]:
            fail(DimensionMismatch, func, "adj", "a square (n, n) adjacency",
                 f"shape {adj.shape}")
        S = adj.tocsr()
        if S.nnz and not S.data.all():  # stored zeros are not edges
            S = S.copy()
            S.eliminate_zeros()
        A = Matrix.from_scipy(S, structural=True)
    n = A.nrows
    if A.ncols != n:
        fail(DimensionMismatch, func, "adj", "a square (n, n) adjacency", f"shape {A.shape}")
    x = as_features(func, "x", x, n)
    y = check_labels(func, "y", y, n, num_classes)
    splits = [np.asarray(as_index_array(func, s, host_array(func, s, ids), n))
              for s, ids in zip(_SPLITS, (train_idx, val_idx, test_idx))]
    return Dataset(name, A, x, y, *splits, classes=num_classes)


def symmetrize(A):
    """The pattern of ``A + Aᵀ``: an undirected graph's adjacency.

    Examples
    --------
    >>> from spla import Matrix
    >>> A = Matrix.from_coo([1, 2], [0, 0], shape=(3, 3))     # 0 -> 1, 0 -> 2
    >>> symmetrize(A).to_dense().tolist()
    [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    A = A.structure()
    return ewise_add(A, transpose(A), "any")


def _adjacency_from_edge_index(func, arg, edge_index, n):
    """Sampler orientation from a (2, E) source -> target edge list: row = target.

    Repeated edges are kept once (the adjacency is a pattern).
    """
    # Checked here first so that errors name the caller's argument
    # ('data.edge_index'), not from_edge_index's.
    ei = host_array(func, arg, edge_index)
    if ei.ndim != 2 or ei.shape[0] != 2:
        fail(DimensionMismatch, func, arg, "a (2, E) array of (source, target) rows",
             describe(ei))
    if ei.dtype.kind not in "iu":
        fail(DTypeError, func, arg, "integer vertex ids", describe(ei))
    sources = as_index_array(func, f"{arg}[0]", ei[0], n)
    targets = as_index_array(func, f"{arg}[1]", ei[1], n)
    # PyG and OGB edge lists repeat edges: keep one (the adjacency is a pattern).
    return Matrix.from_edge_index(np.stack([sources, targets]), n, flow="source_to_target",
                                  duplicates="keep-first")


def _as_bool(func, arg, v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    fail(InvalidValue, func, arg, "True or False", describe(v))


__all__ = ["Dataset", "EMBEDDED", "from_pyg", "from_scipy", "load", "load_npz", "save_npz",
           "symmetrize"]
