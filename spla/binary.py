"""The built-in binary operators, by name: ``spla.binary.<name>``.

Arithmetic ``plus``, ``minus``, ``times``, ``div``, ``min``, ``max``;
selection ``first``, ``second``, ``any``, ``pair`` (1); logical ``lor``,
``land``, ``lxor``; comparisons ``eq``, ``ne``, ``lt``, ``le``, ``gt``,
``ge`` (0/1); positional ``firsti``, ``firstj``, ``secondi``, ``secondj``
(the row or column id of the first or second operand's entry: in ``C = A B``
``firsti`` is i, ``secondi`` is k, ``secondj`` is j).  ``BinaryOp`` and
``BinaryOp.from_function`` make new ones.

Examples
--------
>>> import numpy as np
>>> from spla import binary
>>> binary.lt(np.array([1, 5]), np.array([2, 2]))
array([1, 0])
>>> sorted(binary.BINARY)[:4]
['any', 'div', 'eq', 'first']
"""

from spla.operators import BINARY, BinaryOp, as_binary  # noqa: F401

globals().update(BINARY)
