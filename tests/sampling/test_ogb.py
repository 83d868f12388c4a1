"""OGB datasets through the ogb package, on tiny datasets in OGB's own on-disk format.

Each test writes a 30-vertex graph in the layout ogb 1.3.6 reads (the csv
files of ogbn-arxiv, or the binary ``data.npz`` of ogbn-papers100M with NaN
labels), with the release marker, so ogb neither downloads nor asks
anything: the network and ``input`` are switched off to make sure.  The
loader must return what the test wrote (symmetrised or not), write its npz
cache once and read it afterwards without ogb, and refuse names that are
not node classification.
"""

import builtins
import contextlib
import gzip
import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from sampling.datasets import ogb as ogbn
from sampling.datasets import load

torch = pytest.importorskip("torch")
# Not importorskip: importing ogb imports `outdated`, whose own import starts a
# thread that checks PyPI (and, with setuptools 81 and later, fails on
# `pkg_resources` and warns from that thread, an error under -W error in
# whichever test runs then).  The loader imports ogb with `outdated` hidden.
if importlib.util.find_spec("ogb") is None:
    pytest.skip("needs ogb (pip install -e \".[ogb]\")", allow_module_level=True)

N = 30
ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No test may reach the network or wait for an answer on the terminal."""
    def refuse(*args, **kwargs):
        raise AssertionError("the OGB tests must not use the network")

    def no_prompt(*args, **kwargs):
        raise AssertionError(f"ogb asked the terminal: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(builtins, "input", no_prompt)
    monkeypatch.delenv(ogbn.ENV, raising=False)


def _csv_gz(path, rows, fmt):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rows = np.asarray(rows)
    rows = rows.reshape(len(rows), -1)
    with gzip.open(path, "wt") as f:
        for row in rows:
            f.write(",".join(fmt % v for v in row) + "\n")


def graph(seed):
    """A directed 30-vertex graph with repeats and self loops, features, labels, split."""
    rng = np.random.default_rng(seed)
    e = 80
    src = rng.integers(0, N, e)
    dst = rng.integers(0, N, e)
    src[:3], dst[:3] = [4, 4, 7], [9, 9, 7]                 # a repeat and a self loop
    x = (rng.integers(-8, 8, (N, 5)) / 4).astype(np.float32)  # exact in csv and float32
    y = rng.integers(0, 40, N)
    perm = rng.permutation(N)
    split = {"train": np.sort(perm[:12]), "valid": np.sort(perm[12:18]),
             "test": np.sort(perm[18:24])}
    return src, dst, x, y, split


def write_arxiv(root, seed=0):
    """ogbn-arxiv as ogb's csv reader expects it (raw/, split/time/, RELEASE_v1.txt)."""
    src, dst, x, y, split = graph(seed)
    d = os.path.join(root, "ogbn_arxiv")
    _csv_gz(f"{d}/raw/edge.csv.gz", np.stack([src, dst], 1), "%d")
    _csv_gz(f"{d}/raw/num-node-list.csv.gz", [N], "%d")
    _csv_gz(f"{d}/raw/num-edge-list.csv.gz", [src.size], "%d")
    _csv_gz(f"{d}/raw/node-feat.csv.gz", x, "%.6f")
    _csv_gz(f"{d}/raw/node_year.csv.gz", np.full(N, 2020), "%d")
    _csv_gz(f"{d}/raw/node-label.csv.gz", y, "%d")
    for part, ids in split.items():
        _csv_gz(f"{d}/split/time/{part}.csv.gz", ids, "%d")
    os.makedirs(f"{d}/processed", exist_ok=True)
    open(f"{d}/RELEASE_v1.txt", "w").close()
    return src, dst, x, y, split


def write_papers(root, seed=1):
    """ogbn-papers100M as ogb's binary reader expects it, most labels NaN."""
    src, dst, x, y, split = graph(seed)
    d = os.path.join(root, "ogbn_papers100M")
    os.makedirs(f"{d}/raw")
    np.savez(f"{d}/raw/data.npz", edge_index=np.stack([src, dst]),
             num_nodes_list=np.array([N]), num_edges_list=np.array([src.size]),
             node_feat=x, node_year=np.full((N, 1), 2020))
    labelled = np.concatenate(list(split.values()))
    yf = np.full((N, 1), np.nan)
    yf[labelled, 0] = y[labelled]
    np.savez(f"{d}/raw/node-label.npz", node_label=yf)
    for part, ids in split.items():
        _csv_gz(f"{d}/split/time/{part}.csv.gz", ids, "%d")
    os.makedirs(f"{d}/processed")
    open(f"{d}/RELEASE_v1.txt", "w").close()
    y = np.where(np.isnan(yf[:, 0]), -1, yf[:, 0]).astype(np.int64)
    return src, dst, x, y, split


def target_rows(src, dst, undirected):
    """The expected adjacency, from the raw pairs with scipy: A[target, source] = 1."""
    m = sp.coo_matrix((np.ones(src.size), (dst, src)), shape=(N, N)).toarray() != 0
    return (m | m.T) if undirected else m


def check(ds, written, undirected, name, num_classes=40):
    src, dst, x, y, split = written
    assert ds.name == name and ds.num_nodes == N and ds.num_classes == num_classes
    np.testing.assert_array_equal(ds.A.to_dense() != 0, target_rows(src, dst, undirected))
    assert ds.A.is_structural and ds.A.indptr.dtype == np.int64
    assert isinstance(ds.x, np.ndarray) and ds.x.dtype == np.float32   # dense stays dense
    np.testing.assert_array_equal(ds.x, x)
    np.testing.assert_array_equal(ds.y, y)
    for ours, theirs in (("train_idx", "train"), ("val_idx", "valid"), ("test_idx", "test")):
        np.testing.assert_array_equal(getattr(ds, ours), split[theirs])


def test_arxiv_is_symmetrised_by_default(tmp_path):
    written = write_arxiv(tmp_path)
    ds = load("ogbn-arxiv", root=tmp_path)
    check(ds, written, undirected=True, name="ogbn-arxiv")
    assert ds.A.isequal(ds.A.T)


def test_arxiv_as_shipped(tmp_path):
    written = write_arxiv(tmp_path)
    ds = load("OGBN-Arxiv", root=str(tmp_path), to_undirected=False)
    check(ds, written, undirected=False, name="ogbn-arxiv")
    assert not ds.A.isequal(ds.A.T)


def test_papers100m_binary_format_and_unlabelled_vertices(tmp_path):
    written = write_papers(tmp_path)
    ds = load("ogbn-papers100m", root=tmp_path)
    check(ds, written, undirected=True, name="ogbn-papers100M", num_classes=172)
    assert (ds.y == -1).sum() == N - 24


def test_cache_is_written_once_and_read_without_ogb(tmp_path, monkeypatch):
    written = write_arxiv(tmp_path)
    calls = []
    read = ogbn.read
    monkeypatch.setattr(ogbn, "read", lambda *a, **k: calls.append(a) or read(*a, **k))
    load("ogbn-arxiv", root=tmp_path)
    cache = tmp_path / "ogbn_arxiv" / "spla.npz"
    assert calls and cache.is_file()
    assert not [f for f in os.listdir(cache.parent) if f.endswith(".tmp")]
    before = os.stat(cache)

    # From now on ogb cannot be imported and the reader must not be called.
    def no_ogb(*a, **k):
        raise AssertionError("the cached dataset was converted again")

    monkeypatch.setattr(ogbn, "read", no_ogb)
    for mod in [m for m in list(sys.modules) if m == "ogb" or m.startswith("ogb.")]:
        monkeypatch.setitem(sys.modules, mod, None)
    monkeypatch.setitem(sys.modules, "ogb", None)
    check(load("ogbn-arxiv", root=tmp_path), written, undirected=True, name="ogbn-arxiv")
    check(load("ogbn-arxiv", root=tmp_path, to_undirected=False), written, undirected=False,
          name="ogbn-arxiv")
    after = os.stat(cache)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert len(calls) == 1
    # The cache is an ordinary npz of the documented format.
    with np.load(cache, allow_pickle=False) as f:
        assert set(f.files) == {"indptr", "indices", "x", "y", "train_idx", "val_idx",
                                "test_idx", "num_classes"}


def test_concurrent_loads_convert_once(tmp_path, monkeypatch):
    written = write_arxiv(tmp_path)
    calls = []
    read = ogbn.read

    def slow_read(*a, **k):
        calls.append(a)
        time.sleep(0.3)            # the other loader arrives while this one converts
        return read(*a, **k)

    monkeypatch.setattr(ogbn, "read", slow_read)
    out, errors = [], []

    def run():
        try:
            out.append(load("ogbn-arxiv", root=tmp_path))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(out) == 2 and len(calls) == 1
    for ds in out:
        check(ds, written, undirected=True, name="ogbn-arxiv")


def test_default_root(tmp_path, monkeypatch):
    monkeypatch.setenv(ogbn.ENV, str(tmp_path / "data"))
    assert ogbn.default_root() == str(tmp_path / "data")
    written = write_arxiv(tmp_path / "data")
    check(load("ogbn-arxiv"), written, undirected=True, name="ogbn-arxiv")
    assert (tmp_path / "data" / "ogbn_arxiv" / "spla.npz").is_file()
    monkeypatch.delenv(ogbn.ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ogbn.default_root() == str(tmp_path / ".cache" / "spla-sampling")
    assert ogbn.cache_path("ogbn-papers100M") == str(
        tmp_path / ".cache" / "spla-sampling" / "ogbn_papers100M" / "spla.npz")


@pytest.mark.parametrize("name, words", [
    ("ogbl-collab", "got 'ogbl-collab' (a link property prediction dataset)"),
    ("ogbg-molhiv", "got 'ogbg-molhiv' (a graph property prediction dataset)"),
    ("ogbn-foo", "must be one of OGB's node property datasets (ogbn-arxiv, ogbn-mag, "
                 "ogbn-papers100M, ogbn-products, ogbn-proteins); got 'ogbn-foo'"),
    ("ogbn-proteins", "a single-label OGB node classification dataset"),
    ("ogbn-mag", "got 'ogbn-mag' (heterogeneous"),
    ("ogbn-", "'ogbn-*'"),
])
def test_names_that_are_not_node_classification(tmp_path, name, words):
    with pytest.raises(spla.InvalidValue) as info:
        load(name, root=tmp_path)
    msg = str(info.value)
    assert msg.startswith("load: argument 'name' must be"), msg
    assert words in msg, msg
    assert not (tmp_path / ogbn.folder_name(name)).exists()


def test_missing_ogb_is_a_clear_error(tmp_path, monkeypatch):
    for mod in [m for m in list(sys.modules) if m == "ogb" or m.startswith("ogb.")]:
        monkeypatch.setitem(sys.modules, mod, None)
    monkeypatch.setitem(sys.modules, "ogb", None)
    with pytest.raises(spla.MissingDependency) as info:
        load("ogbn-arxiv", root=tmp_path)
    assert 'pip install -e ".[ogb]"' in str(info.value)
    assert isinstance(info.value, ImportError)


def test_folder_of_another_release_is_refused_without_a_prompt(tmp_path):
    write_arxiv(tmp_path)
    os.remove(tmp_path / "ogbn_arxiv" / "RELEASE_v1.txt")
    with pytest.raises(spla.InvalidValue) as info:
        load("ogbn-arxiv", root=tmp_path)
    assert "argument 'root'" in str(info.value)
    assert "without RELEASE_v1.txt" in str(info.value)
    assert not (tmp_path / "ogbn_arxiv" / "spla.npz").exists()


def _torch_reads(path):
    try:
        with quiet_torch_load():
            torch.load(path)
        return True
    except Exception:  # noqa: BLE001 - the point is whether this torch can read ogb's file
        return False


@contextlib.contextmanager
def quiet_torch_load():
    """Silence torch.load's warning about ogb's pickle protocol (printed before it fails)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Detected pickle protocol", UserWarning)
        yield


def test_ogb_processed_file_that_torch_cannot_read(tmp_path):
    written = write_arxiv(tmp_path)
    load("ogbn-arxiv", root=tmp_path)              # ogb leaves processed/data_processed
    os.remove(tmp_path / "ogbn_arxiv" / "spla.npz")
    processed = tmp_path / "ogbn_arxiv" / "processed" / "data_processed"
    assert processed.is_file()
    if _torch_reads(processed):                   # an ogb or torch that fixed it
        check(load("ogbn-arxiv", root=tmp_path), written, True, "ogbn-arxiv")
        return
    with pytest.raises(spla.InvalidValue) as info, quiet_torch_load():
        load("ogbn-arxiv", root=tmp_path)
    msg = str(info.value)
    assert "remove that file" in msg and str(processed) in msg, msg
    os.remove(processed)                          # the advice works
    check(load("ogbn-arxiv", root=tmp_path), written, True, "ogbn-arxiv")


def test_pickled_split_falls_back_to_the_csv_split(tmp_path):
    written = write_arxiv(tmp_path)
    split_dir = tmp_path / "ogbn_arxiv" / "split" / "time"
    torch.save(dict(written[4]), split_dir / "split_dict.pt")   # ogb reads this first
    check(load("ogbn-arxiv", root=tmp_path), written, True, "ogbn-arxiv")
    if _torch_reads(split_dir / "split_dict.pt"):
        return
    # This torch refuses the pickle: the split above came from the csv copy,
    # and without that copy the error says what happened.
    os.remove(tmp_path / "ogbn_arxiv" / "spla.npz")
    os.remove(tmp_path / "ogbn_arxiv" / "processed" / "data_processed")
    os.remove(split_dir / "valid.csv.gz")
    with pytest.raises(spla.InvalidValue, match="could not read the split .*valid.csv.gz"), \
            quiet_torch_load():
        load("ogbn-arxiv", root=tmp_path)


@pytest.mark.slow
def test_ogb_import_starts_no_version_check_and_no_warning(tmp_path):
    """In a fresh interpreter with warnings as errors: no PyPI thread, no `outdated`."""
    write_arxiv(tmp_path)
    code = (
        "import sys, threading\n"
        "from sampling.datasets import load\n"
        f"ds = load('ogbn-arxiv', root={str(tmp_path)!r})\n"
        "names = [t.name for t in threading.enumerate()]\n"
        "assert not any('check' in n for n in names), names\n"
        "assert sys.modules.get('outdated') is None, 'outdated was imported'\n"
        "assert 'ogb' in sys.modules\n"
        "print('ok', ds.num_nodes)\n")
    env = dict(os.environ, PYTHONPATH=ROOT_DIR)
    env.pop(ogbn.ENV, None)
    out = subprocess.run(
        [sys.executable, "-W", "error",
         # the one warning the test configuration ignores too (setup.cfg): torch_geometric,
         # which ogb imports when it is installed, calls torch.jit.script
         "-W", "ignore:`torch.jit.script` is deprecated:DeprecationWarning",
         "-c", code], cwd=ROOT_DIR, env=env, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == f"ok {N}"
