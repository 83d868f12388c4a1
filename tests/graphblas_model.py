"""A plain-Python model of the GraphBLAS C API write rules, shared by the tests.

An object is a dict {position: value}; ``ref_write`` writes a result T
into C by the C API rules (Z = accum(C, T) on the union, or T; inside the
mask Z, outside C or nothing with replace).  Operators are computed on the
dicts, independently of spla (``ref_mxm``, ``ref_mxv``).  Values drawn by
the strategies are small integers (stored as float64), so every sum is
exact whatever the order.  Used by ``tests/spla/test_masks.py`` (local
operators) and ``tests/spla/test_dist_masked.py`` (DistMatrix operands).
"""

import numpy as np
from hypothesis import strategies as st

from spla import Matrix, Vector

MASK_KINDS = (None, "S", "V", "~S", "~V")


# ---- the model ---------------------------------------------------------------
def as_dict(X):
    if isinstance(X, Vector):
        vals = np.ones(X.nvals) if X.values is None else X.values
        return {int(i): float(v) for i, v in zip(X.indices, vals)}
    S = X.to_scipy().tocoo()
    return {(int(i), int(j)): float(v) for i, j, v in zip(S.row, S.col, S.data)}


def mask_allows(kind, M, pos):
    if kind is None:
        return True
    d = as_dict(M)
    inside = pos in d if kind.endswith("S") else d.get(pos, 0) != 0
    return inside != kind.startswith("~")


def ref_write(T, C, mkind, M, accum, replace):
    if C is None:
        C = {}
    if accum is None:
        Z = dict(T)
    else:
        Z = dict(C)
        for p, v in T.items():
            Z[p] = accum(C[p], v) if p in C else v
    out = {}
    for p in set(Z) | set(C):
        if mask_allows(mkind, M, p):
            if p in Z:
                out[p] = Z[p]
        elif not replace and p in C:
            out[p] = C[p]
    return out


def mask_of(kind, M):
    if kind is None:
        return None
    m = M.S if kind.endswith("S") else M.V
    return ~m if kind.startswith("~") else m


# ---- strategies ----------------------------------------------------------------
@st.composite
def matrices(draw, shape):
    m, n = shape
    cells = draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, n - 1),
                                    st.integers(-2, 3)), max_size=m * n, unique_by=lambda t: t[:2]))
    r = np.array([c[0] for c in cells], np.int64)
    c = np.array([c[1] for c in cells], np.int64)
    v = np.array([c[2] for c in cells], np.float64)
    return Matrix.from_coo(r, c, v, shape=shape)


@st.composite
def vectors(draw, n):
    cells = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(-2, 3)), max_size=n,
                          unique_by=lambda t: t[0]))
    return Vector.from_coo(np.array([c[0] for c in cells], np.int64),
                           np.array([c[1] for c in cells], np.float64), size=n)


# ---- plain-Python operator references -------------------------------------------
def ref_mxm(A, B, add=lambda x, y: x + y, mul=lambda x, y: x * y):
    a, b = as_dict(A), as_dict(B)
    out = {}
    for (i, k), x in sorted(a.items()):
        for (k2, j), y in sorted(b.items()):
            if k == k2:
                t = mul(x, y)
                out[(i, j)] = add(out[(i, j)], t) if (i, j) in out else t
    return out


def ref_mxv(A, u):
    a, w, T = as_dict(A), as_dict(u), {}
    for (i, k), x in sorted(a.items()):
        if k in w:
            T[i] = T.get(i, 0.0) + x * w[k]
    return T
