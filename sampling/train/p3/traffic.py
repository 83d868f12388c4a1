"""The bytes one rank sends per step: the row fetch against push-pull, and their crossover width.

Row fetch traffic grows with the feature width ``f``, push-pull's with the
hidden width: ``byte_model`` predicts both for a minibatch shape, and the
width above which push-pull sends less.  ``benchmarks/bench_p3.py``
compares it with the bytes ``spla.comm`` counts.
"""

import numpy as np

from spla.checks import as_int, fail
from spla.exceptions import InvalidValue


def byte_model(*, f, hidden, batch, fanouts, p, itemsize=4, index_size=8, sage=True,
               input_rows=None, dst_rows=None):
    """Bytes one rank sends per step: row fetch versus push-pull.

    A minibatch of ``batch`` seeds sampled with ``fanouts`` (output layer
    first, as the samplers take them) reads at most
    ``n_in = batch * prod(1 + k)`` input vertices, ``n_dst = n_in / (1 +
    fanouts[-1])`` of them destinations of the first block.  That bound
    ignores repeated vertices, which real graphs have, so it overestimates
    the rows (``docs/p3.rst`` quotes by how much); pass the measured means
    as ``input_rows`` / ``dst_rows`` for a prediction to compare with
    counted bytes.

    * Row fetch (1D rows, uniform owners): ``(p-1)/p`` of the rows live
      elsewhere; each costs an id (``index_size``) and a row
      (``f * itemsize``).
    * Push-pull: the reduce-scatter sends the summed buffer of all ``p``
      minibatches less this rank's own, ``(p-1) * rows * hidden`` values
      (``rows = n_in``, plus ``n_dst`` for GraphSAGE's root head); the
      backward all-gather sends this rank's gradients to ``p-1`` ranks,
      the same count.  (Every minibatch the same size: with unequal ones
      these are the means over the ranks.)

    Returns
    -------
    dict
        'row_fetch', 'push_pull' (bytes per rank per step), 'input_rows',
        'dst_rows' and 'crossover_f' (the f above which push-pull sends
        less).

    Examples
    --------
    >>> m = byte_model(f=1024, hidden=64, batch=10, fanouts=[], p=4, sage=False)
    >>> m["row_fetch"], m["push_pull"]
    (30780, 15360)
    >>> byte_model(f=8, hidden=4, batch=2, fanouts=[3, 2], p=2)["input_rows"]
    24
    """
    func = "byte_model"
    f = as_int(func, "f", f, minimum=1)
    hidden = as_int(func, "hidden", hidden, minimum=1)
    batch = as_int(func, "batch", batch, minimum=0)
    p = as_int(func, "p", p, minimum=1)
    fan = [as_int(func, "fanouts", k, minimum=0) for k in fanouts]
    n_in, n_dst = batch, 0
    for k in fan:  # output layer first: the last fanout reaches the input layer
        n_in, n_dst = n_in * (1 + k), n_in
    if input_rows is not None:
        n_in = _as_count(func, "input_rows", input_rows)
    if dst_rows is not None:
        n_dst = _as_count(func, "dst_rows", dst_rows)
    if n_dst > n_in:
        fail(InvalidValue, func, "dst_rows", f"at most the input rows ({n_in})", n_dst)
    frac = (p - 1) / p
    fetch = frac * n_in * (index_size + f * itemsize)
    rows = n_in + (n_dst if sage else 0)
    push = 2 * (p - 1) * rows * hidden * itemsize
    # Push-pull wins once f * itemsize * frac * n_in exceeds push - id bytes.
    per_f = frac * n_in * itemsize
    cross = (push - frac * n_in * index_size) / per_f if per_f else float("inf")
    return {"row_fetch": int(round(fetch)), "push_pull": int(round(push)),
            "input_rows": n_in, "dst_rows": n_dst, "crossover_f": cross}


def _as_count(func, arg, x):
    """A non-negative count, integral or a measured mean (float)."""
    if isinstance(x, (float, np.floating)):
        if not (np.isfinite(x) and x >= 0):
            fail(InvalidValue, func, arg, "a count >= 0 (an integer or a finite mean)", x)
        return float(x)
    return as_int(func, arg, x, minimum=0)


__all__ = ["byte_model"]
