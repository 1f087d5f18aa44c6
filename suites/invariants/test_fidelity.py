"""The Z3 encoding says what the Python model says.

A proof about the encoding (model/smt) is only worth something if the encoding is the model: here
Hypothesis builds concrete cursors with model/cursor.py's own ops, picks an op, and the encoded op
evaluated on the concrete cursor (`smt.cursor.successors`) must give exactly the cursor the Python
function gives, and exactly the set of cursors a crash may leave. The redelivery counter's encoding
is checked the same way against the model's `step` (model/transitions) on a one-message state.
"""

from itertools import combinations, product

import pytest
import z3
from hypothesis import example, given, settings
from hypothesis import strategies as st

from model import cursor as cur
from model import ops as o
from model.smt import cursor as sc
from model.smt import counter as ctr
from model.spec import Spec, SubscriptionType
from model.state import Consumer, Message, State, Status
from model.transitions import step
from model.violations import Violation

pytestmark = pytest.mark.z3

Op = sc.CursorOp
FAST = settings(max_examples=40, deadline=None)


@st.composite
def topics(draw, max_entries=7):
    """(entries, batch sizes) of a topic; batch entries hold 2 or 3 messages."""
    entries = draw(st.integers(1, max_entries))
    batches = draw(st.dictionaries(st.integers(0, entries - 1), st.integers(2, 3), max_size=2))
    return entries, batches


@st.composite
def cursors(draw, entries, batch_sizes):
    """A cursor reached by model/cursor.py's ops on the topic."""
    cursor = cur.Cursor()
    entry = st.integers(0, entries - 1)
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["delete", "mark_delete", "batch", "reset", "advance_read", "rewind"]))
        if kind == "delete":
            cursor = cur.delete(cursor, [draw(entry)])
        elif kind == "mark_delete":
            cursor = cur.mark_delete(cursor, draw(st.integers(-1, entries - 1)))
        elif kind == "batch" and batch_sizes:
            target = draw(st.sampled_from(sorted(batch_sizes)))
            cursor = cur.delete_batch_index(cursor, target, draw(st.integers(0, batch_sizes[target] - 1)),
                                            batch_sizes[target])
        elif kind == "reset":
            cursor = cur.reset(cursor, draw(st.integers(0, entries)))
        elif kind == "advance_read":
            cursor = cur.advance_read(cursor, draw(st.integers(0, entries)))
        elif kind == "rewind":
            cursor = cur.rewind(cursor)
    return cursor


def python_step(op, cursor, entry, index, batch_sizes):
    """What the Python model does; unload goes through model/transitions/reopen.py (`reopen`)."""
    match op:
        case Op.ACKNOWLEDGE:
            return cur.delete(cursor, [entry])
        case Op.ACKNOWLEDGE_CUMULATIVE:
            return cur.mark_delete(cursor, entry)
        case Op.ACKNOWLEDGE_BATCH_INDEX:
            return cur.delete_batch_index(cursor, entry, index, batch_sizes.get(entry, 1))
        case Op.REWIND:
            return cur.rewind(cursor)
        case Op.RESET:
            return cur.reset(cursor, entry)
        case Op.UNLOAD:
            return step(State(spec=Spec(), cursor=cursor), o.Unload(), o.ok()).cursor
    raise AssertionError(op)


@st.composite
def deterministic_steps(draw):
    entries, batch_sizes = draw(topics())
    cursor = draw(cursors(entries, batch_sizes))
    op = draw(st.sampled_from([op for op in Op if op is not Op.CRASH]))
    entry = draw({Op.ACKNOWLEDGE_CUMULATIVE: st.integers(-1, entries - 1), Op.RESET: st.integers(0, entries)}.get(
        op, st.integers(0, entries - 1)))
    index = draw(st.integers(0, batch_sizes.get(entry, 1) - 1)) if entry >= 0 else 0
    return entries, batch_sizes, cursor, op, entry, index


@FAST
@given(deterministic_steps())
@pytest.mark.guarantee("cursor")
def test_every_encoded_op_gives_the_python_models_cursor(case):
    entries, batch_sizes, cursor, op, entry, index = case
    expected = python_step(op, cursor, entry, index, batch_sizes)
    got = sc.apply(op, cursor, entries=entries, batch_sizes=batch_sizes, entry=entry, index=index)
    assert got == expected, f"{op}({entry}.{index}) on {cur.describe(cursor)}: Z3 {cur.describe(got)}"


def crash_outcomes(before, floor, entries, batch_sizes):
    """Every normalized cursor between the floor and `before`, read again from markDelete + 1."""
    acked, kept = before.acknowledged(entries), floor.acknowledged(entries)
    optional = sorted(acked - kept)
    outcomes = set()
    for size in range(len(optional) + 1):
        for chosen in combinations(optional, size):
            base = cur.from_acknowledged(kept | set(chosen))
            choices = []
            for e in range(entries):
                if base.is_acknowledged(e):
                    continue
                allowed = set(range(batch_sizes.get(e, 1))) if e in acked else set(before.acked_indexes(e))
                required = set(floor.acked_indexes(e))
                extra = sorted(allowed - required)
                options = [frozenset(required | set(c)) for n in range(len(extra) + 1) for c in combinations(extra, n)]
                choices.append([(e, ix) for ix in options if ix and len(ix) < batch_sizes.get(e, 1)] + [None])
            for picked in product(*choices):
                batch = tuple(sorted(b for b in picked if b is not None))
                outcomes.add(cur.Cursor(mark_delete=base.mark_delete, individually_deleted=base.individually_deleted,
                                        batch_deleted=batch, read_position=base.mark_delete + 1))
    return outcomes


@st.composite
def crashes(draw):
    entries, batch_sizes = draw(topics(max_entries=5))
    before = draw(cursors(entries, batch_sizes))
    acked = sorted(before.acknowledged(entries))
    kept = draw(st.sets(st.sampled_from(acked))) if acked else set()
    floor = cur.from_acknowledged(kept)
    return entries, batch_sizes, before, floor


@settings(max_examples=15, deadline=None)
@given(crashes())
@pytest.mark.guarantee("cursor")
def test_a_crash_may_leave_exactly_the_cursors_between_the_floor_and_now(case):
    entries, batch_sizes, before, floor = case
    got = sc.successors(Op.CRASH, before, entries=entries, batch_sizes=batch_sizes, floor=floor, limit=512)
    assert set(got) == crash_outcomes(before, floor, entries, batch_sizes)
    modelled = step(State(spec=Spec(), cursor=before), o.Crash(), o.ok()).cursor
    assert modelled in got, "the Python model keeps the cursor (every ack in doubt) after a crash"


@pytest.mark.guarantee("cursor")
def test_an_op_outside_its_precondition_has_no_successor():
    assert sc.successors(Op.ACKNOWLEDGE, cur.Cursor(), entries=3, entry=3) == ()
    assert sc.successors(Op.ACKNOWLEDGE_BATCH_INDEX, cur.Cursor(), entries=3, batch_sizes={1: 2}, entry=1, index=2) == ()


# -- the redelivery counter against model/transitions --------------------------------------------
M = o.MessageId(0)


def one_message_state(spec, message, consumers=("c0",)):
    return State(spec=spec, messages=(message,), entries=(0,), consumers=tuple(Consumer(name=c) for c in consumers))


def stepped_counter(op, spec, counts, delivered, *, queued=False):
    """The message's counter after `op` in model/transitions, as a MessageState (None: a violation).
    `queued`: a reopen finds the message available (a copy may sit in a receiver queue), not held."""
    lo, hi = counts
    # A held message carries the count it was delivered with (lo == hi here: the encoding's domain).
    held = Message(id=M, status=Status.HELD, holder="c0", delivered=True, never_dispatched=False, count_lo=lo,
                   count_hi=hi, held_count=lo)
    available = held.with_(status=Status.AVAILABLE, holder=None)
    match op:
        case ctr.RedeliveryOp.RECEIVE:
            state = step(one_message_state(spec, available), o.Receive(consumer="c0"),
                         o.ok(o.Delivery(message=M, redelivery_count=delivered)))
        case ctr.RedeliveryOp.ACKNOWLEDGE:
            state = step(one_message_state(spec, held), o.Acknowledge(consumer="c0", message=M), o.ok())
        case ctr.RedeliveryOp.REDELIVER | ctr.RedeliveryOp.REDELIVER_QUEUED:
            start = held if op is ctr.RedeliveryOp.REDELIVER else available
            state = step(one_message_state(spec, start), o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok())
            state = step(state, o.Tick(ms=1), o.ok(at=1))  # the redelivery lands
        case ctr.RedeliveryOp.CLOSE:
            state = step(one_message_state(spec, held, ("c0", "c1")), o.Close(consumer="c0"), o.ok())
        case ctr.RedeliveryOp.CLOSE_LAST:
            state = step(one_message_state(spec, held), o.Close(consumer="c0"), o.ok())
        case ctr.RedeliveryOp.REOPEN:
            state = step(one_message_state(spec, available if queued else held), o.Unload(), o.ok())
        case ctr.RedeliveryOp.SEEK:
            state = step(one_message_state(spec, held), o.Seek(consumer="c0", message=M), o.ok())
    if isinstance(state, Violation):
        return None
    message = state.message(M)
    dead = op is ctr.RedeliveryOp.REDELIVER and message.status is Status.ACKED
    status = "available" if message.status is Status.HELD and message.redelivery_by is not None else message.status.value
    return ctr.MessageState(status=status, count_lo=message.count_lo, count_hi=message.count_hi, dead=dead)


@st.composite
def counter_steps(draw):
    subscription = draw(st.sampled_from(list(SubscriptionType)))
    spec = Spec(subscription_type=subscription, max_redeliver_count=draw(st.none() | st.integers(1, 3)))
    op = draw(st.sampled_from(list(ctr.RedeliveryOp)))
    if not subscription.tracks_redelivery_count:
        counts = (0, 0)
    elif op is ctr.RedeliveryOp.RECEIVE:
        counts = tuple(sorted(draw(st.tuples(st.integers(0, 4), st.integers(0, 4)))))
    else:
        counts = (draw(st.integers(0, 4)),) * 2
    queued = op is ctr.RedeliveryOp.REOPEN and draw(st.booleans())
    return spec, op, counts, draw(st.integers(0, 5)), queued


@settings(max_examples=60, deadline=None)
@given(counter_steps())
@example((Spec(subscription_type=SubscriptionType.KEY_SHARED), ctr.RedeliveryOp.REOPEN, (1, 1), 0, True))
@pytest.mark.guarantee("redelivery-count")
def test_the_encoded_redelivery_counter_follows_the_step_functions(case):
    spec, op, (lo, hi), delivered, queued = case
    expected = stepped_counter(op, spec, (lo, hi), delivered, queued=queued)
    available = queued or op in (ctr.RedeliveryOp.RECEIVE, ctr.RedeliveryOp.REDELIVER_QUEUED)
    status = "available" if available else "held"
    got = ctr.message_successors(op, ctr.MessageState(status=status, count_lo=lo, count_hi=hi),
                               tracked=spec.subscription_type.tracks_redelivery_count,
                               max_redeliver_count=spec.max_redeliver_count, delivered_count=delivered)
    assert got == (() if expected is None else (expected,))


@pytest.mark.guarantee("cursor")
def test_the_fidelity_check_can_fail():
    def reset_keeping_holes(topic, before, args, after):
        return z3.And(after.mark_delete == args.entry - 1, after.read_position == args.entry,
                      after.deleted == before.deleted, after.batch == before.batch)

    cursor = cur.delete(cur.Cursor(), [3])
    got = sc.apply(Op.RESET, cursor, entries=5, entry=1, transitions={**sc.TRANSITIONS, Op.RESET: reset_keeping_holes})
    assert got != cur.reset(cursor, 1) and got.is_acknowledged(3)
