"""``Trainer.fit`` starts the next epoch's sampling before this epoch's
validation pass (``sampling.train.ahead``): with prefetch, the next epoch's
background thread produces its first bulks while the model is validated.

The run is the one that ``train_epoch`` called epoch by epoch gives (the
minibatches are keyed by epoch and id, not by when they are made); the
started iterator is the next epoch's, handed over when it begins; an error
in the validation pass stops its thread; and a feature cache's requests are
counted once, in the epoch whose producer was running when they were made.
"""

import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sampling.datasets import load  # noqa: E402
from sampling.train import TrainOptions, Trainer  # noqa: E402

PREFETCH_THREAD = "NodeLoader-prefetch"
FAST = dict(epochs=3, threads=1, bulk=2, fanouts=(5, 5), batch_size=32, prefetch=2)


@pytest.fixture(scope="module")
def cora():
    return load("cora")


def _producers():
    return [t for t in threading.enumerate() if t.name == PREFETCH_THREAD and t.is_alive()]


def test_fit_trains_what_epoch_by_epoch_training_trains(cora):
    fit = Trainer(TrainOptions(**FAST), dataset=cora)
    fit.fit()
    steps = Trainer(TrainOptions(**FAST), dataset=cora)
    for e in range(FAST["epochs"]):
        steps.train_epoch(e)
    assert fit.parameter_checksum() == steps.parameter_checksum()
    assert [s.loss for s in fit.history] == [s.loss for s in steps.history]


def test_the_next_epoch_is_started_before_validation(cora, monkeypatch):
    trainer = Trainer(TrainOptions(**FAST), dataset=cora)
    seen = []
    evaluate = Trainer.evaluate

    def evaluating(self, split):
        it = self._ahead._it
        seen.append((split, None if it is None else it.epoch))
        return evaluate(self, split)

    monkeypatch.setattr(Trainer, "evaluate", evaluating)
    trainer.fit()
    # Epochs 0 and 1 validate while epochs 1 and 2 start; the last starts nothing.
    assert seen == [("val", 1), ("val", 2), ("val", None), ("test", None)]
    assert not _producers()


def test_an_error_in_validation_stops_the_started_epoch(cora, monkeypatch):
    trainer = Trainer(TrainOptions(**FAST), dataset=cora)

    def failing(self, split):
        assert _producers(), "the next epoch's producer runs during validation"
        raise RuntimeError("deliberate validation failure")

    monkeypatch.setattr(Trainer, "evaluate", failing)
    with pytest.raises(RuntimeError, match="deliberate validation failure"):
        trainer.fit()
    assert trainer._ahead._it is None and not _producers()


def test_cache_requests_are_counted_once(cora):
    opts = dict(FAST, feature_cache=0.2, graph="partitioned")
    fit = Trainer(TrainOptions(**opts), dataset=cora)
    fit.fit()
    steps = Trainer(TrainOptions(**opts), dataset=cora)
    for e in range(FAST["epochs"]):
        steps.train_epoch(e)
    assert sum(s.cache_requests for s in fit.history) == \
        sum(s.cache_requests for s in steps.history) > 0
    assert sum(s.cache_hits for s in fit.history) == sum(s.cache_hits for s in steps.history)
    # An epoch's count runs from its producer's start to the next one's: a
    # validation pass (V requests, the same every epoch) counts in the epoch
    # started during it, so the first epoch has V fewer, the last V more.
    got = [s.cache_requests for s in fit.history]
    want = [s.cache_requests for s in steps.history]
    V = want[0] - got[0]
    assert V > 0 and got[1] == want[1] and got[2] == want[2] + V, (got, want)
    assert np.isfinite(fit.evaluate("test"))
