"""Parallel kernels with a serial twin for small inputs.

A numba parallel region ends on a barrier: every thread of the region waits
there for the slowest one.  When the machine has more runnable threads than
cores, a thread of the region is regularly descheduled, and the others wait
for it a whole scheduler slice (milliseconds) for a region whose work took
microseconds.  The samplers call many small kernels per minibatch, so on a
busy machine the waits, not the work, make up the run time.

``parallel_kernel`` compiles one Python function twice, ``parallel=True``
and ``parallel=False`` (``prange`` is a plain ``range`` in the latter), and
calls the serial twin when a cheap Python estimate of the work is below a
threshold.  Below it a parallel region cannot pay for itself even on a quiet
machine, so nothing is lost there, and no barrier is entered at all.  A
serial twin is compiled only when a small input first meets it (and cached),
so a process that only ever sees large inputs compiles nothing more.

Why a twin rather than calling the parallel kernel inside
``numba.set_num_threads(1)``: a ``set_num_threads`` scope still enters the
threading layer on every call, and costs more per call than the parallel
kernel itself, where the serial twin is a plain function call (the
measurements are in docs/design.rst, "Measurements behind the kernels'
choices").
"""

import inspect
import types

import numba
import numpy as np

#: Default work below which a kernel runs its serial twin: roughly the entries
#: (or rows, or picks) a kernel touches, as its ``work`` estimate counts them.
#: Below it two threads gain little over one even on a quiet machine
#: (docs/design.rst, "Small inputs run serially"), while a descheduled thread
#: costs the region a scheduler slice.
SERIAL_WORK = 1 << 14


def _renamed(fn, suffix):
    """A copy of ``fn`` under another qualified name.

    numba names a function's cache files after its qualified name and keys
    the entries by signature only, not by compile options: two dispatchers
    of one Python function, one parallel and one not, would load each
    other's machine code from the cache.
    """
    g = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + suffix,
                           fn.__defaults__, fn.__closure__)
    g.__qualname__ = fn.__qualname__ + suffix
    g.__module__ = fn.__module__
    g.__doc__ = fn.__doc__
    return g


class ParallelKernel:
    """A parallel numba kernel and its serial twin, chosen per call by work.

    Parameters
    ----------
    fn : function
        The kernel's Python source (loops over ``numba.prange``).
    work : callable
        ``work(*args)``: a cheap estimate of the call's work (plain Python on
        array sizes and a few scalar reads: O(1), never a pass).
    threshold : int
        Calls with ``work(*args) < threshold`` run serially.
    cache : bool
        numba's ``cache`` option of both twins (False for kernels compiled per
        user function, which numba cannot cache).
    inputs : tuple of str
        Names of the array parameters the kernel only reads.  numba types a
        read-only array apart from a writable one, so a kernel fed a
        matrix's arrays (read-only views) by one caller and fresh arrays by
        another would be compiled, and cached, twice for one dtype: these
        are passed read-only (a view, no copy) whatever the caller gives.
        Naming a parameter the kernel writes is a compile-time error of
        numba's, never a silent one.

    Attributes
    ----------
    parallel, serial : numba dispatchers
        The two compiled twins (compiled lazily, on first use of each).
        Called directly they take the arrays as given: ``call_twin`` passes
        the declared inputs read-only first.
    """

    def __init__(self, fn, work, threshold=SERIAL_WORK, cache=True, inputs=()):
        self.py_func = fn
        self.work = work
        self.threshold = threshold
        names = list(inspect.signature(fn).parameters)
        unknown = [name for name in inputs if name not in names]
        if unknown:
            raise ValueError(f"parallel_kernel: argument 'inputs' of {fn.__qualname__}: expected "
                             f"parameter names of the kernel, got {unknown}")
        self.inputs = tuple(names.index(name) for name in inputs)
        # nogil: a kernel sampling in a background thread (a prefetching
        # loader) must not stall the training loop's Python meanwhile.
        self.parallel = numba.njit(parallel=True, cache=cache, nogil=True)(fn)
        self.serial = numba.njit(parallel=False, cache=cache,
                                 nogil=True)(_renamed(fn, "__serial"))
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__

    def __call__(self, *args):
        if self.inputs:
            args = read_only_args(args, self.inputs)
        kernel = self.serial if self.work(*args) < self.threshold else self.parallel
        try:
            return kernel(*args)
        except SystemError as exc:
            # Ctrl-C while a kernel runs: the compiled code calls back into
            # Python (numba unpickles constants lazily), the signal's
            # KeyboardInterrupt is raised there and left pending, and CPython
            # reports each level's "returned a result with an exception set"
            # as a SystemError caused by the one below.  The user asked for
            # an interrupt, not a bug report.
            root = exc
            while isinstance(root, SystemError) and root.__cause__ is not None:
                root = root.__cause__
            if isinstance(root, KeyboardInterrupt):
                raise root from None
            raise

    def parts(self, *args):
        """The workers the twin that ``args`` choose runs on: numba's thread
        count for the parallel twin, 1 for the serial one.

        For kernels that cut their work into per-worker pieces (a group's
        rows among the workers, each mapping the group's columns): the
        serial twin then makes one piece instead of mapping a group twice.
        ``args`` are the call's, as ``work`` takes them.

        Examples
        --------
        >>> import numba
        >>> from kernels.parallel import parallel_kernel
        >>> @parallel_kernel(lambda n: n, cache=False)
        ... def noop(n):
        ...     return n
        >>> noop.parts(10), noop.parts(10 ** 6) == numba.get_num_threads()
        (1, True)
        """
        return numba.get_num_threads() if self.work(*args) >= self.threshold else 1

    def call_twin(self, twin, *args):
        """Call one twin, whatever the work: ``"serial"`` or ``"parallel"``.

        For comparing the twins (tests, benchmarks).  The declared
        ``inputs`` are passed read-only, as ``__call__`` passes them, so a
        twin called here runs the signature the library's calls compiled
        (and cached) instead of compiling a writable-array twin of it.

        Examples
        --------
        >>> import numpy as np
        >>> from numba import prange
        >>> from kernels.parallel import parallel_kernel
        >>> @parallel_kernel(lambda a: a.size, cache=False, inputs=("a",))
        ... def total(a):
        ...     s = 0.0
        ...     for i in prange(a.size):
        ...         s += a[i]
        ...     return s
        >>> total.call_twin("serial", np.ones(4)), total.call_twin("parallel", np.ones(4))
        (4.0, 4.0)
        """
        if twin not in ("serial", "parallel"):
            raise ValueError(f"ParallelKernel.call_twin: argument 'twin' must be 'serial' or "
                             f"'parallel', got {twin!r}")
        if self.inputs:
            args = read_only_args(args, self.inputs)
        return getattr(self, twin)(*args)

    def __repr__(self):
        return f"<ParallelKernel {self.__module__}.{self.__qualname__}>"


def read_only_args(args, positions):
    """``args`` with the writable numpy arrays at ``positions`` replaced by
    read-only views of them (no copy), so that numba compiles one signature
    whether a caller hands over fresh arrays or a matrix's read-only ones.

    Examples
    --------
    >>> import numpy as np
    >>> a, b = np.arange(3), np.arange(3)
    >>> x, y = read_only_args((a, b), (0,))
    >>> x.flags.writeable, y is b, a.flags.writeable
    (False, True, True)
    """
    out = None
    for i in positions:
        if i >= len(args):
            continue
        a = args[i]
        if type(a) is np.ndarray and a.flags.writeable:
            if out is None:
                out = list(args)
            a = a.view()
            a.setflags(write=False)
            out[i] = a
    return args if out is None else out


def over_rows(rows, work):
    """A ``work`` estimate for a kernel whose parallel loops share out rows
    (or groups): ``work``, or 0 when there are fewer than two to share.

    One row runs on one thread whatever the region: the region only adds
    its cost, a sleeping thread's wake-up with ``OMP_WAIT_POLICY=PASSIVE``
    (see docs/design.rst for what it costs a one-row LADIES step).

    Examples
    --------
    >>> over_rows(1, 10**6), over_rows(2, 10**6)
    (0, 1000000)
    """
    return work if rows > 1 else 0


def parallel_kernel(work, threshold=SERIAL_WORK, cache=True, inputs=()):
    """Decorator: compile a ``prange`` kernel parallel and serial, pick by work.

    Parameters
    ----------
    work : callable
        ``work(*args)`` -> int, a cheap estimate from the arguments' sizes.
    threshold : int, optional
        Work below which the serial twin runs (default ``SERIAL_WORK``).
    cache : bool, optional
        Cache the compiled code (default True).
    inputs : tuple of str, optional
        The array parameters the kernel only reads, passed read-only
        whatever the caller gives (see :class:`ParallelKernel`).

    Returns
    -------
    callable
        Decorator returning a :class:`ParallelKernel`.

    Examples
    --------
    >>> import numpy as np
    >>> from numba import prange
    >>> from kernels.parallel import parallel_kernel
    >>> @parallel_kernel(lambda a: a.size, cache=False)
    ... def double(a):
    ...     for i in prange(a.size):
    ...         a[i] *= 2
    ...     return a
    >>> double(np.ones(3)).tolist()
    [2.0, 2.0, 2.0]
    """
    def deco(fn):
        return ParallelKernel(fn, work, threshold, cache, inputs)
    return deco
