"""The exceptions of spla.

Every class also inherits the built-in exception a Python user would try
first (``ValueError``, ``TypeError``, ``IndexError``), so ``except
ValueError`` keeps working.  Messages name the function, the argument, what
was expected and what was received (see ``spla.checks.fail``).
"""


class SplaError(Exception):
    """Base class of every error raised by spla and sampling."""


class DimensionMismatch(SplaError, ValueError):
    """Operand shapes do not fit the operation."""


class InvalidValue(SplaError, ValueError):
    """An argument has the right type but a value outside its domain."""


class IndexOutOfRange(SplaError, IndexError):
    """An index is negative or not below the dimension it indexes."""


class DTypeError(SplaError, TypeError):
    """An array has a dtype the operation does not support."""


class DeviceMismatch(SplaError, ValueError):
    """Operands live on different devices (CPU and GPU)."""


class InvalidCSR(SplaError, ValueError):
    """CSR arrays are inconsistent or not canonical (sorted, no duplicates)."""


class LayoutError(SplaError, ValueError):
    """A distributed layout does not fit the communicator or the operands."""


class MissingDependency(SplaError, ImportError):
    """An optional dependency (cupy, torch, ...) is needed and not installed."""
