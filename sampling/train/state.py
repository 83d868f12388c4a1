"""A run's own thread counts and torch random state, lent to it only while it works.

A notebook that builds a ``Trainer`` keeps its own numba and torch thread
counts and its own torch random stream: ``RunState.working()`` installs the
run's for the block and puts the caller's back afterwards, also after an
exception.  Nested blocks (``fit`` calls ``train_epoch`` calls
``evaluate``) install them once.
"""

import contextlib
import threading

from sampling.train.launch import using_threads


class RunState:
    """Thread counts and torch random state of one run.

    Examples
    --------
    >>> import torch
    >>> st = RunState(torch, torch.device("cpu"), 1, 1)
    >>> with st.fork():
    ...     st.seed(3)
    ...     st.save()
    >>> with st.working():
    ...     a = torch.rand(1)
    >>> with st.working():
    ...     b = torch.rand(1)
    >>> bool(a != b)        # the run's stream went on from where it stopped
    True
    """

    def __init__(self, torch, device, threads, torch_threads):
        self.torch = torch
        self.device = device
        self.threads = threads
        self.torch_threads = torch_threads
        self._rng = None
        self._local = threading.local()

    def fork(self):
        """torch's global random state, put back when the block ends."""
        torch = self.torch
        devices = []
        if self.device.type == "cuda":
            devices = [self.device.index if self.device.index is not None
                       else torch.cuda.current_device()]
        return torch.random.fork_rng(devices=devices)

    def seed(self, seed):
        """Seed torch's global generators (CPU, and the run's GPU)."""
        torch = self.torch
        torch.default_generator.manual_seed(seed)
        if self.device.type == "cuda":
            with torch.cuda.device(self.device):
                torch.cuda.manual_seed(seed)

    def save(self):
        """Keep torch's current random state as the run's."""
        torch = self.torch
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        self._rng = (torch.get_rng_state(), cuda)

    def _load(self):
        torch = self.torch
        cpu, cuda = self._rng
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state(cuda, self.device)

    @contextlib.contextmanager
    def working(self):
        """The run's threads and random state for the block, the caller's after it."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        try:
            if depth:  # nested (fit -> train_epoch -> evaluate): already set
                yield
                return
            with using_threads(self.threads, self.torch_threads), self.fork():
                self._load()
                try:
                    yield
                finally:
                    self.save()
        finally:
            self._local.depth = depth


__all__ = ["RunState"]
