"""One epoch of a ``NodeLoader``: the iterator ``iter(loader)`` returns.

It produces the epoch's bulks in order (in the consumer's thread, or in a
background ``Prefetcher`` with ``prefetch=k``), keeps one bulk queued ahead
on the device when the sampler's device work can run ahead of the host, and
hands out the bulks' minibatches one at a time, counting what producing
them cost (``LoaderStats``).
"""

from dataclasses import dataclass

from sampling.loading.pipeline import Prefetcher


@dataclass
class LoaderStats:
    """What producing an epoch's bulks has cost so far, on this rank.

    With prefetch, ``sample`` and ``fetch`` are seconds of the background
    thread, and ``wait`` the seconds the consumer was blocked waiting for a
    bulk: the part of sampling and fetching that the loop did not hide.
    """

    #: seconds in ``sampler.sample``
    sample: float = 0.0
    #: seconds gathering features and labels
    fetch: float = 0.0
    #: seconds the consumer waited for a prefetched bulk
    wait: float = 0.0
    #: seconds packing and copying staged bulks to the device (background)
    copy: float = 0.0
    #: bulks produced
    bulks: int = 0
    #: sampled edges of this rank's minibatches
    sampled_edges: int = 0


class EpochIterator:
    """The minibatches of one epoch (one consumer thread).

    ``epoch`` is the epoch it samples, ``stats`` a ``LoaderStats``.  With
    ``prefetch`` it owns a ``sampling.loading.pipeline.Prefetcher`` (a
    background thread), stopped by ``close()``, at the end of the epoch, on
    an error, or when the iterator is garbage-collected.
    """

    def __init__(self, loader, epoch):
        self.epoch = epoch
        self.stats = LoaderStats()
        batches = loader.batches(epoch)
        bulks = loader._bulks()
        self._count = len(bulks)
        self._next_bulk = 0
        self._pending = []
        self._done = False
        self._worker = None
        sampler, features = loader.sampler, loader._inputs.features
        if loader._bg is not None and bulks:
            sampler, features = loader._bg

        staging = loader._staging if loader._bg is not None and bulks else None
        self._staging, self._held = staging, None

        ahead = {}

        def make(i):
            launched = ahead.pop(i, None) or loader._launch_bulk(epoch, batches, bulks[i],
                                                                 sampler)
            if i + 1 < len(bulks) and not launched[0].done:
                # The sampler's device work runs ahead of the host: queue the
                # next bulk before waiting for this one, so the GPU samples
                # it while the host builds, gathers and trains on this one.
                ahead[i + 1] = loader._launch_bulk(epoch, batches, bulks[i + 1], sampler)
            if staging is None:
                return loader._sample_bulk(epoch, batches, bulks[i], sampler, features,
                                           launched=launched)
            # The inputs are gathered straight into the ring's pinned slot.
            mbs, ts, _ = loader._sample_bulk(epoch, batches, bulks[i], sampler, features,
                                             staging[1], launched=launched, gather=False)
            staged = staging[0].stage(mbs, staging[1], features)
            return staged, ts, staged.fetch

        if loader._bg is not None and bulks:
            # The prefetcher stops itself when this iterator drops it: its
            # thread never refers to the iterator.
            self._worker = Prefetcher(make, len(bulks), loader.prefetch,
                                      name="NodeLoader-prefetch")
        self._make = make

    def __iter__(self):
        return self

    def __next__(self):
        while not self._pending:
            if self._done or self._next_bulk >= self._count:
                self.close()
                raise StopIteration
            try:
                if self._worker is None:
                    mbs, ts, tf = self._make(self._next_bulk)
                else:
                    item = self._worker.get()
                    mbs, ts, tf = item.value
                    self.stats.wait += item.waited
                    if self._staging is not None:
                        self.stats.copy += mbs.seconds
                        mbs, self._held = mbs.take(self._held), mbs
            except BaseException:
                self.close()
                raise
            st = self.stats
            st.sample += ts
            st.fetch += tf
            st.bulks += 1
            st.sampled_edges += sum(mb.num_sampled_edges for mb in mbs)
            self._next_bulk += 1
            self._pending = list(reversed(mbs))
        return self._pending.pop()

    def close(self):
        """Stop sampling ahead (joins the background thread); the epoch ends here."""
        self.stop()

    def stop(self, timeout=None):
        """End the epoch here; wait at most ``timeout`` seconds for the background thread.

        ``timeout=None`` waits until it has ended (``close``).  With a
        timeout, a thread still running after it is left to end on its own
        (under MPI it may be blocked in a collective that other ranks left):
        returns whether it has ended.
        """
        self._done = True
        self._pending = []
        if self._worker is None:
            return True
        if timeout is None:
            self._worker.stop()
            ended = True
        else:
            self._worker.stop(wait=False)
            ended = self._worker.join(timeout)
        if ended and self._staging is not None:
            # Once the producer has ended, the staging ring is free for the
            # next epoch (a producer still running keeps its slots).
            self._staging[0].end_epoch(self._held)
            self._staging = self._held = None
        return ended
__all__ = ["EpochIterator", "LoaderStats"]
