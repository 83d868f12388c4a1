"""The tables of BNS-GCN training: one row per epoch, and the per-rank breakdown.

The lines are ``sampling.train.report.table_line``'s, as the main job's
table is.
"""

import math

import numpy as np

from sampling.train.report import table_line

_BNS_COLS = [("epoch", 5), ("loss", 7), ("val acc", 7), ("kept", 9), ("MB sent", 8),
             ("MB recv", 8), ("work MB", 8), ("compute s", 9), ("comm s", 7),
             ("epoch s", 7), ("eval s", 6)]


def bns_header():
    """The header of the per-epoch table (``format_bns_row``).

    Examples
    --------
    >>> bns_header().split()[:4]
    ['epoch', 'loss', 'val', 'acc']
    """
    return table_line(_BNS_COLS)


def format_bns_row(s):
    """One row of the per-epoch table (``bns_header``'s columns) for ``BNSEpochStats`` s.

    Totals over the ranks (kept boundary vertices, MB sent and received),
    the largest working memory, and the slowest rank's compute and
    communication seconds.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling.train.bns import BNSEpochStats
    >>> r = np.ones(2, np.int64)                                       # 2 ranks
    >>> s = BNSEpochStats(1, 0.6931, 0.5, 0.1, 100 * r, 20 * r, 2 * r, 4000 * r, 4000 * r,
    ...                   10**6 * r, 10**8 * r, compute_s=np.array([0.01, 0.02]),
    ...                   comm_s=np.array([0.002, 0.001]))
    >>> format_bns_row(s).split()
    ['1', '0.6931', '0.5000', '4', '0.008', '0.008', '1.00', '0.020', '0.002', '0.021', '0.000']
    """
    vals = [f"{s.epoch:d}", f"{s.loss:.4f}", f"{s.val_acc:.4f}", f"{int(s.kept.sum()):d}",
            f"{s.bytes_sent.sum() / 1e6:.3f}", f"{s.bytes_received.sum() / 1e6:.3f}",
            f"{s.work_bytes.max() / 1e6:.2f}", f"{s.compute_s.max():.3f}",
            f"{s.comm_s.max():.3f}", f"{s.epoch_s:.3f}", f"{s.eval_s:.3f}"]
    return table_line(_BNS_COLS, vals)


def rank_table(history):
    """Per-rank breakdown over epochs (the paper's imbalance and breakdown tables).

    One line per rank: inner and boundary vertices, kept boundary vertices
    per epoch (mean), MB sent and received per epoch (mean), working memory
    and peak RSS (max, MB), compute and communication seconds per epoch
    (mean), then ``max/mean`` of each column.

    Examples
    --------
    >>> rank_table([])
    []
    """
    if not history:
        return []
    H = history
    cols = [("rank", 8), ("inner", 8), ("boundary", 8), ("kept/ep", 9), ("MB sent/ep", 10),
            ("MB recv/ep", 10), ("work MB", 8), ("peak RSS MB", 11), ("compute s/ep", 12),
            ("comm s/ep", 9)]
    data = np.stack([
        H[-1].inner.astype(float), H[-1].boundary.astype(float),
        np.mean([s.kept for s in H], axis=0),
        np.mean([s.bytes_sent for s in H], axis=0) / 1e6,
        np.mean([s.bytes_received for s in H], axis=0) / 1e6,
        np.max([s.work_bytes for s in H], axis=0) / 1e6,
        np.max([s.peak_rss for s in H], axis=0) / 1e6,
        np.mean([s.compute_s for s in H], axis=0),
        np.mean([s.comm_s for s in H], axis=0)], axis=1)
    fmt = ["{:.0f}", "{:.0f}", "{:.1f}", "{:.3f}", "{:.3f}", "{:.2f}", "{:.1f}", "{:.3f}",
           "{:.3f}"]
    lines = [table_line(cols)]
    for r in range(data.shape[0]):
        vals = [str(r)] + [f.format(v) for f, v in zip(fmt, data[r])]
        lines.append(table_line(cols, vals))
    mean = data.mean(axis=0)
    ratio = np.where(mean > 0, data.max(axis=0) / np.where(mean > 0, mean, 1), np.nan)
    vals = ["max/mean"] + [f"{v:.2f}" if math.isfinite(v) else "-" for v in ratio]
    lines.append(table_line(cols, vals))
    return lines
