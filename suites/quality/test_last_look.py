"""The teardown's last look at the cursor (suites.programs.last_look): in a check that reads the
cursor, a program ends with every consumer closed, which flushes the acks their clients grouped,
and one more read, which must show each of them. A read in the program can only bound the acks
still grouped; the last one sees what became of them."""

import pytest

from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from fixtures.targets.model_target import ModelTarget
from model import ops as o
from suites.conformance.catalog import CHECKS, check
from suites.programs import BEFORE_LAST_CLOSES_MS, Step, looks_at_cursor, run_program, settle
from suites.quality.test_allowed import B, SPEC, forgetful_target

# A batch's first index acked, a read while that ack is grouped, the other two acked: the program
# ends there, without a close or a read of its own.
PROGRAM = (Step(rule="send", op=o.Send(keys=(None,) * 3, batched=True)),
           Step(rule="subscribe", op=o.Subscribe(consumer="c0")),
           *[Step(rule="receive", op=o.Receive(consumer="c0"))] * 3,
           Step(rule="acknowledge", op=o.Acknowledge(consumer="c0", message=B[0])),
           Step(rule="read_cursor", op=o.ReadCursor()),
           Step(rule="acknowledge", op=o.Acknowledge(consumer="c0", message=B[1])),
           Step(rule="acknowledge", op=o.Acknowledge(consumer="c0", message=B[2])))


def test_a_check_that_reads_the_cursor_takes_the_last_look_and_no_other_does():
    looking = {c.area for c in CHECKS if looks_at_cursor(c.kinds)}
    assert {"individual_ack", "batches", "consumer_close", "persistence", "partitioned"} <= looking
    assert not looking & {"negative_ack", "zero_queue", "seek", "retry_letter_topic"}


def _ended(spec, steps, *, subscribe_c1: bool = False) -> list[o.Op]:
    run = Lockstep(ModelTarget(), spec, "last-look")
    for step in steps:
        run.do(step.op)
    if subscribe_c1:
        run.do(o.Subscribe(consumer="c1"))
    settle(run, 30, look_at_cursor=True)
    return [op for op, _ in run.history[len(steps) + subscribe_c1:]]


def test_after_the_drain_every_consumer_closes_and_the_cursor_is_read():
    ending = _ended(SPEC.with_(subscription_type=SPEC.subscription_type.SHARED), PROGRAM, subscribe_c1=True)
    assert ending[-3:] == [o.Close(consumer="c0"), o.Close(consumer="c1"), o.ReadCursor()]
    assert all(isinstance(op, o.Receive) for op in ending[:-3])  # the drain, first


def test_under_a_dead_letter_policy_the_closes_wait_for_a_dead_letter_send_on_its_way():
    spec = check("redelivery_count_and_dead_letter").specs["Shared-dlq1"]
    ending = _ended(spec, PROGRAM[:5])
    assert ending[-3:] == [o.Tick(ms=BEFORE_LAST_CLOSES_MS), o.Close(consumer="c0"), o.ReadCursor()]


def test_a_program_whose_consumers_all_closed_still_reads_the_cursor_once_more():
    ending = _ended(SPEC, PROGRAM + (Step(rule="close", op=o.Close(consumer="c0")),))
    assert ending == [o.ReadCursor()]


def test_a_grouped_batch_index_ack_that_a_read_forgot_shows_only_at_the_last_look():
    """The client forgets a batch index's ack still grouped at a cursor read: the batch is never
    whole. No read of the program can tell (each may show the grouped acks or not); the last one
    can."""
    run_program(forgetful_target(), SPEC, "without", PROGRAM, look_at_cursor=False)
    run_program(ModelTarget(), SPEC, "model", PROGRAM, look_at_cursor=True)
    with pytest.raises(ConformanceFailure) as caught:
        run_program(forgetful_target(), SPEC, "with", PROGRAM, look_at_cursor=True)
    assert caught.value.violation.guarantee.value == "cursor"
    assert isinstance(caught.value.history[-1][0], o.ReadCursor)
