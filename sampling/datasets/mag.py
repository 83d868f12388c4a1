"""Heterogeneous graphs with the schema of OGB's MAG: a seeded generator and ``ogbn-mag``.

``mag_dataset(scale)`` builds a ``HeteroGraph`` with four vertex types and
OGB's four relations::

    paper  -cites->          paper
    author -writes->         paper
    author -affiliated_with-> institution
    paper  -has_topic->      field_of_study

and labels on papers that only a model telling the relations apart reads
well (the planted signal):

* every paper has a class; a class owns ``1 / num_classes`` of the fields,
  authors and institutions (vertex ``i`` of those types belongs to class
  ``i % num_classes``);
* a paper's 1-3 fields and 1-4 authors are drawn from its class's members
  with probability ``homophily`` (else uniformly); its citations are
  label-blind;
* features (``num_features`` wide, every type): a field carries ``+mu_c``,
  an author ``-mu_c`` (``mu_c`` a random unit vector of class ``c``), plus
  Gaussian noise; papers and institutions carry noise only.

A relation-blind mean over a paper's neighbours adds fields' ``+mu`` and
authors' ``-mu`` in proportions that vary from paper to paper, so it
cancels or flips the signal; a model with a weight per relation (R-GCN)
reads both.  Splits: 50 / 25 / 25 % of the papers.  Everything is a pure
function of ``(scale, seed, ...)``.

``load_ogbn_mag(root)`` reads OGB's on-disk layout of ``ogbn-mag``
(``raw/`` CSVs, gzipped or not): relations from
``raw/relations/<src>___<name>___<dst>/edge.csv`` and ``num-node-dict.csv``,
paper features ``raw/node-feat/paper/node-feat.csv``, labels
``raw/node-label/paper/node-label.csv`` and the split
``split/<name>/paper/{train,valid,test}.csv`` (paper ids).
"""

import gzip
import os

import numpy as np

from spla.checks import as_int, fail
from spla.exceptions import InvalidValue

from sampling.datasets.hetero import HeteroGraph

TYPES = ("paper", "author", "institution", "field_of_study")
RELATIONS = (("paper", "cites", "paper"), ("author", "writes", "paper"),
             ("author", "affiliated_with", "institution"),
             ("paper", "has_topic", "field_of_study"))


def _pick(rng, cls, n_pool, num_classes, homophily):
    """For each class in ``cls``, a vertex of ``[0, n_pool)``: of that class w.p. homophily."""
    per_class = n_pool // num_classes
    own = cls + num_classes * rng.integers(0, per_class, cls.size)
    rand = rng.integers(0, n_pool, cls.size)
    return np.where(rng.random(cls.size) < homophily, own, rand).astype(np.int64)


def mag_dataset(scale, *, seed=0, num_classes=4, num_features=16, homophily=0.9, noise=1.0):
    """A seeded synthetic MAG-schema ``HeteroGraph`` (see the module docstring).

    Parameters
    ----------
    scale : int
        ``2**scale`` papers and authors, ``2**(scale-3)`` fields and
        ``2**(scale-4)`` institutions (at least ``num_classes`` each);
        1 to 26.
    seed : int, default 0
    num_classes : int, default 4
    num_features : int, default 16
    homophily : float, default 0.9
        Probability that a paper's field or author is of its class.
    noise : float, default 1.0
        Standard deviation of the features' Gaussian noise.

    Returns
    -------
    HeteroGraph
        Directed relations as in MAG (``to_undirected()`` adds the reverse
        ones); labels and splits on ``"paper"``.

    Examples
    --------
    >>> from sampling.datasets.mag import mag_dataset
    >>> G = mag_dataset(6)
    >>> G.num_nodes
    {'paper': 64, 'author': 64, 'institution': 4, 'field_of_study': 8}
    >>> [r[1] for r in G.edge_types], G.split("train", "paper").size
    (['cites', 'writes', 'affiliated_with', 'has_topic'], 32)
    """
    func = "mag_dataset"
    scale = as_int(func, "scale", scale, minimum=1)
    if scale > 26:
        fail(InvalidValue, func, "scale", "an integer in [1, 26]", scale)
    seed = as_int(func, "seed", seed, minimum=0)
    C = as_int(func, "num_classes", num_classes, minimum=2)
    F = as_int(func, "num_features", num_features, minimum=1)
    if not 0.0 <= float(homophily) <= 1.0:
        fail(InvalidValue, func, "homophily", "a probability in [0, 1]", homophily)
    if not float(noise) >= 0.0:
        fail(InvalidValue, func, "noise", "a standard deviation >= 0", noise)
    rng = np.random.default_rng([seed, scale, 0x3A6])
    n = {"paper": 1 << scale, "author": 1 << scale,
         "institution": max(C, (1 << max(scale - 4, 0)) // C * C),
         "field_of_study": max(C, (1 << max(scale - 3, 0)) // C * C)}
    y = rng.integers(0, C, n["paper"]).astype(np.int64)
    n_f = rng.integers(1, 4, n["paper"])
    n_a = rng.integers(1, 5, n["paper"])
    p_f = np.repeat(np.arange(n["paper"]), n_f)
    p_a = np.repeat(np.arange(n["paper"]), n_a)
    fields = _pick(rng, y[p_f], n["field_of_study"], C, homophily)
    authors = _pick(rng, y[p_a], n["author"], C, homophily)
    cites_src = rng.integers(0, n["paper"], 4 * n["paper"])
    cites_dst = np.repeat(np.arange(n["paper"]), 4)
    a_ids = np.arange(n["author"])
    inst = _pick(rng, a_ids % C, n["institution"], C, homophily)
    edges = {RELATIONS[0]: np.stack([cites_src, cites_dst]),
             RELATIONS[1]: np.stack([authors, p_a]),
             RELATIONS[2]: np.stack([a_ids, inst]),
             RELATIONS[3]: np.stack([p_f, fields])}
    mu = rng.standard_normal((C, F))
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    sign = {"paper": 0.0, "author": -1.0, "institution": 0.0, "field_of_study": 1.0}
    x = {}
    for t in TYPES:
        cls = np.arange(n[t]) % C
        x[t] = (sign[t] * mu[cls] + noise * rng.standard_normal((n[t], F))).astype(np.float32)
    order = rng.permutation(n["paper"])
    a, b = n["paper"] // 2, (3 * n["paper"]) // 4
    return HeteroGraph.from_edge_index(
        n, edges, x=x, y={"paper": y}, train_idx={"paper": np.sort(order[:a])},
        val_idx={"paper": np.sort(order[a:b])}, test_idx={"paper": np.sort(order[b:])},
        num_classes=C, name=f"mag:{scale}")


def _read_csv(path, dtype):
    for p, opener in ((path + ".csv", open), (path + ".csv.gz", gzip.open)):
        if os.path.exists(p):
            with opener(p, "rt") as f:
                a = np.loadtxt(f, delimiter=",", dtype=dtype, ndmin=2)
            return a
    return None


def load_ogbn_mag(root, *, name="ogbn-mag"):
    """``ogbn-mag`` from OGB's on-disk layout under ``root/ogbn_mag`` (or ``root`` itself).

    Parameters
    ----------
    root : str
        The folder OGB downloads into (holding ``ogbn_mag/``), or the
        dataset's folder itself (holding ``raw/`` and ``split/``).

    Returns
    -------
    HeteroGraph
        MAG's directed relations; paper features, labels and split.

    Raises
    ------
    InvalidValue
        A missing file (named), a relation of an unknown type.

    Examples
    --------
    >>> import tempfile
    >>> from sampling.datasets.mag import load_ogbn_mag
    >>> load_ogbn_mag(tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: load_ogbn_mag: argument 'root' must be a folder with OGB's ogbn-mag layout (raw/num-node-dict.csv); got '...'
    """
    func = "load_ogbn_mag"
    base = os.path.join(root, "ogbn_mag") if os.path.isdir(os.path.join(root, "ogbn_mag")) \
        else root
    raw = os.path.join(base, "raw")
    header = None
    for p, opener in ((os.path.join(raw, "num-node-dict.csv"), open),
                      (os.path.join(raw, "num-node-dict.csv.gz"), gzip.open)):
        if os.path.exists(p):
            with opener(p, "rt") as f:
                header = [line.strip().split(",") for line in f if line.strip()]
    if header is None:
        fail(InvalidValue, func, "root", "a folder with OGB's ogbn-mag layout "
             "(raw/num-node-dict.csv)", repr(os.fspath(root)))
    counts = {t: int(c) for t, c in zip(header[0], header[1])}
    edges = {}
    rel_dir = os.path.join(raw, "relations")
    for entry in sorted(os.listdir(rel_dir)) if os.path.isdir(rel_dir) else []:
        key = tuple(entry.split("___"))
        e = _read_csv(os.path.join(rel_dir, entry, "edge"), np.int64)
        if len(key) != 3 or e is None:
            fail(InvalidValue, func, "root", "relations/<src>___<name>___<dst>/edge.csv",
                 entry)
        edges[key] = e.T
    x = _read_csv(os.path.join(raw, "node-feat", "paper", "node-feat"), np.float32)
    y = _read_csv(os.path.join(raw, "node-label", "paper", "node-label"), np.int64)
    split_dir = os.path.join(base, "split")
    subs = sorted(os.listdir(split_dir)) if os.path.isdir(split_dir) else []
    parts = {}
    for part, f in (("train_idx", "train"), ("val_idx", "valid"), ("test_idx", "test")):
        ids = None
        for sub in ((subs[0], "paper"), (subs[0],)) if subs else ():
            ids = _read_csv(os.path.join(split_dir, *sub, f), np.int64)
            if ids is not None:
                break
        if ids is None:
            fail(InvalidValue, func, "root", f"a split file split/<name>/paper/{f}.csv", "none")
        parts[part] = {"paper": ids.reshape(-1)}
    return HeteroGraph.from_edge_index(
        counts, edges, x={} if x is None else {"paper": x},
        y={} if y is None else {"paper": y.reshape(-1)}, name=name, **parts)


def load_mag(func, name, root=None, to_undirected=None):
    """``load("mag:SCALE")`` or ``load("ogbn-mag", root=)``: a ``HeteroGraph``.

    With reverse relations (``to_undirected()``) unless ``to_undirected``
    is False.  ``ogbn-mag`` is read from OGB's raw files under ``root``
    (default ``sampling.datasets.ogb.default_root()``), which ogb downloads;
    without them the error names the dataset, as ``load`` does for a name
    it cannot serve.

    Examples
    --------
    >>> from sampling.datasets.mag import load_mag
    >>> len(load_mag("load", "mag:4").edge_types)
    7
    >>> len(load_mag("load", "mag:4", to_undirected=False).edge_types)
    4
    """
    if name.lower() == "ogbn-mag":
        from sampling.datasets import ogb
        root = os.fspath(root) if root is not None else ogb.default_root()
        raw = [os.path.join(base, "raw", f"num-node-dict.csv{z}")
               for base in (os.path.join(root, "ogbn_mag"), root) for z in ("", ".gz")]
        if not any(os.path.exists(p) for p in raw):
            # The files are not downloaded here: ogb does it (it keeps raw/).
            fail(InvalidValue, func, "name", "a dataset whose files are under root: "
                 "ogbn-mag is read from OGB's raw files in root/ogbn_mag, which "
                 "ogb.nodeproppred.NodePropPredDataset('ogbn-mag', root=root) downloads",
                 f"{name!r} (heterogeneous; no raw/num-node-dict.csv under {root!r})")
        G = load_ogbn_mag(root)
    else:
        try:
            scale = int(name.split(":", 1)[1])
        except ValueError:
            fail(InvalidValue, func, "name", "'mag:SCALE' with an integer SCALE", repr(name))
        G = mag_dataset(scale)
    return G.to_undirected() if to_undirected is None or to_undirected else G


__all__ = ["mag_dataset", "load_mag", "load_ogbn_mag", "RELATIONS", "TYPES"]
