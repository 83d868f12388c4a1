"""The job's table (header and rows) and the phase plot."""

import math

import numpy as np

from sampling.train.options import PHASES

_COLS = [("epoch", 5), ("loss", 7), ("val acc", 7), ("sample s", 8), ("fetch s", 7),
         ("fwd/bwd s", 9), ("allreduce s", 11), ("eval s", 7), ("SEPS", 9), ("MB moved", 8),
         ("MB smp/feat/grad", 16)]
# Only with prefetch (after "fetch s"): the training loop's seconds blocked
# waiting for the next bulk, and the share of sample + fetch hidden behind
# training (sample s and fetch s are then background seconds).
_PREFETCH_COLS = [("wait s", 7), ("overlap", 7)]
# Only on a GPU (--device cuda): the background seconds copying staged bulks
# to the device, and the epoch's wall time over the sum of its phases.
_GPU_COLS = [("copy s", 7), ("ep/sum", 6)]
_CACHE_COL = ("cache hit", 9)  # only with a feature cache (--feature-cache)
_AFTER_FETCH = 5


def _columns(cache, prefetch, gpu=False):
    cols = list(_COLS)
    if gpu:
        cols[_AFTER_FETCH:_AFTER_FETCH] = _GPU_COLS
    if prefetch:
        cols[_AFTER_FETCH:_AFTER_FETCH] = _PREFETCH_COLS
    if cache:
        cols.append(_CACHE_COL)
    return cols


def table_line(columns, cells=None):
    """One line of a fixed-width table: each cell right-aligned to its column, two spaces apart.

    Every table the training jobs print (this module's and BNS-GCN's,
    ``sampling.train.bns.report``) is made of these lines.

    Parameters
    ----------
    columns : sequence of (str, int)
        The columns' names and widths.
    cells : sequence of str, optional
        One formatted value per column; default: the names (the header).

    Returns
    -------
    str

    Examples
    --------
    >>> cols = [("epoch", 5), ("loss", 7)]
    >>> table_line(cols)
    'epoch     loss'
    >>> table_line(cols, ["3", "0.6931"])
    '    3   0.6931'
    """
    if cells is None:
        cells = [name for name, _ in columns]
    return "  ".join(v.rjust(w) for v, (_, w) in zip(cells, columns))


def header(cache=False, prefetch=False, gpu=False):
    """The table's header line.

    ``cache``: with the feature cache's hit-rate column; ``prefetch``: with
    the ``wait s`` and ``overlap`` columns (after ``fetch s``); ``gpu``:
    with ``copy s`` and ``ep/sum`` (after those).

    Examples
    --------
    >>> header(prefetch=True).split()[:8]
    ['epoch', 'loss', 'val', 'acc', 'sample', 's', 'fetch', 's']
    >>> "wait s" in header(prefetch=True), "wait s" in header()
    (True, False)
    """
    return table_line(_columns(cache, prefetch, gpu))


def format_row(s, cache=False, prefetch=False, gpu=False):
    """One table row for ``EpochStats`` s (``cache`` and ``prefetch`` as for ``header``).

    ``overlap`` is ``1 - wait / (sample + fetch)``, '-' for an epoch that
    ran without prefetch.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> times = {"sample": 0.5, "fetch": 0.25, "fwd/bwd": 1.0, "allreduce": 0.0, "eval": 0.1}
    >>> s = SimpleNamespace(epoch=1, loss=1.25, val_acc=0.5, times=times, seps=25000.0,
    ...                     bytes_moved=3e6, bytes_by_phase={"sample": 1e6, "features": 1.5e6,
    ...                                                      "gradients": 5e5, "other": 0})
    >>> format_row(s).split()
    ['1', '1.2500', '0.5000', '0.500', '0.250', '1.000', '0.000', '0.100', '25.00k', '3.00', \
'1.00/1.50/0.50']
    """
    t = s.times
    vals = [f"{s.epoch:d}", f"{s.loss:.4f}", f"{s.val_acc:.4f}", f"{t['sample']:.3f}",
            f"{t['fetch']:.3f}", f"{t['fwd/bwd']:.3f}", f"{t['allreduce']:.3f}",
            f"{t['eval']:.3f}", _si(s.seps), f"{s.bytes_moved / 1e6:.2f}", _by_phase(s)]
    if gpu:
        r = s.phase_ratio
        vals[_AFTER_FETCH:_AFTER_FETCH] = [f"{s.copy:.3f}",
                                           f"{r:.2f}" if math.isfinite(r) else "-"]
    if prefetch:
        ov = s.overlap
        vals[_AFTER_FETCH:_AFTER_FETCH] = [f"{s.wait:.3f}",
                                           f"{100 * ov:.0f} %" if math.isfinite(ov) else "-"]
    if cache:
        rate = s.cache_hit_rate
        vals.append(f"{100 * rate:.1f} %" if math.isfinite(rate) else "-")
    return table_line(_columns(cache, prefetch, gpu), vals)


def _by_phase(s):
    """Megabytes of sampling's row fetches, feature fetches and gradients: 'a/b/c'."""
    phases = getattr(s, "bytes_by_phase", None) or {}
    if not phases:
        return "-"
    return "/".join(f"{phases.get(k, 0) / 1e6:.2f}" for k in ("sample", "features",
                                                               "gradients"))


def _si(x):
    if not math.isfinite(x):
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


def plot_phases(history, path, title=None):
    """Write a stacked-bar plot of the seconds per phase and epoch to ``path``.

    With prefetch, the sample and fetch bars are split into the part the
    training loop waited for (solid) and the part hidden behind training
    (hatched, lighter), and the title gives the overlap over the run.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from spla.exceptions import MissingDependency
        raise MissingDependency("plotting needs matplotlib; install it with "
                                "`pip install matplotlib`") from None
    epochs = [s.epoch for s in history]
    fig, ax = plt.subplots(figsize=(max(5, 0.3 * len(epochs) + 3), 3.5))
    bottom = np.zeros(len(epochs))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    # Per epoch: the exposed share of the background phases (wait / (sample +
    # fetch)), 1 for an epoch without prefetch.
    exposed = np.array([_exposed(s) for s in history])
    prefetched = any(getattr(s, "prefetch", 0) for s in history)
    for k, phase in enumerate(PHASES):
        v = np.array([s.times[phase] for s in history])
        color = colors[k % len(colors)]
        if phase in ("sample", "fetch") and prefetched:
            shown = v * exposed
            ax.bar(epochs, shown, bottom=bottom, label=f"{phase} (waited)", color=color)
            ax.bar(epochs, v - shown, bottom=bottom + shown, label=f"{phase} (hidden)",
                   color=color, alpha=0.35, hatch="//", edgecolor=color, linewidth=0)
        else:
            ax.bar(epochs, v, bottom=bottom, label=phase, color=color)
        bottom += v
    ax.set_xlabel("epoch")
    if len(epochs) <= 30:
        ax.set_xticks(epochs)
    ax.set_ylabel("seconds (slowest rank)")
    lines = [title] if title else []
    if prefetched:
        busy = sum(s.times["sample"] + s.times["fetch"] for s in history)
        wait = sum(getattr(s, "wait", 0.0) for s in history)
        share = min(1.0, max(0.0, 1 - wait / busy)) if busy > 0 else float("nan")
        lines.append(f"prefetch: {100 * share:.0f} % of sample + fetch hidden behind training"
                     if math.isfinite(share) else "prefetch: no sample or fetch time")
    hits = sum(getattr(s, "cache_hits", 0) for s in history)
    asked = sum(getattr(s, "cache_requests", 0) for s in history)
    if asked:
        # The feature cache changes what the fetch bar means: say how often it served.
        lines.append(f"feature cache hit rate {100 * hits / asked:.1f} %")
    if lines:
        ax.set_title("\n".join(lines), fontsize=9)
    n = len(PHASES) + (2 if prefetched else 0)
    ax.legend(fontsize=8, ncol=min(n, 5), loc="upper center", bbox_to_anchor=(0.5, -0.18))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _exposed(s):
    if not getattr(s, "prefetch", 0):
        return 1.0
    ov = s.overlap
    return 1.0 - ov if math.isfinite(ov) else 1.0
