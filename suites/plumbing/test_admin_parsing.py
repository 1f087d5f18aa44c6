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


def test_a_stall_s_failure_says_what_the_dispatcher_holds_and_each_consumer_s_permits():
    from fixtures.admin import ConsumerStats, SubscriptionStats
    from fixtures.targets.faulty import LosesAMessage
    from fixtures.targets.lockstep import ConformanceFailure, Lockstep
    from model import ops as o
    from model.spec import Spec, SubscriptionType

    stats = SubscriptionStats(type="Failover", backlog=3, unacked_messages=1, msg_in_replay=2, msg_rate_redeliver=0.0,
                              active_consumer="c0", consumers=(
                                  ConsumerStats(name="c0", available_permits=0, unacked_messages=1,
                                                blocked_on_unacked_messages=True, msg_out_counter=4,
                                                msg_rate_redeliver=0.0),))
    line = ("backlog 3, unacked 1, in replay 2, active c0; consumers: c0: 0 permits, 1 unacked, blocked on unacked")
    assert stats.describe() == line

    class Broker:
        def dispatcher_state(self):
            return line

    target = LosesAMessage()
    target.broker = Broker()
    run = Lockstep(target, Spec(subscription_type=SubscriptionType.SHARED), "p")
    run.do(o.Subscribe(consumer="c0"))
    for _ in range(3):
        run.do(o.Send())
    with pytest.raises(ConformanceFailure) as caught:
        run.drain()
    assert caught.value.violation.detail == "drained every consumer, yet m2 never came"
    assert caught.value.broker_state == line and f"broker's dispatcher then: {line}" in str(caught.value)
