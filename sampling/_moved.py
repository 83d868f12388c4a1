"""The former flat module names of ``sampling``, kept importable with a warning.

``sampling`` was one flat package; its modules now live in subpackages by
job.  ``import sampling.graphsage`` (or ``from sampling.loader import
NodeLoader``) still works: it returns the module at its new place and
emits one ``DeprecationWarning`` naming it.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "sampling.base": "sampling.samplers.base",
    "sampling.graphsage": "sampling.samplers.graphsage",
    "sampling.layerwise": "sampling.samplers.layerwise",
    "sampling.minibatch": "sampling.samplers.minibatch",
    "sampling.batches": "sampling.samplers.batches",
    "sampling.distributed": "sampling.samplers.distributed",
    "sampling.loader": "sampling.loading.loader",
    "sampling.features": "sampling.loading.features",
    "sampling.pipeline": "sampling.loading.pipeline",
    "sampling.dataset": "sampling.datasets.dataset",
    "sampling.ogbn": "sampling.datasets.ogb",
    "sampling.synthetic": "sampling.datasets.synthetic",
    "sampling.validation": "sampling.datasets.validation",
    "sampling.bns": "sampling.train.bns",
    "sampling.p3": "sampling.train.p3",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Resolve a former module name to the module at its new place."""

    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        warnings.warn(f"{fullname} has moved to {new}; import it from there (or use the "
                      f"names exported by 'sampling')", DeprecationWarning, stacklevel=2)
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install():
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
