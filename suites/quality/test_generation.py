"""The conformance machine's generation (suites/generation.py) does what it promises: each example's
swarm leaves out some of its check's kinds and knobs and never the base ones, ops are worth more
when the state holds something for them, and ticks land beside the bounds of the windows open."""

from __future__ import annotations

import importlib
import itertools
import sys
from collections import Counter

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from fixtures import hypothesis_profiles  # noqa: F401  (registers the profiles)
from fixtures.targets.model_target import ModelTarget
from model import ops as o
from model.nondet import apply, start
from suites import generation as gen
from suites.conformance.catalog import SHARED, check
from suites.machines import STEPS_PER_KIND, conformance_machine, program_length
from suites.programs import NotAProgram, Step, run_program

m = o.MessageId
CI = settings(settings.get_profile("ci"), max_examples=60)
KIND_OF = {o.Send: "send", o.Subscribe: "subscribe", o.Receive: "receive", o.Acknowledge: "acknowledge",
           o.NegativeAcknowledge: "negative_acknowledge", o.Tick: "tick"}


class Recording(ModelTarget):
    def __init__(self, programs: list) -> None:
        super().__init__()
        self.programs = programs

    def reset(self, spec, program_id: str) -> None:
        super().reset(spec, program_id)
        self.programs.append((self.state, []))

    def invoke(self, op: o.Op) -> o.Completion:
        self.programs[-1][1].append((self.state, op))
        return super().invoke(op)


def _examples(area: str, spec, generation=gen.SWARM):
    """Run the check's machine; per example its swarm, and the ops of its steps (its teardown left
    out) with the state each was taken in."""
    programs, examples = [], []
    ids = (f"generation-{n}" for n in itertools.count())
    with gen.using(generation):
        machine = conformance_machine(Recording(programs), spec, lambda: next(ids), kinds=check(area).kinds,
                                      drain_idle_ms=30)

    class Noting(machine):
        def teardown(self) -> None:
            # The plain machine has no swarm; the target's current program is this example's.
            examples.append((getattr(self, "swarm", gen.Swarm()), programs[-1][1][:len(self.run.history)]))
            super().teardown()

    run_state_machine_as_test(Noting, settings=CI)
    return [s for s, _ in examples], [ops for _, ops in examples]


def test_each_example_leaves_out_some_kinds_and_knobs_never_the_base_ones():
    spec = check("negative_ack").specs["Key_Shared"]
    swarms, programs = _examples("negative_ack", spec)
    optional, knobs = gen.swarm_choices(check("negative_ack").kinds, spec)
    left_out = Counter(k for s in swarms for k in s.kinds) + Counter(k for s in swarms for k in s.knobs)
    for choice in optional + knobs:
        assert 0 < left_out[choice] < len(swarms), f"{choice} left out in {left_out[choice]} of {len(swarms)}"
    assert not any(s.kinds & {"send", "subscribe", "receive", "drain"} for s in swarms)
    # What an example left out, it never did.
    for swarm, ops in zip(swarms, programs):
        done = {KIND_OF.get(type(op)) for _, op in ops}
        assert not done & swarm.kinds, f"{swarm.describe()}, yet it did {done & swarm.kinds}"


def test_a_derandomized_check_draws_the_same_programs_whatever_modules_were_imported_before(tmp_path, monkeypatch):
    """The `ci` profile promises the same programs at every run: a module imported meanwhile (by
    another test, a plug-in target) must not change them, as Hypothesis's pool of local literals
    would (fixtures/hypothesis_profiles.py)."""
    spec = check("persistence").specs["Exclusive"]
    before = [[op for _, op in ops] for ops in _examples("persistence", spec)[1]]
    (tmp_path / "literals_elsewhere.py").write_text(f"LITERALS = {tuple(range(1, 4096, 41))!r}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "literals_elsewhere", raising=False)
    importlib.import_module("literals_elsewhere")
    after = [[op for _, op in ops] for ops in _examples("persistence", spec)[1]]
    changed = [i for i, (a, b) in enumerate(zip(after, before)) if a != b]
    assert after == before, f"{len(changed)} of {len(before)} programs changed, the first: example {changed[:1]}"


def test_the_plain_generation_has_no_swarm_and_no_boundary_tick():
    swarms, programs = _examples("negative_ack", SHARED, gen.PLAIN)
    assert all(s == gen.Swarm() for s in swarms)
    ticks = {op.ms for ops in programs for _, op in ops if isinstance(op, o.Tick)}
    assert ticks <= {SHARED.nack_window_ms[1] + 50, SHARED.ack_grouping_ms + 50, 20 + SHARED.nack_window_ms[1]}


def test_ticks_land_beside_the_bounds_of_the_windows_open():
    _, programs = _examples("negative_ack", SHARED)
    beside = Counter()
    for ops in programs:
        for state, op in ops:
            if not isinstance(op, o.Tick):
                continue
            bounds = {b for x in state.messages if x.redelivery_from is not None
                      for b in (x.redelivery_from, x.redelivery_by)}
            landing = state.now + op.ms
            beside["before"] += landing + 1 in bounds
            beside["on or after"] += bool({landing, landing - 1} & bounds)
    assert beside["before"] and beside["on or after"], beside


def _state(program, spec=SHARED):
    verdict = start(spec)
    for op, completion in program:
        verdict = apply(verdict, op, completion)
    return next(iter(verdict.states))


HELD = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(), o.ok()), (o.Send(), o.ok()),
        (o.Receive(consumer="c0"), o.ok(o.Delivery(message=m(0), redelivery_count=0))),
        (o.Receive(consumer="c0"), o.ok(o.Delivery(message=m(1), redelivery_count=0)))]


def test_a_seek_an_unload_and_a_nack_are_worth_more_with_acks_pending():
    held = _state(HELD)
    pending = _state(HELD + [(o.Acknowledge(consumer="c0", message=m(1)), o.ok())])
    for kind in ("seek", "unload", "negative_acknowledge", "read_cursor"):
        assert gen.weight(pending, kind) > gen.weight(held, kind), kind
    assert gen.weight(pending, "send") == gen.weight(held, "send")
    empty = _state(HELD[:1])
    assert gen.weight(held, "close") > gen.weight(empty, "close")
    queued = _state(HELD[:3])  # two messages sent, none received yet
    assert gen.weight(queued, "drain_others") > gen.weight(held, "drain_others")


def test_under_a_dead_letter_policy_a_nack_and_a_redelivery_request_are_worth_more_while_a_held_message_is_not_asked_again():
    """Each takes a held message one count nearer the dead-letter topic, where the client's
    dead-letter rules are (model/transitions/redelivery.py); once asked, the next one waits for the copy."""
    policy = SHARED.with_(max_redeliver_count=1)
    for kind in ("negative_acknowledge", "redeliver_unacknowledged_messages"):
        assert gen.weight(_state(HELD, policy), kind) > gen.weight(_state(HELD), kind), kind
        asked = HELD + [(o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok())]
        assert gen.weight(_state(asked, policy), kind) == gen.weight(_state(asked), kind), kind


BATCH = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(keys=(None, None, None), batched=True), o.ok()),
         (o.Receive(consumer="c0"), o.ok(o.Delivery(message=m(0, 0), redelivery_count=0))),
         (o.Receive(consumer="c0"), o.ok(o.Delivery(message=m(0, 1), redelivery_count=0)))]


def test_a_seek_that_acknowledges_the_indexes_before_it_is_drawn_more_and_a_close_after_it_too():
    """The Java client's seek to a batch index acknowledges the indexes before it for the
    subscription (KD-8), and a close or a redelivery request of the entry after it must not bring
    them back (model/transitions/redelivery.py, entries_come_back): a state only a seek past a
    batch's first index makes, so such a seek is offered more, and the close after it is worth more."""
    java = SHARED.with_(seek_sends_batch_index=True)
    assert gen.weight(_state(BATCH, java), "seek") > gen.weight(_state(BATCH), "seek")
    offered = Counter(op.message for op in gen.options(_state(BATCH, java), "seek", gen.SWARM, gen.Swarm()))
    assert offered[m(0, 1)] > offered[m(0, 0)] == 1
    seeked = BATCH + [(o.Seek(consumer="c0", message=m(0, 1)), o.ok()),
                      (o.Receive(consumer="c0"), o.ok(o.Delivery(message=m(0, 1), redelivery_count=0)))]
    for kind in ("close", "redeliver_unacknowledged_messages"):
        assert gen.weight(_state(seeked, java), kind) > gen.weight(_state(seeked), kind) + gen.LOOK, kind
    # Its ack set made, another seek is worth no more for it.
    assert gen.weight(_state(seeked, java), "seek") == gen.weight(_state(seeked), "seek")


def test_under_a_dead_letter_policy_a_seek_is_worth_more_while_messages_are_held_and_a_receive_right_after_it():
    """A seek hands back what is held with its count open (0 or one more): the count its next
    delivery shows is the one the dead-letter policy counts on from. What the reset sends shows to
    a receive right after it."""
    policy = SHARED.with_(max_redeliver_count=1)
    assert gen.weight(_state(HELD, policy), "seek") > gen.weight(_state(HELD), "seek")
    assert gen.weight(_state(HELD[:3], policy), "seek") == gen.weight(_state(HELD[:3]), "seek")  # nothing held
    held = _state(HELD)
    assert gen.weight(held, "receive", last=o.Seek(consumer="c0", message=m(0))) \
        > gen.weight(held, "receive", last=o.Send())


def test_a_tick_is_mostly_followed_by_a_receive_and_an_unload_by_a_cursor_read():
    """A tick to just inside a window shows nothing unless a receive follows it: with a nack backoff,
    a client that redelivers at the plain nack delay shows only to a receive between the two
    (suites/generation.py). Most ticks are followed by a receive, at once."""
    spec = check("negative_ack").specs["Shared-backoff"]
    programs = _examples("negative_ack", spec)[1]
    followed = Counter(isinstance(ops[i + 1][1], o.Receive) for ops in programs
                       for i in range(len(ops) - 1) if isinstance(ops[i][1], o.Tick))
    assert sum(followed.values()) >= 50, followed
    assert followed[True] >= followed[False], followed
    held = _state(HELD)
    assert gen.weight(held, "receive", last=o.Tick(ms=10)) > gen.weight(held, "receive", last=o.Send())
    # Likewise what an unload kept of the cursor shows to a read right after it.
    assert gen.weight(held, "read_cursor", last=o.Unload()) > gen.weight(held, "read_cursor", last=o.Send())


def test_an_unload_is_worth_more_only_for_what_it_can_still_put_to_the_test():
    """The copies an unload gives back are its own doing, and the acks pending at it are in doubt
    after it: neither makes the next unload worth more (they did, and a program with one unload
    had fifteen). Right after an unload, another is worth the base."""
    pending = HELD + [(o.Acknowledge(consumer="c0", message=m(1)), o.ok())]
    assert gen.weight(_state(pending), "unload") > gen.BASE_WEIGHT
    # A nack whose redelivery is still to be asked: the new dispatcher will count it.
    assert gen.weight(_state(HELD + [(o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok())]), "unload") \
        > gen.weight(_state(HELD), "unload")
    unloaded = _state(pending + [(o.Unload(), o.ok())])
    assert gen.weight(unloaded, "unload", last=o.Send()) == gen.BASE_WEIGHT
    assert gen.weight(unloaded, "unload", last=o.Unload()) == gen.BASE_WEIGHT
    # Back on its new connection (it got a message sent after the unload), an ack it makes is one
    # the next unload may drop.
    back = pending + [(o.Unload(), o.ok()), (o.Send(), o.ok()),
                      (o.Receive(consumer="c0"), o.ok(o.Delivery(message=m(0), redelivery_count=0))),
                      (o.Receive(consumer="c0"), o.ok(o.Delivery(message=m(2), redelivery_count=0)))]
    assert gen.weight(_state(back), "unload", last=o.Receive(consumer="c0")) == gen.BASE_WEIGHT
    acked_again = _state(back + [(o.Acknowledge(consumer="c0", message=m(2)), o.ok())])
    assert gen.weight(acked_again, "unload", last=o.Acknowledge(consumer="c0", message=m(2))) > gen.BASE_WEIGHT


def test_a_kind_takes_as_many_tickets_as_its_weight():
    drawn = Counter(gen.pick([("send", 2), ("seek", 6)], ticket) for ticket in range(gen.TICKETS))
    assert drawn["seek"] == 3 * drawn["send"]


def test_a_program_with_a_boundary_tick_replays_and_a_made_up_tick_does_not():
    nack = [Step(rule="subscribe", op=o.Subscribe(consumer="c0")), Step(rule="send", op=o.Send()),
            Step(rule="receive", op=o.Receive(consumer="c0")),
            Step(rule="negative_acknowledge", op=o.NegativeAcknowledge(consumer="c0", message=m(0)))]
    run_program(ModelTarget(), SHARED, "replay-0", tuple(nack) + (
        Step(rule="tick", op=o.Tick(ms=SHARED.nack_window_ms[0] - 1)),))
    try:
        run_program(ModelTarget(), SHARED, "replay-1", tuple(nack) + (Step(rule="tick", op=o.Tick(ms=7)),))
    except NotAProgram:
        pass
    else:
        raise AssertionError("a tick no generation offers was taken as a step of a program")


def test_a_check_of_many_kinds_gets_room_for_them_on_the_model_and_a_broker_keeps_its_program_length():
    ci = settings.get_profile("ci")
    dense = check("redelivery_count_and_dead_letter").kinds
    assert program_length(ci, dense, deterministic=True).stateful_step_count == STEPS_PER_KIND * len(dense) > 25
    assert program_length(ci, dense, deterministic=False).stateful_step_count == 25
    assert program_length(ci, check("seek").kinds, deterministic=True).stateful_step_count == 25
    nightly = settings.get_profile("nightly")
    assert program_length(nightly, dense, deterministic=True).stateful_step_count == 80
