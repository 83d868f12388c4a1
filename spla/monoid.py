"""The built-in monoids, by name: ``spla.monoid.<name>``.

``plus``, ``times``, ``min``, ``max``, ``any``, and the logical ``lor``,
``land``, ``lxor`` (operands taken as booleans, results 0/1).  The same
objects as ``spla.semiring.plus`` etc.

Examples
--------
>>> from spla import monoid
>>> monoid.min.identity, monoid.land.identity
(inf, 1.0)
"""

from spla.semiring import MONOIDS, Monoid, as_monoid  # noqa: F401

globals().update(MONOIDS)
