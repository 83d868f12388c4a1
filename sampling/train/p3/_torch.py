"""PyTorch for P3, optional: the import, the "needs PyTorch" check, host copies.

``sampling.train.p3`` imports without torch (the column store, the step's
inputs and the byte model need none); the autograd function and the model
need it, and say so through ``spla.optional.require`` when it is missing.
"""

import numpy as np

from spla.optional import optional_import, require

torch = optional_import("torch")
nn = None if torch is None else torch.nn

# Base classes that exist without torch, so the classes built on them can be
# defined (and refuse to work, through require_torch) when torch is missing.
Module = object if nn is None else nn.Module
Function = object if torch is None else torch.autograd.Function


def require_torch(what):
    """Raise ``MissingDependency`` naming ``what`` when PyTorch is not installed."""
    if torch is None:
        require("torch", what=what, needs="PyTorch")


def host_numpy(t):
    """A C-contiguous numpy copy (or view) of a tensor, detached, on the host."""
    t = t.detach()
    return (t if t.is_contiguous() else t.contiguous()).cpu().numpy()


def numpy_float(dtype):
    """The numpy float type of a torch float dtype: float64 stays, anything else is float32."""
    return np.float64 if dtype == torch.float64 else np.float32
