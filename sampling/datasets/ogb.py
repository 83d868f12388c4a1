"""OGB's node property prediction datasets (``ogbn-*``) through the ``ogb`` package.

This module is the adapter to the optional ``ogb`` package (``pip install
-e ".[ogb]"``) and the place of its cache; ``sampling.datasets.load`` uses it
for every ``ogbn-*`` name:

* ``read(name, root)`` runs ``ogb.nodeproppred.NodePropPredDataset`` (which
  downloads the files into ``root`` when they are not there) and returns
  plain numpy arrays: the edge list as OGB ships it (source -> target),
  dense float32 features, int64 labels (-1 where OGB has none: NaN in
  ogbn-papers100M) and the official split;
* ``cache_path(name, root)`` is where the converted dataset is kept,
  ``root/<ogb's folder>/spla.npz``, and ``cache_lock`` serialises the
  conversion between processes (MPI ranks sharing a file system), so
  ``ogb`` runs once per dataset and later loads never import it.

The default ``root`` is ``$SPLA_DATA`` when set, else
``~/.cache/spla-sampling``.

Only single-label, homogeneous datasets are node classification as
``Dataset`` holds it: ogbn-arxiv, ogbn-products and ogbn-papers100M.
ogbn-proteins (112 binary tasks) and ogbn-mag (heterogeneous) are refused
with a message that says so.
"""

import contextlib
import csv
import gzip
import os
import pickle
import sys
import urllib.error

import numpy as np

from spla.checks import describe, fail
from spla.exceptions import InvalidValue, MissingDependency

#: The environment variable naming the default data folder.
ENV = "SPLA_DATA"
#: The data folder when ``root`` is None and ``$SPLA_DATA`` is not set.
DEFAULT_ROOT = os.path.join("~", ".cache", "spla-sampling")
#: The converted dataset's file name, inside OGB's folder of the dataset.
CACHE_FILE = "spla.npz"
#: OGB's node property names (ogb 1.3.6), by lower-case name: the cache is
#: found without importing ogb, whatever the case the name was given in.
KNOWN = {n.lower(): n for n in ("ogbn-arxiv", "ogbn-products", "ogbn-papers100M",
                                "ogbn-proteins", "ogbn-mag")}
_OTHER_TASKS = {"ogbl-": "link property prediction", "ogbg-": "graph property prediction",
                "ogbc-": "not node property prediction"}
_EXPECTED = "an OGB node property prediction name 'ogbn-*' (e.g. 'ogbn-arxiv')"


def default_root():
    """The data folder used when ``root`` is None: ``$SPLA_DATA``, else ``~/.cache/spla-sampling``.

    Examples
    --------
    >>> import os
    >>> os.path.isabs(default_root())
    True
    """
    root = os.environ.get(ENV) or DEFAULT_ROOT
    return os.path.abspath(os.path.expanduser(root))


def is_ogb_name(name):
    """True for names of OGB datasets (``ogbn-``, ``ogbl-``, ``ogbg-`` prefixes).

    Examples
    --------
    >>> is_ogb_name("ogbn-arxiv"), is_ogb_name("OGBL-collab"), is_ogb_name("cora")
    (True, True, False)
    """
    return isinstance(name, str) and name.lower().startswith(("ogbn-", "ogbl-", "ogbg-"))


def canonical_name(func, name):
    """The OGB spelling of an ``ogbn-*`` name (case-insensitive for the known ones).

    Raises
    ------
    InvalidValue
        A name that is not ``ogbn-*`` (link and graph property datasets are
        named as such).

    Examples
    --------
    >>> canonical_name("load", "OGBN-Papers100M")
    'ogbn-papers100M'
    >>> canonical_name("load", "ogbl-collab")
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: load: argument 'name' must be an OGB node property prediction name 'ogbn-*' (e.g. 'ogbn-arxiv'); got 'ogbl-collab' (a link property prediction dataset)
    """
    if not isinstance(name, str):
        fail(InvalidValue, func, "name", _EXPECTED, describe(name))
    key = name.lower()
    for prefix, task in _OTHER_TASKS.items():
        if key.startswith(prefix):
            fail(InvalidValue, func, "name", _EXPECTED, f"{name!r} (a {task} dataset)")
    if not key.startswith("ogbn-") or len(key) == len("ogbn-"):
        fail(InvalidValue, func, "name", _EXPECTED, repr(name))
    return KNOWN.get(key, name)


def folder_name(name):
    """OGB's folder of a dataset inside ``root`` (hyphens become underscores).

    Examples
    --------
    >>> folder_name("ogbn-arxiv")
    'ogbn_arxiv'
    """
    return "_".join(name.split("-"))


def cache_path(name, root=None):
    """Where the converted dataset ``name`` is kept: ``root/<ogb folder>/spla.npz``.

    Examples
    --------
    >>> import os
    >>> cache_path("ogbn-arxiv", "/data").replace(os.sep, "/")
    '/data/ogbn_arxiv/spla.npz'
    """
    return os.path.join(_root(root), folder_name(name), CACHE_FILE)


def _root(root):
    if root is None:
        return default_root()
    return os.path.abspath(os.path.expanduser(os.fspath(root)))


@contextlib.contextmanager
def cache_lock(path):
    """Hold an exclusive lock for converting the dataset cached at ``path``.

    Several processes loading the same dataset at once (the ranks of an MPI
    job) convert it once: the others wait here, then find the file.  The
    lock file lies in ``root`` beside OGB's folder (not in it: ogb treats a
    folder without its release marker as an old version).  Where ``fcntl``
    does not exist (Windows) there is no lock; the atomic rename of the
    cache still keeps any file that appears whole.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> with cache_lock(os.path.join(d, "ogbn_arxiv", "spla.npz")):
    ...     pass
    """
    folder = os.path.dirname(path)
    root = os.path.dirname(folder)
    os.makedirs(root, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    lock = os.path.join(root, f".{os.path.basename(folder)}.spla.lock")
    with open(lock, "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        except BaseException:
            # A load that failed (no network, say) leaves no lock file behind.
            # A process waiting on this one goes on with the unlinked file:
            # harmless, the cache appears by an atomic rename.
            with contextlib.suppress(OSError):
                os.unlink(lock)
            raise
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def _no_version_check():
    """Import ogb without its check for a newer release on PyPI.

    Importing ``ogb`` starts a thread that asks PyPI, through the
    ``outdated`` package, whether ogb is out of date; ``outdated`` has no
    switch for the request itself (``OUTDATED_IGNORE``, which ogb sets, only
    silences its warnings), and it retries with delays on a machine
    without network.  ogb skips the check when ``outdated`` cannot be
    imported, and ``sys.modules[name] = None`` makes an import fail, so
    ``outdated`` is hidden for the duration of ogb's import only.
    """
    if "ogb" in sys.modules:
        yield
        return
    missing = object()
    saved = sys.modules.get("outdated", missing)
    sys.modules["outdated"] = None
    try:
        yield
    finally:
        if sys.modules.get("outdated", missing) is None:
            if saved is missing:
                del sys.modules["outdated"]
            else:
                sys.modules["outdated"] = saved


def _import_ogb(func):
    try:
        with _no_version_check():
            from ogb.nodeproppred import NodePropPredDataset
    except ImportError as e:
        raise MissingDependency(
            f"{func}: OGB datasets need the ogb package (and torch): "
            f'pip install -e ".[ogb]"; importing it failed: {e}') from e
    return NodePropPredDataset


def _master(ogb_dataset_class):
    """OGB's table of node property datasets: {name: {field: value}}."""
    path = os.path.join(os.path.dirname(sys.modules[ogb_dataset_class.__module__].__file__),
                        "master.csv")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    names = rows[0][1:]
    return {name: {row[0]: row[1 + j] for row in rows[1:]} for j, name in enumerate(names)}


def _check_supported(func, name, meta):
    if meta.get("is hetero") == "True":
        fail(InvalidValue, func, "name", "a homogeneous OGB node classification dataset "
             "(ogbn-arxiv, ogbn-products, ogbn-papers100M)",
             f"{name!r} (heterogeneous: several node and edge types)")
    if meta.get("num tasks") != "1" or meta.get("task type") != "multiclass classification":
        fail(InvalidValue, func, "name", "a single-label OGB node classification dataset "
             "(ogbn-arxiv, ogbn-products, ogbn-papers100M)",
             f"{name!r} ({meta.get('num tasks')} tasks of {meta.get('task type')})")


def read(name, root=None, *, func="load"):
    """Read an ``ogbn-*`` dataset with the ogb package (downloading it if needed).

    Parameters
    ----------
    name : str
        An ``ogbn-*`` name of OGB's list (e.g. ``'ogbn-arxiv'``).
    root : str, optional
        The data folder (default ``default_root()``); OGB's files go to
        ``root/<name with underscores>``.
    func : str
        The public function named in error messages.

    Returns
    -------
    dict
        ``edge_index`` (2, E) int64, source -> target as OGB ships it (not
        symmetrised); ``x`` (n, f) float32; ``y`` (n,) int64 with -1 for
        unlabelled vertices; ``train_idx``, ``val_idx``, ``test_idx`` int64;
        ``num_classes`` int; ``name`` (OGB's spelling).

    Raises
    ------
    MissingDependency
        ogb (or torch, which it needs) is not installed.
    InvalidValue
        A name OGB does not know, one that is not single-label node
        classification on a homogeneous graph, a folder of another OGB
        release, labels that are not whole numbers.

    Examples
    --------
    Names are checked before ogb is imported:

    >>> read("ogbg-molhiv")
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: load: argument 'name' must be an OGB node property prediction name 'ogbn-*' (e.g. 'ogbn-arxiv'); got 'ogbg-molhiv' (a graph property prediction dataset)
    """
    name = canonical_name(func, name)
    NodePropPredDataset = _import_ogb(func)
    master = _master(NodePropPredDataset)
    by_lower = {k.lower(): k for k in master}
    if name.lower() not in by_lower:
        fail(InvalidValue, func, "name", f"one of OGB's node property datasets "
             f"({', '.join(sorted(master))})", repr(name))
    name = by_lower[name.lower()]
    meta = master[name]
    _check_supported(func, name, meta)
    root = _root(root)
    folder = os.path.join(root, folder_name(name))
    marker = f"RELEASE_v{meta['version']}.txt"
    if os.path.isdir(folder) and not os.path.exists(os.path.join(folder, marker)):
        # ogb would ask on the terminal whether to delete the folder (and
        # block a batch job or an MPI rank forever): say it here instead.
        fail(InvalidValue, func, "root", f"a folder where {folder_name(name)}/ holds OGB's "
             f"release {meta['version']} of {name} (marked by {marker})",
             f"{folder} without {marker} (an older release, or another program's folder): "
             "remove it to download the dataset again")
    if os.path.isdir(os.path.join(folder, "raw")):
        # ogb saves its own processed copy there and assumes the folder exists.
        os.makedirs(os.path.join(folder, "processed"), exist_ok=True)
    try:
        dataset = NodePropPredDataset(name=name, root=root)
    except urllib.error.URLError as e:
        raise InvalidValue(
            f"{func}: could not download {name} into {root} ({e.reason}). Without network, "
            f"copy OGB's folder {folder_name(name)}/ of it (with raw/ and {marker}) into "
            f"{root}, or pass the root that holds it") from None
    except pickle.UnpicklingError as e:
        processed = os.path.join(folder, "processed", "data_processed")
        raise InvalidValue(
            f"{func}: ogb could not read back its own processed file {processed} with this "
            f"torch (torch.load's weights_only default, ogb issue #497); remove that file "
            f"(ogb rebuilds it from {os.path.join(folder, 'raw')}) and load again") from e
    graph, labels = dataset[0]
    split = _split(func, dataset, folder, meta)
    edge_index = np.asarray(graph["edge_index"])
    x = graph.get("node_feat")
    if x is None:
        fail(InvalidValue, func, "name", "an OGB dataset with node features", f"{name!r}")
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = int(graph["num_nodes"])
    return {"name": name, "edge_index": edge_index.astype(np.int64, copy=False),
            "x": x, "y": labels_from_ogb(func, labels, n),
            "train_idx": _ids(split["train"]), "val_idx": _ids(split["valid"]),
            "test_idx": _ids(split["test"]), "num_classes": int(meta["num classes"])}


def _ids(a):
    return np.asarray(a).reshape(-1).astype(np.int64, copy=False)


def _split(func, dataset, folder, meta):
    """OGB's split; its csv files read here when ogb's pickled copy cannot be read."""
    try:
        return dataset.get_idx_split()
    except pickle.UnpicklingError as e:
        # A split_dict.pt saved by an older torch, refused by torch.load's
        # weights_only default: the same split is in plain csv files.
        path = os.path.join(folder, "split", meta["split"])
        files = [os.path.join(path, f"{part}.csv.gz") for part in ("train", "valid", "test")]
        missing = [f for f in files if not os.path.exists(f)]
        if missing:
            raise InvalidValue(
                f"{func}: ogb could not read the split of {folder} with this torch "
                f"(torch.load's weights_only default) and there is no csv copy "
                f"({', '.join(missing)})") from e
        out = {}
        for part, f in zip(("train", "valid", "test"), files):
            with gzip.open(f, "rt") as fh:
                out[part] = np.loadtxt(fh, dtype=np.int64, ndmin=1, delimiter=",")
        return out


def labels_from_ogb(func, labels, n):
    """OGB's (n, 1) labels as int64 (n,), -1 where OGB has none (NaN).

    Float labels must hold whole numbers (they are not truncated).

    Examples
    --------
    >>> import numpy as np
    >>> labels_from_ogb("load", np.array([[3.0], [np.nan], [0.0]]), 3).tolist()
    [3, -1, 0]
    >>> labels_from_ogb("load", np.array([[0.5]]), 1)
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: load: argument 'labels' must be whole class numbers (or NaN for unlabelled); got 0.5 at vertex 0
    """
    a = np.asarray(labels)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.shape != (n,):
        fail(InvalidValue, func, "labels", f"one label per vertex ({n},) or ({n}, 1)",
             describe(a))
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    if a.dtype.kind != "f":
        fail(InvalidValue, func, "labels", "numeric labels", describe(a))
    known = ~np.isnan(a)
    bad = known & ((a != np.floor(a)) | ~np.isfinite(a) | (a < 0))
    if bad.any():
        v = int(np.flatnonzero(bad)[0])
        fail(InvalidValue, func, "labels", "whole class numbers (or NaN for unlabelled)",
             f"{a[v]} at vertex {v}")
    out = np.full(n, -1, np.int64)
    out[known] = a[known].astype(np.int64)
    return out


__all__ = ["CACHE_FILE", "DEFAULT_ROOT", "ENV", "KNOWN", "cache_lock", "cache_path",
           "canonical_name", "default_root", "folder_name", "is_ogb_name", "labels_from_ogb",
           "read"]
