"""The job's table (header and rows) and the phase plot."""

import math

import numpy as np

from sampling.train.options import PHASES

_COLS = [("epoch", 5), ("loss", 7), ("val acc", 7), ("sample s", 8), ("fetch s", 7),
         ("fwd/bwd s", 9), ("allreduce s", 11), ("eval s", 7), ("SEPS", 9), ("MB moved", 8)]
_CACHE_COL = ("cache hit", 9)  # only with a feature cache (--feature-cache)


def header(cache=False):
    """The table's header line (``cache``: with the feature cache's hit-rate column)."""
    cols = _COLS + [_CACHE_COL] if cache else _COLS
    return "  ".join(name.rjust(w) for name, w in cols)


def format_row(s, cache=False):
    """One table row for ``EpochStats`` s (``cache`` as for ``header``)."""
    t = s.times
    vals = [f"{s.epoch:d}", f"{s.loss:.4f}", f"{s.val_acc:.4f}", f"{t['sample']:.3f}",
            f"{t['fetch']:.3f}", f"{t['fwd/bwd']:.3f}", f"{t['allreduce']:.3f}",
            f"{t['eval']:.3f}", _si(s.seps), f"{s.bytes_moved / 1e6:.2f}"]
    cols = _COLS
    if cache:
        rate = s.cache_hit_rate
        vals.append(f"{100 * rate:.1f} %" if math.isfinite(rate) else "-")
        cols = _COLS + [_CACHE_COL]
    return "  ".join(v.rjust(w) for v, (_, w) in zip(vals, cols))


def _si(x):
    if not math.isfinite(x):
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


def plot_phases(history, path, title=None):
    """Write a stacked-bar plot of the seconds per phase and epoch to ``path``."""
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
    for phase in PHASES:
        v = np.array([s.times[phase] for s in history])
        ax.bar(epochs, v, bottom=bottom, label=phase)
        bottom += v
    ax.set_xlabel("epoch")
    if len(epochs) <= 30:
        ax.set_xticks(epochs)
    ax.set_ylabel("seconds (slowest rank)")
    hits = sum(getattr(s, "cache_hits", 0) for s in history)
    asked = sum(getattr(s, "cache_requests", 0) for s in history)
    if asked:
        # The feature cache changes what the fetch bar means: say how often it served.
        title = (f"{title}\n" if title else "") + (f"feature cache hit rate "
                                                    f"{100 * hits / asked:.1f} %")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, ncol=len(PHASES), loc="upper center", bbox_to_anchor=(0.5, -0.18))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- main -----------------------------------------------------------------------
