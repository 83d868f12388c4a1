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
