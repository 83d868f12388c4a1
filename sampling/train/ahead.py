"""The training loader's next epoch, started before this epoch's validation pass.

With ``--prefetch k`` a background thread samples an epoch's bulks while
the training loop trains on earlier ones, but it starts with the epoch: the
loop waits for the first bulk, every epoch.  ``Trainer.fit`` knows that
another epoch follows, so when an epoch's training loop ends it starts the
next epoch's iterator (and with it the thread), and the validation pass
runs while the next epoch's first bulks are produced.  The minibatches are
the same (they are keyed by epoch and id, not by when they are made).

On one process only: under MPI the ranks' background threads run
collectives, and a rank failing in its validation pass would leave the
others' started threads in one (``Trainer`` ends such a job, but would have
more threads to account for); there, each epoch starts its own.
"""


class NextEpoch:
    """At most one epoch iterator started ahead of its epoch.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from sampling import GraphSAGE, NodeLoader
    >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
    >>> loader = NodeLoader(GraphSAGE(A, [2]), np.arange(6), 2, prefetch=1)
    >>> ahead = NextEpoch()
    >>> ahead.start(loader, 1)                  # epoch 1's thread starts now
    >>> it = ahead.iterator(loader, 1)          # ... and is handed over here
    >>> it.epoch, len(list(it))
    (1, 3)
    >>> ahead.iterator(loader, 4).epoch         # nothing started for epoch 4: a new one
    4
    """

    def __init__(self):
        self._it = None
        #: the epoch to start when the current one's training loop ends
        #: (set by ``Trainer.fit`` before each epoch; None: none follows)
        self.follows = None

    def start(self, loader, epoch):
        """Start ``loader``'s iterator of ``epoch`` now (stopping one started before)."""
        self._close()
        loader.set_epoch(epoch)
        self._it = iter(loader)

    def iterator(self, loader, epoch):
        """The iterator of ``epoch``: the one started ahead, or a new one."""
        if self._it is None or self._it.epoch != epoch:
            self.start(loader, epoch)
        it, self._it = self._it, None
        return it

    def drop(self):
        """Forget ``follows`` and stop an iterator started ahead and not handed
        over (joins its thread)."""
        self.follows = None
        self._close()

    def _close(self):
        it, self._it = self._it, None
        if it is not None:
            it.close()


def mark_prefetch_stuck(exc):
    """Flag ``exc``: this rank's prefetch thread is blocked in a collective (see job.py).

    Examples
    --------
    >>> e = RuntimeError("boom")
    >>> mark_prefetch_stuck(e); e.prefetch_stuck
    True
    """
    try:
        exc.prefetch_stuck = True
    except Exception:  # noqa: BLE001 - an exception type that refuses attributes
        pass


__all__ = ["NextEpoch", "mark_prefetch_stuck"]
