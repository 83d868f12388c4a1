"""Distributed sparse matrices over MPI: ``DistMatrix``, ``distribute``,
sparsity-aware row fetching and the 1.5D SpGEMM.

A ``DistMatrix`` holds, on each rank, the block rows its layout gives it
(``spla.layout``) as a local ``spla.Matrix``, with the global metadata beside
it (``shape``/``lshape``, ``nnz``/``lnnz``).  Every function marked
*Collective* must be called by every rank of the communicator, in the same
order.  Each checks all its arguments before its first message, inside
``spla.comm.collective_checks``: a bad argument on any one rank raises the
same exception class and message on every rank (marked with the rank it
came from), so a bad call never leaves a rank waiting.

The package, by job:

``spla.dist.core``
    the ``DistMatrix`` type, its factories (``distribute``, ``from_local``,
    ``from_generator``) and ``fetch_rows``;
``spla.dist.checks``
    the argument checks the entry points share (row ids, shapes, the
    agreed layout and partition);
``spla.dist.scatter``
    scatter from rank 0 and gather of whole matrices;
``spla.dist.wire``
    the wire format of rows (int32 ids, lengths and indices when the
    dimensions fit) and row slicing;
``spla.dist.fetch``
    the row-fetch strategies (``'direct'``, ``'pooled'``);
``spla.dist.placement``
    where a distributed result's rows live, and the checks that a mask or
    ``out`` is placed to match;
``spla.dist.spgemm``
    the 1.5D SpGEMM behind ``spla.mxm`` with distributed operands;
``spla.dist.elementwise``
    ``spla.apply``/``select``/``ewise_add``/``ewise_mult`` on DistMatrix
    operands, row by row (masks, ``out`` and ``accum`` included);
``spla.dist.vector_ops``
    ``spla.mxv``/``spla.vxm`` with a distributed matrix and a replicated
    vector (bit-identical to the single-process products).

Every message goes through ``spla.comm``.  See ``docs/distributed.rst``.

Examples
--------
>>> import numpy as np, spla
>>> from spla.dist import DistMatrix, distribute, fetch_rows
>>> D = distribute(spla.Matrix.from_dense(np.eye(4)))     # on one rank
>>> isinstance(D, DistMatrix), fetch_rows(D, [2, 0])[1].tolist()
(True, [0, 2])
"""

from spla.dist.core import DistMatrix, distribute, fetch_rows
from spla.dist.fetch import STRATEGIES
from spla.dist.elementwise import dist_apply, dist_ewise_add, dist_ewise_mult, dist_select
from spla.dist.spgemm import dist_mxm
from spla.dist.vector_ops import dist_mxv, dist_vxm
from spla.dist.wire import row_block, row_block_list, wire_int
from spla.layout import Layout, chunk, chunk_bounds

__all__ = ["DistMatrix", "distribute", "fetch_rows", "dist_mxm", "dist_mxv", "dist_vxm",
           "dist_apply", "dist_select", "dist_ewise_add", "dist_ewise_mult", "STRATEGIES",
           "row_block", "row_block_list", "wire_int", "chunk", "chunk_bounds", "Layout"]
