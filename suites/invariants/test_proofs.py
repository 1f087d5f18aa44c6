"""The cursor's and the redelivery counter's guarantees, proved by one-step induction in Z3.

Each guarantee is proved of the encoding (model/smt/proofs.py), then refuted on a deliberately
wrong encoding passed to the same proof function: the counterexample Z3 returns is decoded into the
model's own values, and the test checks with the Python model (not Z3) that it really breaks the
guarantee. A proof that cannot fail proves nothing.
"""

import pytest
import z3

from model import cursor as cur
from model.smt import cursor as sc
from model.smt import proofs as p
from model.smt.solver import Unknown

pytestmark = pytest.mark.z3

Op = sc.CursorOp


@pytest.mark.parametrize("name", sorted(p.PROOFS))
def test_every_guarantee_is_proved_of_the_encoding(name):
    result = p.PROOFS[name]()
    assert result == p.Proved(property=name), result.describe()


def test_a_proof_that_runs_out_of_resources_is_unknown_not_proved():
    result = p.prove_cumulative_acks_prefix(rlimit=1)
    assert isinstance(result, Unknown), result
    assert result.reason.startswith("cumulative_acks_prefix")


def test_a_bounded_search_alone_finds_counterexamples_but_proves_nothing():
    assert isinstance(p.prove_cumulative_acks_prefix(bounds=(4,)), Unknown)
    result = p.prove_cumulative_acks_prefix(bounds=(4,), transitions={
        **sc.TRANSITIONS, Op.ACKNOWLEDGE_CUMULATIVE: cumulative_acking_only_the_entry})
    assert isinstance(result, p.Refuted) and result.counterexample.entries <= 4


# -- wrong cursor encodings ----------------------------------------------------------------------
def _target(before, args):
    return z3.If(args.entry > before.mark_delete, args.entry, before.mark_delete)


def acknowledge_skipping_unacked(topic, before, args, after):
    """markDelete jumps to the acked entry, over the unacked entries below it."""
    return sc.settle(topic, _target(before, args), z3.Store(before.deleted, args.entry, True), before.batch,
                     before.read_position, after)


def cumulative_dropping_holes_above(topic, before, args, after):
    """A cumulative ack that forgets the holes above the acked entry."""
    e = sc.position()
    target = _target(before, args)
    return sc.settle(topic, target, z3.Lambda([e], z3.And(before.deleted[e], e <= target)), before.batch,
                     before.read_position, after)


def cumulative_acking_only_the_entry(topic, before, args, after):
    return sc.acknowledge(topic, before, args, after)


def cumulative_without_max(topic, before, args, after):
    """markDelete := the acked entry, even below the current markDelete."""
    return sc.settle(topic, args.entry, before.deleted, before.batch, before.read_position, after)


def reset_keeping_holes(topic, before, args, after):
    return z3.And(after.mark_delete == args.entry - 1, after.read_position == args.entry,
                  after.deleted == before.deleted, after.batch == before.batch)


def unload_persisting_only_mark_delete(topic, before, args, after):
    """The individually deleted ranges are not persisted (as when there are too many to persist)."""
    e, i = sc.position(), sc.position("i")
    return z3.And(after.mark_delete == before.mark_delete, after.read_position == before.mark_delete + 1,
                  after.deleted == z3.Lambda([e], z3.BoolVal(False)), after.batch == z3.Lambda([e, i], z3.BoolVal(False)))


def refute(prove, op, wrong):
    result = prove(transitions={**sc.TRANSITIONS, op: wrong})
    assert isinstance(result, p.Refuted), result
    counterexample = result.counterexample
    assert counterexample.op is op and counterexample.before is not None, counterexample.describe()
    return counterexample


def test_holes_normalized_is_refuted_when_a_seek_keeps_the_holes():
    cx = refute(p.prove_holes_normalized, Op.RESET, reset_keeping_holes)
    assert cur.normalization_violations(cx.before) == ()
    assert cur.normalization_violations(cx.after), cx.describe()


def test_acked_exactly_is_refuted_when_mark_delete_skips_an_unacked_entry():
    cx = refute(p.prove_acked_exactly, Op.ACKNOWLEDGE, acknowledge_skipping_unacked)
    expected = cur.delete(cx.before, [cx.entry])
    skipped = cx.after.acknowledged(cx.entries) - expected.acknowledged(cx.entries)
    assert skipped and all(e < cx.after.mark_delete for e in skipped), cx.describe()


def test_acked_exactly_is_refuted_when_a_cumulative_ack_drops_a_hole_above_it():
    cx = refute(p.prove_acked_exactly, Op.ACKNOWLEDGE_CUMULATIVE, cumulative_dropping_holes_above)
    expected = cur.mark_delete(cx.before, cx.entry)
    dropped = expected.acknowledged(cx.entries) - cx.after.acknowledged(cx.entries)
    assert dropped and all(e > cx.entry for e in dropped), cx.describe()


def test_mark_delete_monotone_is_refuted_when_a_cumulative_ack_moves_it_back():
    cx = refute(p.prove_mark_delete_monotone, Op.ACKNOWLEDGE_CUMULATIVE, cumulative_without_max)
    assert cx.after.mark_delete < cx.before.mark_delete, cx.describe()


def test_cumulative_acks_prefix_is_refuted_when_it_acks_only_the_entry():
    cx = refute(p.prove_cumulative_acks_prefix, Op.ACKNOWLEDGE_CUMULATIVE, cumulative_acking_only_the_entry)
    assert not all(cx.after.is_acknowledged(e) for e in range(cx.entry + 1)), cx.describe()


def test_backlog_is_refuted_when_a_seek_keeps_the_holes():
    cx = refute(p.prove_backlog, Op.RESET, reset_keeping_holes)
    after = cx.after
    broker = cx.entries - (after.mark_delete + 1) - sum(upper - lower for lower, upper in after.individually_deleted)
    assert broker != after.backlog(cx.entries), cx.describe()


def test_acked_survives_unload_is_refuted_when_only_mark_delete_is_persisted():
    cx = refute(p.prove_acked_survives_unload, Op.UNLOAD, unload_persisting_only_mark_delete)
    assert cx.before.acknowledged(cx.entries) - cx.after.acknowledged(cx.entries), cx.describe()


# -- wrong redelivery counters -------------------------------------------------------------------
def redeliver_without_counting(config, before, after):
    return z3.If(p.goes_to_dead_letter(config, before),
                 p.dead_lettered(before, after), p.back_available(before, after, bump=0))


def dead_letter_one_delivery_late(config, before, after):
    late = z3.And(config.limited, config.tracked, before.count_hi >= config.limit + 1)
    return z3.If(late, p.dead_lettered(before, after), p.back_available(before, after, bump=p.bump(config)))


def refute_counter(prove, wrong):
    result = prove(transitions={**p.MESSAGE_TRANSITIONS, p.RedeliveryOp.REDELIVER: wrong})
    assert isinstance(result, p.Refuted), result
    cx = result.counterexample
    assert cx.op is p.RedeliveryOp.REDELIVER and cx.before.status == "held", cx.describe()
    return cx


def test_redelivery_count_is_refuted_when_a_redelivery_does_not_count():
    cx = refute_counter(p.prove_redelivery_count, redeliver_without_counting)
    assert cx.tracked and cx.after.status != "acked"
    assert cx.after.count_lo != cx.before.count_lo + 1, cx.describe()


def test_dead_letter_is_refuted_when_the_message_goes_one_delivery_late():
    cx = refute_counter(p.prove_dead_letter, dead_letter_one_delivery_late)
    due = cx.tracked and cx.max_redeliver_count is not None and cx.before.count_lo >= cx.max_redeliver_count
    assert due != (cx.after.dead and cx.after.status == "acked"), cx.describe()
    assert cx.before.count_lo == cx.max_redeliver_count, "late by exactly one delivery"
