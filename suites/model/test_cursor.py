"""The cursor, as the model keeps it: how acks become markDeletePosition and holes.

Each test is one rule of `ManagedCursorImpl` (see model/cursor.py) written as an example; the last
one checks the normal form on random op sequences.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from model import cursor as c


def test_a_fresh_cursor_has_acknowledged_nothing():
    fresh = c.Cursor()
    assert fresh.mark_delete == -1 and fresh.individually_deleted == () and fresh.read_position == 0
    assert c.describe(fresh) == "markDelete=-1 deleted=none read=0"


def test_an_individual_ack_above_mark_delete_is_a_hole():
    cursor = c.delete(c.Cursor(), [3])
    assert cursor.mark_delete == -1
    assert cursor.individually_deleted == ((2, 3),)
    assert [e for e in range(6) if cursor.is_acknowledged(e)] == [3]


def test_mark_delete_advances_over_contiguous_acks_and_drops_the_ranges_it_covers():
    cursor = c.delete(c.Cursor(), [1, 2, 4])
    assert (cursor.mark_delete, cursor.individually_deleted) == (-1, ((0, 2), (3, 4)))
    cursor = c.delete(cursor, [0])
    assert (cursor.mark_delete, cursor.individually_deleted) == (2, ((3, 4),))
    cursor = c.delete(cursor, [3])
    assert (cursor.mark_delete, cursor.individually_deleted) == (4, ())


def test_adjacent_acks_merge_into_one_range():
    cursor = c.delete(c.Cursor(), [5, 3, 4])
    assert cursor.individually_deleted == ((2, 5),)


def test_a_cumulative_ack_acknowledges_everything_up_to_it_and_absorbs_holes():
    cursor = c.mark_delete(c.delete(c.Cursor(), [2, 6, 7]), 4)
    assert (cursor.mark_delete, cursor.individually_deleted) == (4, ((5, 7),))
    assert c.mark_delete(cursor, 1) == cursor, "a cumulative ack below markDelete changes nothing"


def test_a_batch_entry_is_deleted_when_its_last_index_is_acked():
    cursor = c.delete_batch_index(c.Cursor(), 0, 1, batch_size=3)
    cursor = c.delete_batch_index(cursor, 0, 0, batch_size=3)
    assert cursor.acked_indexes(0) == {0, 1} and not cursor.is_acknowledged(0)
    cursor = c.delete_batch_index(cursor, 0, 2, batch_size=3)
    assert cursor.is_acknowledged(0) and cursor.batch_deleted == () and cursor.mark_delete == 0


def test_reset_clears_holes_and_batch_indexes_and_is_the_only_way_back():
    cursor = c.delete_batch_index(c.delete(c.mark_delete(c.Cursor(), 3), [6]), 8, 0, batch_size=2)
    assert c.reset(cursor, 2) == c.Cursor(mark_delete=1, read_position=2)
    assert c.reset(cursor, 7) == c.Cursor(mark_delete=6, read_position=7), "seeking forward acks what it skips"


def test_rewind_reads_again_from_the_first_unacknowledged_entry():
    cursor = c.advance_read(c.delete(c.Cursor(), [0, 2]), 5)
    assert cursor.read_position == 5
    assert c.rewind(cursor).read_position == 1


_ops = st.lists(st.one_of(
    st.tuples(st.just("delete"), st.lists(st.integers(0, 15), max_size=4)),
    st.tuples(st.just("mark_delete"), st.integers(-1, 15)),
    st.tuples(st.just("batch"), st.integers(0, 15), st.integers(0, 2)),
    st.tuples(st.just("reset"), st.integers(0, 15)),
), max_size=25)


def _apply(cursor, op):
    match op:
        case ("delete", entries):
            return c.delete(cursor, entries)
        case ("mark_delete", entry):
            return c.mark_delete(cursor, entry)
        case ("batch", entry, index):
            return c.delete_batch_index(cursor, entry, index, batch_size=3)
        case ("reset", entry):
            return c.reset(cursor, entry)


@settings(max_examples=300, deadline=None)
@given(_ops)
def test_every_op_sequence_keeps_the_cursor_normalized_and_canonical(ops):
    cursor = c.Cursor()
    for op in ops:
        cursor = _apply(cursor, op)
        assert c.normalization_violations(cursor) == ()
        acked = cursor.acknowledged(16)
        rebuilt = c.from_acknowledged(acked - {e for e in range(cursor.mark_delete + 1)},
                                      mark_delete=cursor.mark_delete, batch_deleted=cursor.batch_deleted,
                                      read_position=cursor.read_position)
        assert rebuilt == cursor, "the cursor is a function of its acknowledged set"


def test_the_normal_form_check_can_fail():
    broken = c.Cursor(mark_delete=3, individually_deleted=((2, 4), (4, 6)), read_position=3)
    problems = c.normalization_violations(broken)
    assert any("not above markDeletePosition" in p for p in problems)
    assert any("touches" in p for p in problems)
    assert any("read position" in p for p in problems)
