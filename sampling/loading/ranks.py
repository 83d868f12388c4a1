"""Where a loader's minibatches go: its communicator, the ranks' positions, the parts.

One job for ``NodeLoader``: from the sampler (local, on a ``DistMatrix``,
or a ``HeteroGraphSAGE`` on distributed relations), a given communicator
and the features, which ranks iterate together; with a partition, which
seeds each rank trains; and how the ranks' arguments are shown when they
disagree.
"""

from spla import comm as C
from spla.checks import describe, fail
from spla.exceptions import DTypeError, LayoutError

from sampling.loading.epochs import PartShares
from sampling.loading.features import FeatureStore


def distribution(sampler):
    """(comm, layout, by_process_row) of a sampler on distributed matrices, else None."""
    D = getattr(sampler, "D", None)
    if D is not None:
        return D.comm, D.layout, sampler.by_process_row
    mats = getattr(sampler, "mats", None)
    if getattr(sampler, "comm", None) is not None and mats:
        return sampler.comm, mats[0].layout, False   # HeteroGraphSAGE: node-wise
    return None


def comm_of(func, sampler, features, comm):
    """The loader's communicator: the sampler's, a given one, or a partitioned store's."""
    dist = distribution(sampler)
    if comm is not None and comm.Get_size() == 1:
        comm = None if dist is None else comm
    if dist is not None:
        if comm is not None and comm.Compare(dist[0]) not in (C.mpi().IDENT,
                                                              C.mpi().CONGRUENT):
            fail(LayoutError, func, "comm", "None or the communicator of the sampler's "
                 "distributed graph", f"another communicator (of {comm.Get_size()} rank(s))")
        return dist[0]
    if comm is not None:
        return comm
    if isinstance(features, FeatureStore) and not features.replicated:
        return features.comm
    return None


def part_shares(func, loader, partition):
    from spla.partition import Partition
    if not isinstance(partition, Partition):
        fail(DTypeError, func, "partition", "a spla.partition.Partition", describe(partition))
    dist = distribution(loader.sampler)
    c = 1 if dist is None else dist[1].c
    if partition.parts * c != loader._p:
        fail(LayoutError, func, "partition", f"{loader._p // c} part(s) (p / c for {loader._p} "
             f"rank(s), replication {c})", f"{partition.parts} parts")
    return PartShares(func, loader._seeds, partition, loader._p, c, loader.batch_size,
                      loader.drop_last)


def show_args(v):
    v = v.tolist()
    return (f"{v[0]} seeds (fingerprint {(v[1] << 32) | v[2]:#x}), batch_size {v[3]}, "
            f"shuffle={bool(v[4])}, drop_last={bool(v[5])}, seed {(v[6] << 32) | v[7]}, "
            f"bulk {'None' if v[8] < 0 else v[8]}, "
            f"memory_budget {'None' if v[9] < 0 else v[9]}")


__all__ = ["distribution", "comm_of", "part_shares", "show_args"]
