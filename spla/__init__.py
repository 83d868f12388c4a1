"""spla: GraphBLAS-style sparse linear algebra for sampling-based GNN training.

The local matrix type is ``Matrix`` (canonical CSR on the CPU or a GPU).
Operators are free functions in GraphBLAS vocabulary; ``mxm`` (and ``@``)
is lazy, and ``sample_rows`` is the row-wise inverse-transform sampler the
graph samplers are composed from.

Examples
--------
>>> import numpy as np
>>> import spla
>>> A = spla.Matrix.from_dense(np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], dtype=np.float32))
>>> Q = spla.Matrix.from_coo([0, 1], [2, 0], shape=(2, 3))   # select rows 2 and 0
>>> S = spla.sample_rows(Q @ A, 1, seed=42)                  # one neighbour each
>>> S.row_degrees()
array([1, 1])
"""

from spla import interop  # noqa: F401 - binds Matrix.from_scipy / from_cupyx / to_scipy / to_cupyx
from spla import semiring, sugar  # noqa: F401 - sugar binds A @ B, A.T, A[r, c], M.S, M.V
from spla import binary, monoid  # noqa: F401 - spla.binary.<name>, spla.monoid.<name>
from spla.dist import DistMatrix, distribute
from spla.diagonal import diag, scale_columns
from spla.edges import entry_positions, is_symmetric_pattern
from spla.elementwise import (apply, ewise_add, ewise_mult, normalize_rows,
                              reduce_columnwise, reduce_rowwise, select)
from spla.exceptions import (DeviceMismatch, DimensionMismatch, DTypeError,
                             IndexOutOfRange, InvalidCSR, InvalidValue,
                             LayoutError, MissingDependency, SplaError)
from spla.graphblas import assign, ewise_union, kronecker, mxv, reduce_scalar, vxm
from spla.mask import Mask
from spla.operators import BinaryOp
from spla.semiring import Monoid, Semiring
from spla.vector import Vector
from spla.extract import (extract, extract_blockwise, extract_cols, extract_rows,
                          extract_values)
from spla.matrix import Matrix
from spla.mxm import MxmExpr, mxm
from spla import partition  # noqa: F401 - spla.partition.block / metis
from spla.partition import Partition
from spla.hops import sample_hops
from spla.pending import Pending
from spla.layer_ops import importance_layer, normalize_scaled_rows, reduce_row_groups
from spla.sample import sample_rows
from spla.rows import take_rows
from spla.spmm import dropout, spmm
from spla.structure import (block_diag, compact_columns, compact_columns_blockwise,
                             split_blocks, transpose, vstack)
from spla.topk import select_topk

__version__ = "0.1.0"

__all__ = [
    "Matrix", "MxmExpr", "semiring", "DistMatrix", "distribute", "Partition",
    "mxm", "extract", "extract_rows", "extract_cols", "extract_blockwise",
    "compact_columns", "compact_columns_blockwise", "split_blocks",
    "reduce_rowwise", "reduce_columnwise", "apply", "select", "ewise_add", "ewise_mult",
    "transpose", "vstack", "block_diag", "normalize_rows", "sample_rows", "sample_hops",
    "Pending",
    "select_topk", "entry_positions", "is_symmetric_pattern", "spmm", "dropout", "take_rows",
    "SplaError", "DimensionMismatch", "InvalidValue", "IndexOutOfRange",
    "DTypeError", "DeviceMismatch", "InvalidCSR", "LayoutError",
    "MissingDependency",
    "Vector", "Mask", "BinaryOp", "Monoid", "Semiring", "binary", "monoid",
    "mxv", "vxm", "assign", "reduce_scalar", "kronecker", "ewise_union",
    "diag", "scale_columns", "extract_values", "normalize_scaled_rows", "reduce_row_groups",
    "importance_layer",
]
