"""HeteroGraph: construction, transforms, errors, the MAG generator, ogbn-mag, from_pyg."""

import gzip
import os

import numpy as np
import pytest

import spla
from sampling import HeteroGraph
from sampling.datasets import from_pyg, load
from sampling.datasets.mag import RELATIONS, load_ogbn_mag, mag_dataset


def _dense(G, key):
    return G.relation(key).to_dense()


def test_from_edge_index_orientation_and_duplicates():
    G = HeteroGraph.from_edge_index({"a": 2, "b": 3},
                                    {("a", "r", "b"): [[0, 1, 1, 1], [2, 0, 0, 1]]})
    ref = np.zeros((3, 2))
    ref[2, 0] = ref[0, 1] = ref[1, 1] = 1     # rows = destination (b), columns = source (a)
    assert np.array_equal(_dense(G, "r"), ref)
    assert G.node_types == ("a", "b") and G.edge_types == (("a", "r", "b"),)


def test_to_undirected_adds_reverse_and_symmetrises():
    G = HeteroGraph.from_edge_index({"a": 2, "b": 3},
                                    {("a", "r", "b"): [[0, 1], [2, 0]],
                                     ("b", "s", "b"): [[0], [1]]})
    U = G.to_undirected()
    assert U.edge_types == (("a", "r", "b"), ("b", "s", "b"), ("b", "rev_r", "a"))
    assert np.array_equal(_dense(U, "rev_r"), _dense(G, "r").T)
    S = _dense(U, "s")
    assert np.array_equal(S, S.T) and S[0, 1] == 1 and S[1, 0] == 1
    assert G.edge_types == (("a", "r", "b"), ("b", "s", "b"))   # the original is unchanged


def test_to_homogeneous_matches_relations():
    G = mag_dataset(4)
    A, off = G.to_homogeneous()
    D = A.to_dense()
    total = 0
    for (s, _, d), M in G.relations.items():
        sub = D[off[d]:off[d] + G.num_nodes[d], off[s]:off[s] + G.num_nodes[s]]
        assert np.array_equal(sub > 0, M.to_dense() > 0) or s == d
        total += M.nnz
    assert A.nnz == total          # relations of different type pairs do not overlap here


def test_errors():
    A = spla.Matrix.from_dense(np.ones((2, 3)))
    with pytest.raises(spla.DimensionMismatch, match=r"shape \(3, 2\)"):
        HeteroGraph({"a": 2, "b": 3}, {("a", "r", "b"): A})
    with pytest.raises(spla.InvalidValue, match="vertex type"):
        HeteroGraph({"a": 2}, {("a", "r", "zzz"): A})
    with pytest.raises(spla.DTypeError, match="keys"):
        HeteroGraph({"a": 2}, {"r": A})
    with pytest.raises(spla.DTypeError, match="spla.Matrix"):
        HeteroGraph({"a": 2}, {("a", "r", "a"): np.eye(2)})
    with pytest.raises(spla.InvalidValue, match="count"):
        HeteroGraph({"a": -1}, {("a", "r", "a"): A})
    with pytest.raises(spla.DimensionMismatch, match="x\\['a'\\]"):
        HeteroGraph({"a": 2}, {("a", "r", "a"): spla.Matrix.from_dense(np.eye(2))},
                    x={"a": np.ones((3, 1), np.float32)})
    with pytest.raises(spla.InvalidValue, match="vertex type"):
        HeteroGraph({"a": 2}, {("a", "r", "a"): spla.Matrix.from_dense(np.eye(2))},
                    y={"q": np.zeros(2, np.int64)})
    with pytest.raises(spla.IndexOutOfRange):
        HeteroGraph.from_edge_index({"a": 2}, {("a", "r", "a"): [[0], [2]]})
    G = mag_dataset(3)
    with pytest.raises(spla.InvalidValue, match="relation"):
        G.relation("nope")


def test_mag_schema_determinism_and_planted_signal():
    G = mag_dataset(8, seed=1)
    assert G.edge_types == RELATIONS
    assert G.num_nodes["paper"] == 256 and G.num_classes == 4
    H = mag_dataset(8, seed=1)
    for r in RELATIONS:
        assert G.relation(r).isequal(H.relation(r))
    assert not G.relation(RELATIONS[1]).isequal(mag_dataset(8, seed=2).relation(RELATIONS[1]))
    y = G.y["paper"]
    # fields of a paper mostly share its class (field i is of class i % C)
    T = G.relation(("paper", "has_topic", "field_of_study")).to_scipy().tocoo()
    agree = np.mean(T.row % 4 == y[T.col])       # rows: fields (destination)
    assert agree > 0.8
    # the splits partition the papers
    parts = [G.split(p, "paper") for p in ("train", "val", "test")]
    assert sum(p.size for p in parts) == 256
    assert np.unique(np.concatenate(parts)).size == 256
    with pytest.raises(spla.InvalidValue, match="scale"):
        mag_dataset(40)


def test_load_mag_names():
    G = load("mag:5")
    assert ("paper", "rev_writes", "author") in G.edge_types and G.name == "mag:5"
    assert len(load("mag:5", to_undirected=False).edge_types) == 4
    with pytest.raises(spla.InvalidValue, match="mag:SCALE"):
        load("mag:x")


def _csv_gz(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        for row in rows:
            f.write(",".join(str(v) for v in np.atleast_1d(row)) + "\n")


def test_ogbn_mag_layout(tmp_path):
    """A tiny ogbn-mag in OGB's raw layout: what the loader returns is what was written."""
    base = tmp_path / "ogbn_mag"
    raw = base / "raw"
    counts = {"author": 3, "field_of_study": 2, "institution": 1, "paper": 4}
    os.makedirs(raw)
    _csv_gz(str(raw / "num-node-dict.csv.gz"), [list(counts), list(counts.values())])
    edges = {("author", "affiliated_with", "institution"): [[0, 0], [1, 0]],
             ("author", "writes", "paper"): [[0, 1], [2, 3], [2, 0]],
             ("paper", "cites", "paper"): [[0, 1], [3, 2]],
             ("paper", "has_topic", "field_of_study"): [[1, 1]]}
    for (s, r, d), e in edges.items():
        _csv_gz(str(raw / "relations" / f"{s}___{r}___{d}" / "edge.csv.gz"), e)
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    _csv_gz(str(raw / "node-feat" / "paper" / "node-feat.csv.gz"), x)
    _csv_gz(str(raw / "node-label" / "paper" / "node-label.csv.gz"), [[1], [0], [2], [1]])
    for part, ids in (("train", [0, 1]), ("valid", [2]), ("test", [3])):
        _csv_gz(str(base / "split" / "time" / "paper" / f"{part}.csv.gz"), [[i] for i in ids])
    G = load("ogbn-mag", root=str(tmp_path), to_undirected=False)
    assert G.num_nodes == counts
    for key, e in edges.items():
        e = np.array(e).T
        ref = np.zeros((counts[key[2]], counts[key[0]]))
        ref[e[1], e[0]] = 1
        assert np.array_equal(G.relation(key).to_dense(), ref)
    assert np.array_equal(G.x["paper"], x) and G.y["paper"].tolist() == [1, 0, 2, 1]
    assert G.split("train", "paper").tolist() == [0, 1] and G.split("test", "paper").tolist() == [3]
    assert len(load_ogbn_mag(str(base)).edge_types) == 4          # the dataset folder itself
    with pytest.raises(spla.InvalidValue, match="ogbn-mag layout"):
        load_ogbn_mag(str(tmp_path / "missing"))
    with pytest.raises(spla.InvalidValue, match="NodePropPredDataset"):
        load("ogbn-mag", root=str(tmp_path / "missing"))


def test_from_pyg_heterodata():
    torch = pytest.importorskip("torch")
    HeteroData = pytest.importorskip("torch_geometric.data").HeteroData
    d = HeteroData()
    d["paper"].x = torch.randn(4, 3)
    d["paper"].y = torch.tensor([0, 1, 1, 0])
    d["paper"].train_mask = torch.tensor([True, True, False, False])
    d["author"].num_nodes = 2
    d["author", "writes", "paper"].edge_index = torch.tensor([[0, 1, 1], [0, 2, 3]])
    G = from_pyg(d)
    assert isinstance(G, HeteroGraph) and G.num_nodes == {"paper": 4, "author": 2}
    assert G.relation("writes").to_dense()[2].tolist() == [0.0, 1.0]
    assert G.split("train", "paper").tolist() == [0, 1] and G.num_classes == 2
    assert ("paper", "rev_writes", "author") in from_pyg(d, to_undirected=True).edge_types
