"""``sampling.samplers.batches.seeds_by_part``: DistDGL's split of training vertices by part.

Checked against its contract, for random partitions (empty parts included),
seed sets and grids: every seed lands on exactly one rank, every rank gets
``chunk``'s share, and each process row keeps as many of its own part's
seeds as its ranks can take (no seed leaves a part that has room for it).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import spla
from spla.layout import chunk
from spla.partition import Partition
from sampling.samplers.batches import seeds_by_part


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 60), rows=st.integers(1, 5), c=st.integers(1, 3),
       data=st.data())
def test_split_is_a_balanced_cover_that_keeps_seeds_in_their_part(n, rows, c, data):
    part = np.array(data.draw(st.lists(st.integers(0, rows - 1), min_size=n, max_size=n)))
    P = Partition(part, rows)
    seeds = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1)))), np.int64)
    p = rows * c
    out = seeds_by_part(seeds[::-1], P, p, c)
    assert len(out) == p
    together = np.concatenate(out) if out else np.zeros(0, np.int64)
    np.testing.assert_array_equal(np.sort(together), seeds)          # a cover, disjoint
    for r, a in enumerate(out):
        s, e = chunk(seeds.size, p, r)
        assert a.size == e - s and (np.diff(a) > 0).all()
    for i in range(rows):
        kept = sum(int((part[a] == i).sum()) for a in out[i * c:(i + 1) * c])
        room = sum(a.size for a in out[i * c:(i + 1) * c])
        assert kept == min(int((part[seeds] == i).sum()), room)


def test_same_split_on_every_call_and_errors():
    P = Partition([0, 1, 1, 0, 1], 2)
    a = seeds_by_part([0, 1, 2, 3, 4], P, 2)
    b = seeds_by_part(np.array([4, 3, 2, 1, 0]), P, 2)
    # Part 1 has 3 seeds for 2 places: its largest id moves to rank 0.
    assert [x.tolist() for x in a] == [x.tolist() for x in b] == [[0, 3, 4], [1, 2]]
    with pytest.raises(spla.LayoutError, match="^seeds_by_part: argument 'partition' must be "
                                               r"a Partition in ranks / replication = 4 parts"):
        seeds_by_part([0], P, 4)
    with pytest.raises(spla.LayoutError, match="'replication' must be a divisor of ranks = 4"):
        seeds_by_part([0], P, 4, 3)
    with pytest.raises(spla.InvalidValue, match="'seeds' must be distinct vertex ids"):
        seeds_by_part([1, 1], P, 2)
    with pytest.raises(spla.IndexOutOfRange):
        seeds_by_part([7], P, 2)
    with pytest.raises(spla.DTypeError, match="'partition' must be a spla.partition.Partition"):
        seeds_by_part([0], np.zeros(5), 2)
