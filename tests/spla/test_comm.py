"""Serial checks of spla.comm's bookkeeping (the collectives run in tests/mpi)."""

from spla import comm as C


def test_nested_counters_end_in_order_and_count_separately():
    with C.counting() as outer:
        with C.counting() as inner:
            # Both counters are empty and therefore equal as dicts: leaving the
            # inner block must still end the inner one, not the outer one.
            assert inner == outer
        C.record("alltoallv", 10)
        assert outer["alltoallv"] == 10
        assert inner["alltoallv"] == 0
    C.record("alltoallv", 5)
    assert outer["alltoallv"] == 10


def test_counters_stack_and_both_see_inner_traffic():
    with C.counting() as outer:
        C.record("allgatherv", 3)
        with C.counting() as inner:
            C.record("allgatherv", 4)
        assert dict(inner) == {"allgatherv": 4}
    assert dict(outer) == {"allgatherv": 7}


# -- one rank, no mpiexec: the helpers raise locally, with the house messages --
import numpy as np
import pytest

import spla
from spla.layout import layout_of


def test_collective_checks_alone_raise_the_error_itself():
    with pytest.raises(OverflowError) as info:
        with C.collective_checks(None):
            np.asarray([2 ** 70], np.int64)
    assert info.value.collective_origin == 0
    with C.collective_checks(C.mpi().COMM_SELF):   # one rank: nothing to agree with
        pass


def test_check_same_alone_returns_the_values():
    assert C.check_same(None, "f", "k", [3, 4]).tolist() == [[3, 4]]
    assert C.check_same(C.mpi().COMM_SELF, "f", "k", [5]).tolist() == [[5]]


def test_as_comm_refuses_what_is_not_a_communicator():
    assert C.as_comm(None) is C.world()
    with pytest.raises(spla.DTypeError, match="distribute: argument 'comm' must be an mpi4py"):
        C.as_comm("world", "distribute")
    with pytest.raises(spla.DTypeError, match="argument 'comm'"):
        spla.distribute(spla.Matrix.from_dense(np.eye(2)), comm=3)


def test_grid_of_a_freed_communicator_is_not_reused():
    for _ in range(3):
        sub = C.mpi().COMM_SELF.Dup()
        g = C.grid(sub, 1)
        assert C.grid(sub, 1) is g and g.p == 1
        sub.Free()
        fresh = C.mpi().COMM_SELF.Dup()
        assert C.grid(fresh, 1) is not g
        fresh.Free()


@pytest.mark.parametrize("args, cls, text", [
    (("1d", 4, 2, False), spla.LayoutError, "argument 'replication' must be 1 for layout '1d'"),
    (("1.5d", 4, 3, False), spla.LayoutError,
     "argument 'replication' must be a divisor of the number of ranks p = 4"),
    (("1.5d", 4, 2 ** 70, False), spla.LayoutError, "argument 'replication'"),
    (("1.5d", 4, True, False), spla.InvalidValue, "argument 'replication' must be an integer"),
    (("2d", 4, 1, False), spla.LayoutError, "argument 'layout' must be '1d' or '1.5d'"),
    (("1d", 4, 1, "yes"), spla.InvalidValue, "argument 'replicate_graph' must be a bool"),
])
def test_layout_arguments_are_checked_with_the_callers_name(args, cls, text):
    with pytest.raises(cls, match=f"^distribute: {text}"):
        layout_of("distribute", *args)


def test_counters_belong_to_their_thread():
    import threading
    seen = {}

    def other():
        with C.counting() as mine:
            C.record("other", 5)
        seen["other"] = dict(mine)

    with C.counting() as moved:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        C.record("here", 3)
    assert dict(moved) == {"here": 3}
    assert seen["other"] == {"other": 5}


def test_record_with_no_op_counts_nothing():
    with C.counting() as moved:
        C.record(None, 99)
    assert dict(moved) == {}


# -- optional dependencies: spla.comm reaches mpi4py through spla.optional --

def test_mpi_without_mpi4py_names_the_extra_and_a_lifted_block_is_not_remembered(monkeypatch):
    import sys

    import spla
    from spla import optional
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "mpi4py.MPI", None)          # plays a machine without it
        with pytest.raises(spla.MissingDependency,
                           match=r"needs mpi4py\.MPI; install it with `pip install -e "
                                 r"\"\.\[mpi\]\"`") as info:
            C.mpi()
        assert isinstance(info.value, ImportError)
        assert optional.optional_import("mpi4py.MPI") is None
    assert C.mpi() is sys.modules["mpi4py.MPI"]             # the block lifted, MPI is back


def test_optional_import_remembers_a_module_that_is_not_there(monkeypatch):
    import importlib

    from spla import optional
    name = "spla_no_such_module_here"
    calls = []
    real = importlib.import_module

    def counting_import(n, *a):
        calls.append(n)
        return real(n, *a)

    monkeypatch.setattr(optional.importlib, "import_module", counting_import)
    monkeypatch.setattr(optional, "_MISSING", {})
    assert optional.optional_import(name) is None
    assert optional.optional_import(name) is None
    assert calls == [name]                                   # one attempt per process
    assert optional.install_hint("torch") == 'pip install -e ".[train]"'
    assert optional.install_hint("pymetis") == 'pip install -e ".[mpi]"'
    with pytest.raises(ImportError, match="^f: x needs json 99; install it with `pip install "
                                          "json` \\(note\\)$"):
        optional.require("json", what="f: x", extra="", needs="json 99", note="(note)",
                         check=lambda mod: False)
