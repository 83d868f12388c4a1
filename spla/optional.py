"""Optional dependencies: imported when first needed, or refused with the pip command.

spla runs on numpy, scipy and numba alone; cupy (the GPU backend), mpi4py
(distributed matrices), pymetis (METIS partitions) and torch (the training
layer above) are extras of the package (``setup.cfg``).  Code that needs
one asks this module, never ``import`` at module level:

* ``optional_import(name)``: the module, or None where it cannot be
  imported (cupy also fails to import on a machine whose CUDA runtime does
  not load: any exception counts as "not there").
* ``require(name, extra=..., what=...)``: the module, or
  ``spla.MissingDependency`` naming what needed it and the command that
  installs it.

A module already in ``sys.modules`` is returned as it is (an array module
standing in for cupy, installed by the tests, counts as cupy); a failed
import is remembered, so a missing module costs one attempt per process
(except where ``sys.modules[name]`` is None: that blocks the import for
now, as a test does to play a machine without the module).
"""

import importlib
import sys
import threading

from spla.exceptions import MissingDependency

#: The extra of ``setup.cfg`` that brings each optional module.
EXTRAS = {"cupy": "gpu", "mpi4py": "mpi", "pymetis": "mpi", "torch": "train",
          "matplotlib": "train", "torch_geometric": "pyg", "ogb": "ogb"}

_MISSING = {}  # name -> the exception its import raised
_LOCK = threading.Lock()


def optional_import(name):
    """The module ``name`` if it imports, else None (the failure is remembered).

    Parameters
    ----------
    name : str
        A module's dotted name (``"cupy"``, ``"mpi4py.MPI"``).

    Returns
    -------
    module or None

    Examples
    --------
    >>> from spla.optional import optional_import
    >>> optional_import("json").__name__
    'json'
    >>> optional_import("no_such_module_here") is None
    True
    """
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    if name in _MISSING:
        return None
    blocked = name in sys.modules   # set to None: a block that may be lifted, not remembered
    try:
        return importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - ImportError, or a runtime that fails to load
        if not blocked:
            with _LOCK:
                _MISSING[name] = exc
        return None


def install_hint(name, extra=None):
    """The pip command that brings ``name``: its extra of this package, or the module.

    Examples
    --------
    >>> from spla.optional import install_hint
    >>> install_hint("cupy")
    'pip install -e ".[gpu]"'
    >>> install_hint("dgl", extra="")
    'pip install dgl'
    """
    extra = EXTRAS.get(name.split(".")[0]) if extra is None else extra
    if extra:
        return f'pip install -e ".[{extra}]"'
    return f"pip install {name.split('.')[0]}"


def require(name, *, what, extra=None, note="", check=None, needs=None, hint=None):
    """The module ``name``, or ``MissingDependency`` saying how to install it.

    Parameters
    ----------
    name : str
        A module's dotted name.
    what : str
        Who needs it, as the message starts (a function's name, "the GPU
        backend").
    extra : str, optional
        The extra of ``setup.cfg`` that brings it (default: ``EXTRAS``'s;
        ``""`` names the module itself).
    note : str, optional
        Appended to the message (which version, which machine).
    needs : str, optional
        What the message says is needed (default ``name``), e.g. with a
        version: ``"pymetis 2025.2 or later"``.
    hint : str, optional
        The install command (default ``install_hint(name, extra)``).
    check : callable, optional
        ``check(module)``: False when the installed module is too old; it is
        then refused as if missing.

    Returns
    -------
    module

    Raises
    ------
    MissingDependency
        ``name`` does not import (or fails ``check``).  It is also an
        ``ImportError``.

    Examples
    --------
    >>> from spla.optional import require
    >>> require("json", what="example").__name__
    'json'
    >>> try:
    ...     require("no_such_module_here", what="example", extra="gpu")
    ... except ImportError as e:
    ...     print(e)
    example needs no_such_module_here; install it with `pip install -e ".[gpu]"`
    """
    mod = optional_import(name)
    if mod is None or (check is not None and not check(mod)):
        hint = install_hint(name, extra) if hint is None else hint
        msg = f"{what} needs {needs or name}; install it with `{hint}`"
        raise MissingDependency(msg + (f" {note}" if note else "")) from _MISSING.get(name)
    return mod


def cupy_or_none():
    """cupy, or None where it is not installed or cannot load.

    Examples
    --------
    >>> from spla.optional import cupy_or_none
    >>> cupy_or_none() is None or hasattr(cupy_or_none(), "ndarray")
    True
    """
    return optional_import("cupy")


def require_cupy(func):
    """cupy, or ``MissingDependency`` naming ``func`` and the ``gpu`` extra.

    Examples
    --------
    >>> from spla.optional import cupy_or_none, require_cupy
    >>> try:
    ...     ok = require_cupy("f") is cupy_or_none()
    ... except ImportError as e:         # no cupy here: the message says how to get it
    ...     ok = str(e).startswith('f: the GPU backend needs cupy; install it with '
    ...                            '`pip install -e ".[gpu]"`')
    >>> ok
    True
    """
    return require("cupy", what=f"{func}: the GPU backend",
                   note="(cupy-cuda12x) on a machine with a CUDA GPU")


__all__ = ["EXTRAS", "optional_import", "install_hint", "require", "cupy_or_none",
           "require_cupy"]
