"""The admin client turns the broker's cursor text into positions, and refuses what it cannot read."""

import pytest

from fixtures.admin import AdminError, CursorStats, Position, PositionRange, parse_ranges, topic_path


def test_individually_deleted_ranges_parse_with_either_separator():
    expected = (PositionRange(Position(5, 2), Position(5, 3)), PositionRange(Position(5, 5), Position(7, 1)))
    assert parse_ranges("[(5:2..5:3], (5:5..7:1]]") == expected
    assert parse_ranges("[(5:2\u20255:3], (5:5\u20257:1]]") == expected
    assert parse_ranges("[]") == ()


@pytest.mark.parametrize("text", ["(5:2..5:3]", "[(5:2..5:3], garbage]", "[(5:x..5:3]]", "nope"])
def test_malformed_ranges_are_an_error_not_an_empty_cursor(text):
    with pytest.raises(AdminError):
        parse_ranges(text)


def test_ranges_are_open_below_and_closed_above():
    hole = PositionRange(Position(5, 2), Position(5, 4))
    assert Position(5, 2) not in hole
    assert Position(5, 3) in hole and Position(5, 4) in hole
    assert Position(5, 5) not in hole


def test_a_position_is_acknowledged_at_or_below_mark_delete_or_inside_a_hole():
    cursor = CursorStats(mark_delete_position=Position(5, 1), read_position=Position(5, 9),
                         individually_deleted=(PositionRange(Position(5, 3), Position(5, 5)),), state="Open")
    acked = [e for e in range(0, 8) if cursor.is_acknowledged(Position(5, e))]
    assert acked == [0, 1, 4, 5]


def test_topic_names_must_be_fully_qualified():
    assert topic_path("persistent://public/default/t-1") == "persistent/public/default/t-1"
    with pytest.raises(AdminError, match="fully qualified"):
        topic_path("t-1")
