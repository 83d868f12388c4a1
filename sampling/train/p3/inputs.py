"""Every rank's layer-1 input vertices of a step, which push-pull needs on every rank.

Sampling is rank-invariant (the same seeds give the same samples on every
rank), so each rank could sample every minibatch of the step itself;
``share_inputs`` instead all-gathers each rank's ``StepInput`` (its
minibatch's input rows and first-block destinations), counted by
``spla.comm`` under ``'p3.inputs'``.
"""

import numpy as np

from spla import comm as C
from spla.checks import as_index_array, as_int, fail
from spla.exceptions import DimensionMismatch


class StepInput:
    """What push-pull needs of another rank's minibatch: its layer-1 input rows.

    Attributes
    ----------
    input_nodes : int64 array
        ``blocks[0].src_nodes`` of that minibatch.
    num_dst : int
        ``blocks[0].num_dst`` (its first rows: GraphSAGE's root weight
        reads them).

    Examples
    --------
    >>> import numpy as np
    >>> StepInput(np.array([4, 1, 7]), 1)
    StepInput(3 input rows, 1 destinations)
    """

    __slots__ = ("input_nodes", "num_dst")

    def __init__(self, input_nodes, num_dst):
        self.input_nodes = np.asarray(input_nodes, np.int64)
        self.num_dst = as_int("StepInput", "num_dst", num_dst, minimum=0)
        if self.num_dst > self.input_nodes.size:
            fail(DimensionMismatch, "StepInput", "num_dst", f"at most the {self.input_nodes.size}"
                 " input rows", self.num_dst)

    @classmethod
    def of(cls, minibatch):
        """The layer-1 input of a MiniBatch."""
        return cls(minibatch.input_nodes, minibatch.blocks[0].num_dst)

    def __repr__(self):
        return f"StepInput({self.input_nodes.size} input rows, {self.num_dst} destinations)"


def share_inputs(minibatch, comm):
    """Collective: every rank's layer-1 input (``StepInput`` or None), in rank order.

    The alternative to sampling every minibatch of the step on every rank
    (rank-invariant sampling makes both give the same lists).  Which is
    cheaper: this all-gather sends ``(p - 1) * n_in * 8`` bytes per rank,
    under 2 % of push-pull's own ``2 (p - 1) * n_in * hidden * 4`` for
    ``hidden >= 64``; sampling every minibatch costs no bytes but ``p``
    times the sampling work.  Share the inputs unless sampling is much
    cheaper than moving ``8 * n_in`` bytes per minibatch (a fast sampler on
    a slow network).  Bytes are counted under ``'p3.inputs'``.

    Parameters
    ----------
    minibatch : MiniBatch or None
        This rank's minibatch of the step (None when it has none).
    comm : MPI communicator or None
        ``None``: one rank, returns ``[StepInput.of(minibatch)]``.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from sampling import GraphSAGE as Sampler
    >>> A = spla.Matrix.from_coo([0, 1], [1, 0], shape=(2, 2))
    >>> mb = Sampler(A, [1]).sample([np.array([0])], seed=0)[0]
    >>> share_inputs(mb, None)
    [StepInput(2 input rows, 1 destinations)]
    """
    mine = None if minibatch is None else (minibatch if isinstance(minibatch, StepInput)
                                           else StepInput.of(minibatch))
    if comm is None or comm.Get_size() == 1:
        return [mine]
    with C.collective_checks(comm):
        ids = (np.zeros(0, np.int64) if mine is None
               else as_index_array("share_inputs", "minibatch", mine.input_nodes))
    meta = C.allgather_int(comm, [0 if mine is None else 1,
                                  0 if mine is None else mine.num_dst])
    allids, counts = C.allgatherv(comm, np.ascontiguousarray(ids, np.int64), "p3.inputs")
    starts = np.concatenate([[0], np.cumsum(counts)])
    return [StepInput(allids[starts[i]:starts[i + 1]], int(meta[i, 1])) if meta[i, 0] else None
            for i in range(comm.Get_size())]


__all__ = ["StepInput", "share_inputs"]
