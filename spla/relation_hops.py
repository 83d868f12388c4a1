"""One node-wise hop over several relations sharing a source type: ``RelationStack``.

In a heterogeneous graph each relation ``j`` is a matrix ``A_j`` (rows: its
destination type, ``n_j`` of them; columns: the source type, shared by the
stack).  One hop of a heterogeneous node-wise sampler, for the relations
out of one source type, is the composition::

    for each relation j:
        S_j = sample_rows(selection(frontier_j) @ A_j, k_j, seed=seed, stream=stream,
                          row_ids=(group_id * num_relations + relation_ids[j]) * n_j
                                  + frontier_j)
    C = the rows of every S_j, minibatch-major, relation-minor
    M, src, src_ptr = compact_columns_blockwise(C, ..., first=first, first_ptr=first_ptr)

``RelationStack.sample_hop`` returns the same blocks.  On the CPU, for
uniform draws without replacement, it runs fused: the stacked relations
are sampled and every minibatch's columns relabelled in one pass
(``kernels.cpu.relation_hops``), each row's picks while in cache.  The
other draws (weighted, with replacement), and matrices on a GPU, run the
composition operator by operator (see ``RelationStack.fused``).
"""

import numpy as np

from spla import backend
from spla.arrays import readonly
from spla.checks import as_int, as_u64, describe, fail, index_dtype
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.matrix import Matrix
from spla.sample import K_ALL, sample_rows
from spla.structure import compact_columns_blockwise, split_blocks


class RelationStack:
    """The relations of a heterogeneous graph that share a source type, for
    sampling a node-wise hop of all of them at once (``sample_hop``).

    Parameters
    ----------
    mats : list of Matrix
        ``A_j``, ``n_j x n`` (rows: relation j's destination type, columns:
        the shared source type), all on one device.
    relation_ids : list of int
        Each relation's id among the graph's ``num_relations`` (keys its
        draws).
    num_relations : int
        The graph's relation count.

    Raises
    ------
    DTypeError
        ``mats`` not a list of ``spla.Matrix``.
    DimensionMismatch
        Matrices of different column counts, ``relation_ids`` of another
        length.
    InvalidValue
        Matrices on different devices, a relation id outside
        ``[0, num_relations)``.

    Notes
    -----
    The fused CPU path keeps one stacked copy of the matrices' patterns
    (built at the first fused hop): sampling reads a single CSR matrix.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.relation_hops import RelationStack
    >>> cites = spla.Matrix.from_coo([0, 1, 2], [1, 2, 0], shape=(3, 3))    # paper <- paper
    >>> writes = spla.Matrix.from_coo([0, 0, 1], [0, 2, 1], shape=(2, 3))   # author <- paper
    >>> st = RelationStack([cites, writes], [0, 1], 2)
    >>> blocks, src, src_ptr = st.sample_hop(
    ...     [(np.array([0, 2]), np.array([0, 1, 2])), (np.array([1, 0]), np.array([0, 1, 2]))],
    ...     [-1, -1], np.array([0, 2]), np.array([0, 1, 2]), seed=0, stream=0)
    >>> src.tolist(), src_ptr.tolist()     # each minibatch: its papers, then new ones
    ([0, 1, 2, 0], [0, 2, 4])
    >>> blocks[1][1].to_dense()            # minibatch 1, author 0 wrote papers 0 and 2
    array([[1., 1.]])
    """

    def __init__(self, mats, relation_ids, num_relations):
        func = "RelationStack"
        if isinstance(mats, Matrix) or not isinstance(mats, (list, tuple)) or not mats:
            fail(DTypeError, func, "mats", "a non-empty list of spla.Matrix", describe(mats))
        for j, A in enumerate(mats):
            if not isinstance(A, Matrix):
                fail(DTypeError, func, f"mats[{j}]", "a spla.Matrix", describe(A))
            if A.ncols != mats[0].ncols:
                fail(DimensionMismatch, func, f"mats[{j}]",
                     f"{mats[0].ncols} columns (as mats[0])", A.ncols)
            if A.device != mats[0].device:
                fail(InvalidValue, func, f"mats[{j}]", f"on {mats[0].device} (as mats[0])",
                     A.device)
        self.num_relations = as_int(func, "num_relations", num_relations, minimum=1)
        if not hasattr(relation_ids, "__len__") or len(relation_ids) != len(mats):
            fail(DimensionMismatch, func, "relation_ids", f"{len(mats)} ids (one per matrix)",
                 describe(relation_ids))
        self.relation_ids = [as_int(func, f"relation_ids[{j}]", r, minimum=0)
                             for j, r in enumerate(relation_ids)]
        for j, r in enumerate(self.relation_ids):
            if r >= self.num_relations:
                fail(InvalidValue, func, f"relation_ids[{j}]",
                     f"an id below num_relations = {self.num_relations}", r)
        self.mats = list(mats)
        self.ncols = mats[0].ncols
        self._stacked = None

    def fused(self, replace=False, weighted=False):
        """Whether ``sample_hop`` runs fused (one kernel) for these draws.

        On the CPU, uniform draws without replacement of a source type of
        at most ``kernels.cpu.hops.FUSED_MAX_VERTICES`` vertices: the
        kernel is the twin of ``kernels.cpu.hops``, which fuses those draws
        only, and for the same reason (a worker's column map, 4 bytes a
        column, must stay in cache).  On a GPU the composition runs: its
        operators have CUDA kernels, and a fused relation hop has no CUDA
        twin.

        Examples
        --------
        >>> import spla
        >>> from spla.relation_hops import RelationStack
        >>> st = RelationStack([spla.Matrix.from_coo([0], [1], shape=(2, 2))], [0], 1)
        >>> st.fused(), st.fused(replace=True), st.fused(weighted=True)
        (True, False, False)
        """
        return (self.mats[0].device == backend.CPU and not replace and not weighted
                and self.ncols <= backend.kernels_for(backend.CPU).hops.FUSED_MAX_VERTICES)

    def sample_hop(self, frontiers, ks, first, first_ptr, *, seed, stream, group_ids=None,
                   replace=False, weighted=False):
        """Sample one hop of every relation and relabel each minibatch's columns.

        Parameters
        ----------
        frontiers : list of (int array, int array)
            Per relation ``j``, its destinations ``nodes_j`` (rows of
            ``A_j``, on the matrices' device) and their host group pointer
            ``ptr_j`` (G + 1 offsets; a group may be empty).  Trusted: in
            range, distinct within a group.
        ks : list of int
            Picks per row of each relation: >= 1, -1 for every entry, 0
            for none.
        first, first_ptr : int arrays
            Each minibatch's leading columns (its source-type destinations),
            ``first[first_ptr[g]:first_ptr[g + 1]]``; trusted as ``frontiers``
            are (in range, distinct in a group).
        seed, stream : int
            As ``sample_rows``.
        group_ids : sequence of int, optional
            Minibatch ids (default ``0 .. G-1``), keying the draws.
        replace, weighted : bool, default False
            As ``sample_rows`` (a block's values then count the draws, or
            are the sampled weights); these run the composition.

        Returns
        -------
        blocks : list of list of Matrix
            ``blocks[j][g]``: relation j's block of minibatch g,
            ``|nodes_j of g| x |src of g|``.
        src : int64 array
            Every minibatch's columns (``first`` of it, then the new ones
            in order of first appearance), minibatch after minibatch.
        src_ptr : host int64 array, shape (G + 1,)

        Raises
        ------
        DimensionMismatch
            ``frontiers``, ``ks`` or ``group_ids`` of the wrong length, a
            group pointer of another group count than ``first_ptr``.
        InvalidValue
            A count below -1, a seed or stream out of range.

        Examples
        --------
        >>> import numpy as np, spla
        >>> from spla.relation_hops import RelationStack
        >>> A = spla.Matrix.from_coo([0, 0, 0], [0, 1, 2], shape=(1, 3))
        >>> blocks, src, src_ptr = RelationStack([A], [0], 1).sample_hop(
        ...     [(np.array([0]), np.array([0, 1]))], [2], np.array([], np.int64),
        ...     np.array([0, 0]), seed=3, stream=0)
        >>> blocks[0][0].nnz, src.size, src_ptr.tolist()    # 2 of the row's 3 entries
        (2, 2, [0, 2])
        """
        func = "RelationStack.sample_hop"
        J = len(self.mats)
        if not hasattr(frontiers, "__len__") or len(frontiers) != J:
            fail(DimensionMismatch, func, "frontiers", f"{J} (nodes, ptr) pairs",
                 describe(frontiers))
        if not hasattr(ks, "__len__") or len(ks) != J:
            fail(DimensionMismatch, func, "ks", f"{J} counts", describe(ks))
        ks = [as_int(func, f"ks[{j}]", k, minimum=-1) for j, k in enumerate(ks)]
        seed, stream = as_u64(func, "seed", seed), as_u64(func, "stream", stream)
        fptr = np.asarray(backend.to_host(first_ptr), np.int64)
        G = fptr.size - 1
        ptrs = [np.asarray(backend.to_host(p), np.int64) for _, p in frontiers]
        for j, p in enumerate(ptrs):
            if p.size != G + 1:
                fail(DimensionMismatch, func, f"frontiers[{j}]", f"{G + 1} group offsets",
                     p.size)
        ids = (np.arange(G, dtype=np.int64) if group_ids is None
               else np.asarray(group_ids, np.int64))
        if ids.size != G:
            fail(DimensionMismatch, func, "group_ids", f"{G} ids (one per group)", ids.size)
        if self.fused(replace, weighted):
            return self._fused(frontiers, ptrs, ks, first, fptr, ids, seed, stream)
        return self._composed(frontiers, ptrs, ks, first, fptr, ids, seed, stream, replace,
                              weighted)

    def _keys(self, j, ids):
        """Relation j's row-id base per group: ``(id * R + r_j) * n_j``."""
        return (ids * self.num_relations + self.relation_ids[j]) * self.mats[j].nrows

    def _stack(self):
        """The matrices' patterns stacked (built once) and each one's first row."""
        if self._stacked is None:
            rows = np.cumsum([0] + [A.nrows for A in self.mats])
            ptr = np.concatenate([np.zeros(1, np.int64)] + [
                np.asarray(A.indptr[1:], np.int64) + sum(int(B.nnz) for B in self.mats[:j])
                for j, A in enumerate(self.mats)])
            idx = np.concatenate([np.asarray(A.indices, np.int64) for A in self.mats])
            self._stacked = (ptr, idx.astype(index_dtype(self.ncols)), rows[:-1])
        return self._stacked

    def _fused(self, frontiers, ptrs, ks, first, fptr, ids, seed, stream):
        import numba
        # CPU only (``fused``); kernels.cpu's package does not list this module.
        from kernels.cpu.relation_hops import relation_hop
        J, G = len(self.mats), fptr.size - 1
        a_ptr, a_idx, row_off = self._stack()
        nodes = [np.asarray(n, np.int64) for n, _ in frontiers]
        base = np.cumsum([0] + [n.size for n in nodes])[:-1]
        # Blocks minibatch-major, relation-minor: block g * J + j.
        sizes = np.stack([np.diff(p) for p in ptrs], axis=1)  # (G, J)
        bp = np.zeros(G * J + 1, np.int64)
        np.cumsum(sizes.ravel(), out=bp[1:])
        seg = (np.stack(ptrs, axis=1)[:-1] + base).ravel()
        # Per-block arrays, fresh and writable (one compiled signature).
        roff = np.tile(np.asarray(row_off, np.int64), G)
        kbase = np.stack([self._keys(j, ids) for j in range(J)], axis=1).ravel()
        kb = np.tile(np.asarray(ks, np.int64), G)
        out_type = np.empty(0, index_dtype(self.ncols))
        bptr, bidx, src, src_ptr, optr = relation_hop(
            a_ptr, a_idx, np.concatenate(nodes), bp, np.ascontiguousarray(seg, np.int64),
            roff, np.ascontiguousarray(kbase, np.int64), kb, np.asarray(first, np.int64), fptr,
            np.int64(self.ncols),
            np.uint64(seed), np.uint64(stream), numba.get_num_threads(), out_type)
        bptr, bidx = readonly(bptr), readonly(bidx)
        new = Matrix._new_device
        b, e, s = bp.tolist(), optr[bp].tolist(), src_ptr.tolist()
        blocks = [[new(bptr[b[g * J + j] + g * J + j:b[g * J + j + 1] + g * J + j + 1],
                       bidx[e[g * J + j]:e[g * J + j + 1]], None,
                       (b[g * J + j + 1] - b[g * J + j], s[g + 1] - s[g]))
                   for g in range(G)] for j in range(J)]
        return blocks, src, src_ptr

    def _composed(self, frontiers, ptrs, ks, first, fptr, ids, seed, stream, replace,
                  weighted):
        """The hop operator by operator (GPU matrices, weighted or replacing draws)."""
        from spla import extract_rows, vstack
        from spla.hops import selection
        from spla.mxm import mxm
        from spla import semiring
        J, G = len(self.mats), fptr.size - 1
        xp = backend.xp_of_array(first) if hasattr(first, "shape") else np
        parts = []
        for j, A in enumerate(self.mats):
            nodes, p = frontiers[j]
            if ks[j] == 0 or not len(nodes):
                vals = (xp.zeros(0, np.float32) if replace else
                        xp.zeros(0, A.values.dtype) if weighted else None)
                parts.append(Matrix.from_csr(xp.zeros(len(nodes) + 1, np.int64),
                                             xp.zeros(0, np.int64), vals,
                                             (len(nodes), self.ncols), check=False,
                                             copy=False))
                continue
            Q = selection(nodes, A.nrows)
            P = Q @ A if weighted else mxm(Q, A.structure(), semiring.any_pair)
            group = xp.asarray(np.repeat(self._keys(j, ids), np.diff(p)))
            every = ks[j] == -1
            S = sample_rows(P, K_ALL if every else ks[j], seed=seed, stream=stream,
                            row_ids=group + nodes, replace=replace and not every,
                            return_counts=replace)
            if replace:
                S = S[0].with_values(S[1].astype(np.float32))
            parts.append(S)
        grp = np.concatenate([np.repeat(np.arange(G), np.diff(p)) for p in ptrs])
        rel_of = np.concatenate([np.full(int(p[-1]), j, np.int64) for j, p in enumerate(ptrs)])
        order = np.lexsort((rel_of, grp))
        C = extract_rows(vstack(parts), xp.asarray(order)) if J > 1 else parts[0]
        row_ptr = np.zeros(G + 1, np.int64)
        np.cumsum(np.bincount(grp, minlength=G), out=row_ptr[1:])
        M, src, src_ptr = compact_columns_blockwise(C, row_ptr, first=first, first_ptr=fptr,
                                                    check=False)
        src_ptr = np.asarray(backend.to_host(src_ptr), np.int64)
        rel_sorted = rel_of[order]
        blocks = [split_blocks(M if J == 1 else extract_rows(M, xp.asarray(
                      np.flatnonzero(rel_sorted == j))), ptrs[j], src_ptr, check=False)
                  for j in range(J)]
        return blocks, src, src_ptr


__all__ = ["RelationStack"]
