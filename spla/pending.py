"""Results a device is still computing: ``Pending`` and its ``wait()``.

GraphBLAS lets an implementation run in nonblocking mode, deferring work
until a result is needed (``GrB_wait``).  What spla's GPU path must wait
for is the host: an operator whose output sizes depend on the data reads
those sizes back, a blocking read that leaves the device idle while the
host builds the result and prepares the next call.  Called with
``wait=False``, such an operator queues its device work and returns a
``Pending`` at once; the caller can queue the next piece of work (the next
bulk of minibatches) before calling ``wait()`` on this one, so the device
computes while the host works.
"""

import threading

_UNSET = object()


class Pending:
    """A result whose device work may still be running; ``wait()`` returns it.

    Calls made with ``wait=False`` (``spla.sample_hops``,
    ``sampling.Sampler.sample``) check their arguments, queue their device
    work and return one.  ``wait()`` reads back what sizes the result (the
    call's one blocking read), builds the result and returns it.  Where
    nothing can be deferred (host arrays, distributed graphs, the operator
    compositions) the call computes the result itself and ``done`` is True
    from the start.

    ``wait()`` may be called any number of times and from any thread: the
    result is built once; an error raised building it (a seed vertex that
    the device found out of range or repeated) is raised by every
    ``wait()``.  A ``Pending`` that is dropped unwaited frees its device
    arrays; the device work already queued still runs.

    Parameters
    ----------
    finish : callable
        Called once, with no arguments, by the first ``wait()``; returns
        the result.

    Examples
    --------
    >>> from spla import Pending
    >>> p = Pending(lambda: 6 * 7)
    >>> p.done
    False
    >>> p.wait(), p.done
    (42, True)
    >>> Pending.ready("now").wait()
    'now'
    """

    def __init__(self, finish):
        if not callable(finish):
            from spla.checks import describe, fail
            from spla.exceptions import DTypeError
            fail(DTypeError, "Pending", "finish", "a callable", describe(finish))
        self._finish = finish
        self._value = _UNSET
        self._error = None
        self._lock = threading.Lock()

    @classmethod
    def ready(cls, value):
        """A ``Pending`` holding ``value``, already done.

        Examples
        --------
        >>> from spla import Pending
        >>> Pending.ready([1, 2]).done
        True
        """
        p = cls(lambda: value)
        p._value, p._finish = value, None
        return p

    @property
    def done(self):
        """Whether the result is built (``wait()`` returns at once)."""
        return self._value is not _UNSET or self._error is not None

    def wait(self):
        """The result, waiting for the device's work and building it on the first call.

        Returns
        -------
        object
            What the call that returned this ``Pending`` returns with
            ``wait=True``.

        Raises
        ------
        Exception
            Whatever building the result raised (every call raises it again).

        Examples
        --------
        >>> from spla import Pending
        >>> Pending(lambda: "built").wait()
        'built'
        """
        with self._lock:
            if self._value is _UNSET and self._error is None:
                try:
                    self._value = self._finish()
                except Exception as exc:
                    self._error = exc
                except BaseException:
                    raise  # an interrupt: a later wait() tries again
                self._finish = None
            if self._error is not None:
                raise self._error
            return self._value

    def __repr__(self):
        return f"<spla.Pending {'done' if self.done else 'waiting'}>"


__all__ = ["Pending"]
