"""Datasets: the ``Dataset`` type, the embedded graphs, the generators and the loaders.

* ``load(name_or_path)``: ``"cora"``, ``"citeseer"`` (shipped in the
  package), ``"rmat:SCALE"`` (seeded synthetic), ``"ogbn-*"`` (OGB's
  on-disk layout) or the path of a graph in the npz format;
* ``load_npz`` / ``save_npz``: that format, read and written;
* ``from_pyg``, ``from_scipy``: a graph already in memory;
* ``rmat_dataset``: the synthetic generator;
* ``HeteroGraph``, ``mag_dataset`` (``'mag:SCALE'``), ``load_ogbn_mag``
  (``'ogbn-mag'``): heterogeneous graphs.

Modules: ``dataset`` (the type and its checks), ``loaders`` (the entry
points above), ``ogb`` (OGB's layout and cache), ``synthetic`` (the
generators), ``validation`` (the checks every entry point shares).
"""

from sampling.datasets.dataset import Dataset
from sampling.datasets.loaders import (DATA_DIR, EMBEDDED, from_pyg, from_scipy, load,
                                       load_npz, save_npz, symmetrize)
from sampling.datasets.synthetic import rmat_dataset
from sampling.datasets.hetero import HeteroGraph
from sampling.datasets.mag import load_ogbn_mag, mag_dataset

__all__ = ["Dataset", "DATA_DIR", "EMBEDDED", "from_pyg", "from_scipy", "load", "load_npz",
           "save_npz", "symmetrize", "rmat_dataset", "HeteroGraph", "mag_dataset",
           "load_ogbn_mag"]
