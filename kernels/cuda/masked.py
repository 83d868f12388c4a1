"""Masked products, CUDA: twins of ``kernels.cpu.masked``.

One thread per output row runs the row steps the CPU kernels run
(``kernels.semiring_ops.masked_row`` and ``pull_row``): a row writes only
its own mask slots or its own output position, so no atomics are needed and
the results are those of the CPU, bit for bit.  ``vxm`` on a GPU is a pull
on A's transpose (``flip=True``) rather than a push, whose scatter would
need an atomic per monoid.
"""

from numba import cuda

import numpy as np

from kernels.cuda._util import SIM, _xp, device, launch
from kernels.semiring_ops import dot_row as _dot_row
from kernels.semiring_ops import masked_row as _masked_row
from kernels.semiring_ops import pull_row as _pull_row

masked_row = device(_masked_row)
dot_row = device(_dot_row)
pull_row = device(_pull_row)


def _plain(args):
    """Under the simulator, host arrays of a cupy stand-in as plain numpy views.

    A stand-in's element reads return 0-d arrays (as cupy's do on the host),
    which the simulated device code cannot mix with scalars.
    """
    if not SIM:
        return args
    return [a.view(np.ndarray) if isinstance(a, np.ndarray) else a for a in args]


@cuda.jit(cache=True)
def _masked_spgemm(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, m_ptr, m_idx, m_ok,
                   add, mul, one, out_val, hit):
    n = a_ptr.size - 1
    onev = one[0]
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        masked_row(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, m_ptr, m_idx,
                   m_ok, add, mul, onev, out_val, hit)


def masked_spgemm(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, m_ptr, m_idx, m_ok,
                  add, mul, one):
    """(out_val, hit): one slot per mask entry; see ``kernels.cpu.masked``."""
    return _per_row(_masked_spgemm, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                    m_ptr, m_idx, m_ok, add, mul, one)


def _per_row(kernel, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, m_ptr, m_idx,
             m_ok, add, mul, one):
    """Launch a one-thread-per-row masked kernel into fresh (out_val, hit) arrays."""
    xp = _xp(a_ptr)
    out_val = xp.empty(m_idx.size, one.dtype)
    hit = xp.zeros(m_idx.size, bool)
    n = a_ptr.size - 1
    if n > 0 and m_idx.size and a_idx.size:
        launch(kernel, n, *_plain([a_ptr, a_idx, a_val, bool(a_hv), b_ptr, b_idx, b_val,
                                   bool(b_hv), m_ptr, m_idx, m_ok, add, mul, one, out_val,
                                   hit]))
    return out_val, hit


@cuda.jit(cache=True)
def _masked_dot(a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_ptr, m_idx, m_ok,
                add, mul, one, out_val, hit):
    n = a_ptr.size - 1
    onev = one[0]
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        dot_row(i, a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_ptr, m_idx,
                m_ok, add, mul, onev, out_val, hit)


def masked_dot(a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_ptr, m_idx, m_ok,
               add, mul, one):
    """(out_val, hit) by dot products; see ``kernels.cpu.masked.masked_dot``."""
    return _per_row(_masked_dot, a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv,
                    m_ptr, m_idx, m_ok, add, mul, one)


@cuda.jit(cache=True)
def _mxv_pull(a_ptr, a_idx, a_val, a_hv, u_val, u_has, allow, add, mul, one, flip, w, w_has):
    n = a_ptr.size - 1
    onev = one[0]
    everything = allow.size == 0
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        if everything or allow[i]:
            pull_row(i, a_ptr, a_idx, a_val, a_hv, u_val, u_has, add, mul, onev, flip, w, w_has)


def mxv_pull(a_ptr, a_idx, a_val, a_hv, u_val, u_has, allow, add, mul, one, flip):
    """(w, w_has) dense; see ``kernels.cpu.masked.mxv_pull``."""
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    w = xp.empty(max(n, 0), one.dtype)
    w_has = xp.zeros(max(n, 0), bool)
    if n > 0 and a_idx.size:
        launch(_mxv_pull, n, *_plain([a_ptr, a_idx, a_val, bool(a_hv), u_val, u_has, allow,
                                      add, mul, one, bool(flip), w, w_has]))
    return w, w_has
