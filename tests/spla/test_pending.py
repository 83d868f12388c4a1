"""``spla.Pending``: a result built once, on the first ``wait()``, from any thread."""

import threading

import pytest

from spla import Pending


def test_wait_builds_the_result_once_across_threads():
    calls = []
    gate = threading.Event()

    def finish():
        gate.wait(5)
        calls.append(1)
        return object()

    p = Pending(finish)
    got = []
    threads = [threading.Thread(target=lambda: got.append(p.wait())) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(10)
    assert len(calls) == 1
    assert len(got) == 8 and all(g is got[0] for g in got)
    assert p.done and p.wait() is got[0]


def test_an_error_is_raised_by_every_wait():
    calls = []

    def finish():
        calls.append(1)
        raise ValueError("found on the device")

    p = Pending(finish)
    for _ in range(3):
        with pytest.raises(ValueError, match="found on the device"):
            p.wait()
    assert len(calls) == 1 and p.done


def test_an_interrupt_leaves_it_to_try_again():
    tries = []

    def finish():
        tries.append(1)
        if len(tries) == 1:
            raise KeyboardInterrupt
        return "second try"

    p = Pending(finish)
    with pytest.raises(KeyboardInterrupt):
        p.wait()
    assert not p.done
    assert p.wait() == "second try" and len(tries) == 2


def test_ready_and_repr():
    p = Pending.ready(None)
    assert p.done and p.wait() is None
    assert repr(p) == "<spla.Pending done>"
    assert repr(Pending(lambda: 1)) == "<spla.Pending waiting>"


def test_finish_must_be_callable():
    from spla.exceptions import DTypeError
    with pytest.raises(DTypeError, match="Pending: argument 'finish' must be a callable; got"):
        Pending(3)
