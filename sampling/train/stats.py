"""What an epoch of the main job cost: ``EpochStats``, one row of its table.

Bytes are counted per operation by ``spla.comm.counting`` and reported per
phase (``bytes_by_phase``): a partition that keeps neighbourhoods local
should lower the sample and feature bytes, and nothing lowers the
gradients' Allreduce, so one total would hide what a partition changed.
"""

from dataclasses import dataclass, field

#: Byte phases of the table, and the operation-name prefixes that count in each.
BYTE_PHASES = {
    "sample": ("fetch_rows.", "mxm."),
    "features": ("features.", "p3.pull", "p3.inputs"),
    "gradients": ("train.", "p3.gradient"),
}


def bytes_by_phase(moved):
    """Bytes of a ``spla.comm.counting`` dict grouped by phase (plus 'other').

    Examples
    --------
    >>> bytes_by_phase({"features.request": 8, "features.reply": 32, "train.allreduce": 4,
    ...                 "mxm.rows": 2, "bns.halo": 1})
    {'sample': 2, 'features': 40, 'gradients': 4, 'other': 1}
    """
    out = dict.fromkeys(BYTE_PHASES, 0)
    out["other"] = 0
    for op, nbytes in moved.items():
        phase = next((ph for ph, prefixes in BYTE_PHASES.items()
                      if any(op.startswith(p) for p in prefixes)), "other")
        out[phase] += int(nbytes)
    return out


@dataclass
class EpochStats:
    """One row of the table (over all ranks: times are the slowest rank's).

    With prefetch (``prefetch > 0``), ``times["sample"]`` and
    ``times["fetch"]`` are seconds spent in the background thread, and
    ``wait`` the seconds the training loop was blocked waiting for the
    next bulk: the part of sample + fetch that training did not hide.
    ``bytes_moved`` is the sum of ``bytes_by_phase`` (sent, all ranks).

    Examples
    --------
    >>> s = EpochStats(1, 0.5, 0.8, {"sample": 1.0, "fetch": 1.0, "fwd/bwd": 2.0},
    ...                wait=0.5, prefetch=2)
    >>> s.overlap, s.total_time
    (0.75, 2.5)
    """

    epoch: int
    loss: float
    val_acc: float
    times: dict = field(default_factory=dict)
    sampled_edges: int = 0
    bytes_moved: int = 0
    steps: int = 0
    cache_hits: int = 0
    cache_requests: int = 0
    wait: float = 0.0
    prefetch: int = 0
    #: elapsed seconds of the whole epoch (training and validation), slowest rank
    wall: float = float("nan")
    #: bytes sent per phase ('sample', 'features', 'gradients', 'other'), all ranks
    bytes_by_phase: dict = field(default_factory=dict)
    #: seconds packing and copying staged bulks to the GPU (background thread)
    copy: float = 0.0
    #: elapsed seconds of the training loop alone (``wall`` less the
    #: validation pass), slowest rank: what the phases sample, fetch, copy
    #: and fwd/bwd can overlap within
    train_wall: float = float("nan")

    @property
    def phase_ratio(self):
        """Epoch wall time over the sum of the phases (copy included): 1 when
        the phases ran one after the other, lower the more they overlapped;
        NaN without a wall time.

        Examples
        --------
        >>> EpochStats(1, 0, 0, {"sample": 1.0, "fwd/bwd": 1.0}, copy=1.0, wall=1.5).phase_ratio
        0.5
        """
        busy = sum(self.times.values()) + self.copy
        return self.wall / busy if busy > 0 else float("nan")

    @property
    def overlap(self):
        """Fraction of the background sample + fetch seconds hidden behind training:
        ``1 - wait / (sample + fetch)``, in [0, 1]; NaN without prefetch."""
        busy = self.times.get("sample", 0.0) + self.times.get("fetch", 0.0)
        if not self.prefetch or busy <= 0:
            return float("nan")
        return min(1.0, max(0.0, 1.0 - self.wait / busy))

    @property
    def cache_hit_rate(self):
        """Feature rows served by the hot-feature cache over the rows fetched (all
        ranks, distinct rows per fetch); NaN without a cache."""
        return self.cache_hits / self.cache_requests if self.cache_requests else float("nan")

    @property
    def seps(self):
        """Sampled edges per second of sampling."""
        t = self.times.get("sample", 0.0)
        return self.sampled_edges / t if t > 0 else float("nan")

    @property
    def total_time(self):
        """Seconds of the epoch on the training loop's path: the sum of the phases,
        with the background sample + fetch replaced by the wait for them."""
        total = sum(self.times.values())
        if self.prefetch:
            total += self.wait - self.times.get("sample", 0.0) - self.times.get("fetch", 0.0)
        return total


__all__ = ["EpochStats", "BYTE_PHASES", "bytes_by_phase"]
