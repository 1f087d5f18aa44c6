"""Every proof of the catalog (model/smt/catalog.py), each for the guarantee it declares, proved by
one-step induction in Z3; and every guarantee either proved or given a reason there is no proof.

Each guarantee is proved of the encoding (model/smt/cursor_proofs.py, model/smt/counter.py), then
refuted on a deliberately wrong encoding passed to the same proof function: the counterexample Z3
returns is decoded into the model's own values, and the test checks with the Python model (not Z3)
that it really breaks the guarantee. A proof that cannot fail proves nothing.
"""

import importlib
import inspect
import pkgutil

import pytest
import z3

import model.smt
from model import cursor as cur
from model.guarantees import Guarantee
from model.smt import counter as ctr
from model.smt import cursor as sc
from model.smt import cursor_proofs as cp
from model.smt.catalog import NO_PROOF_BECAUSE, PROOFS, Proof
from model.smt.induction import Proved, Refuted
from model.smt.solver import Unknown

pytestmark = pytest.mark.z3

Op = sc.CursorOp


@pytest.mark.parametrize("proof", PROOFS, ids=lambda proof: proof.name)
def test_every_proof_of_the_catalog_is_proved_of_the_encoding(proof):
    result = proof.prove()
    assert result == Proved(property=proof.name), result.describe()


# -- the catalog is complete -----------------------------------------------------------------------
def proof_functions() -> dict[str, object]:
    """Every proof function of the smt modules: a public `prove_*` function callable with no
    argument (`prove_cursor`, `prove_message` need the property they prove)."""
    found = {}
    for info in pkgutil.iter_modules(model.smt.__path__, prefix="model.smt."):
        module = importlib.import_module(info.name)
        for name, function in inspect.getmembers(module, inspect.isfunction):
            required = [parameter for parameter in inspect.signature(function).parameters.values()
                        if parameter.default is parameter.empty
                        and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]
            if name.startswith("prove_") and function.__module__ == module.__name__ and not required:
                found[f"{module.__name__}.{name}"] = function
    return found


def left_out(proofs: tuple[Proof, ...]) -> list[str]:
    listed = {proof.prove for proof in proofs}
    return sorted(name for name, function in proof_functions().items() if function not in listed)


def test_every_proof_names_a_guarantee_and_a_unique_name():
    for proof in PROOFS:
        assert isinstance(proof.guarantee, Guarantee) and proof.doc, proof
    names = [proof.name for proof in PROOFS]
    assert len(set(names)) == len(names), names


def test_no_proof_function_is_left_out_of_the_catalog():
    assert len(proof_functions()) >= len(PROOFS)
    assert left_out(PROOFS) == []


def test_a_proof_left_out_of_the_catalog_is_named():
    without_backlog = tuple(proof for proof in PROOFS if proof.name != "backlog")
    assert left_out(without_backlog) == ["model.smt.cursor_proofs.prove_backlog"]


def test_every_guarantee_is_proved_or_has_a_reason_not_both():
    proved = {proof.guarantee for proof in PROOFS}
    assert proved.isdisjoint(NO_PROOF_BECAUSE), sorted(proved & set(NO_PROOF_BECAUSE))
    assert proved | set(NO_PROOF_BECAUSE) == set(Guarantee), sorted(set(Guarantee) - proved - set(NO_PROOF_BECAUSE))
    for guarantee, reason in NO_PROOF_BECAUSE.items():
        assert reason.endswith(".") and reason.count(". ") == 0, (guarantee, reason)


# -- results that are not proofs -------------------------------------------------------------------
def test_a_proof_that_runs_out_of_resources_is_unknown_not_proved():
    result = cp.prove_cumulative_acks_prefix(rlimit=1)
    assert isinstance(result, Unknown), result
    assert result.reason.startswith("cumulative_acks_prefix")


def test_a_bounded_search_alone_finds_counterexamples_but_proves_nothing():
    assert isinstance(cp.prove_cumulative_acks_prefix(bounds=(4,)), Unknown)
    result = cp.prove_cumulative_acks_prefix(bounds=(4,), transitions={
        **sc.TRANSITIONS, Op.ACKNOWLEDGE_CUMULATIVE: cumulative_acking_only_the_entry})
    assert isinstance(result, Refuted) and result.counterexample.entries <= 4


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


def rewind_keeping_the_read_position(topic, before, args, after):
    """A redelivery on Exclusive/Failover that goes on reading where it was."""
    return sc.unchanged(before, after)


def refute(prove, op, wrong):
    result = prove(transitions={**sc.TRANSITIONS, op: wrong})
    assert isinstance(result, Refuted), result
    counterexample = result.counterexample
    assert counterexample.op is op and counterexample.before is not None, counterexample.describe()
    return counterexample


def test_holes_normalized_is_refuted_when_a_seek_keeps_the_holes():
    cx = refute(cp.prove_holes_normalized, Op.RESET, reset_keeping_holes)
    assert cur.normalization_violations(cx.before) == ()
    assert cur.normalization_violations(cx.after), cx.describe()


def test_acked_exactly_is_refuted_when_mark_delete_skips_an_unacked_entry():
    cx = refute(cp.prove_acked_exactly, Op.ACKNOWLEDGE, acknowledge_skipping_unacked)
    expected = cur.delete(cx.before, [cx.entry])
    skipped = cx.after.acknowledged(cx.entries) - expected.acknowledged(cx.entries)
    assert skipped and all(e < cx.after.mark_delete for e in skipped), cx.describe()


def test_acked_exactly_is_refuted_when_a_cumulative_ack_drops_a_hole_above_it():
    cx = refute(cp.prove_acked_exactly, Op.ACKNOWLEDGE_CUMULATIVE, cumulative_dropping_holes_above)
    expected = cur.mark_delete(cx.before, cx.entry)
    dropped = expected.acknowledged(cx.entries) - cx.after.acknowledged(cx.entries)
    assert dropped and all(e > cx.entry for e in dropped), cx.describe()


def test_mark_delete_monotone_is_refuted_when_a_cumulative_ack_moves_it_back():
    cx = refute(cp.prove_mark_delete_monotone, Op.ACKNOWLEDGE_CUMULATIVE, cumulative_without_max)
    assert cx.after.mark_delete < cx.before.mark_delete, cx.describe()


def test_cumulative_acks_prefix_is_refuted_when_it_acks_only_the_entry():
    cx = refute(cp.prove_cumulative_acks_prefix, Op.ACKNOWLEDGE_CUMULATIVE, cumulative_acking_only_the_entry)
    assert not all(cx.after.is_acknowledged(e) for e in range(cx.entry + 1)), cx.describe()


def test_backlog_is_refuted_when_a_seek_keeps_the_holes():
    cx = refute(cp.prove_backlog, Op.RESET, reset_keeping_holes)
    after = cx.after
    broker = cx.entries - (after.mark_delete + 1) - sum(upper - lower for lower, upper in after.individually_deleted)
    assert broker != after.backlog(cx.entries), cx.describe()


def test_acked_survives_unload_is_refuted_when_only_mark_delete_is_persisted():
    cx = refute(cp.prove_acked_survives_unload, Op.UNLOAD, unload_persisting_only_mark_delete)
    assert cx.before.acknowledged(cx.entries) - cx.after.acknowledged(cx.entries), cx.describe()


def test_unacked_read_again_is_refuted_when_a_rewind_keeps_the_read_position():
    cx = refute(cp.prove_unacked_read_again, Op.REWIND, rewind_keeping_the_read_position)
    skipped = [e for e in range(cx.entries) if not cx.after.is_acknowledged(e) and e < cx.after.read_position]
    assert skipped, cx.describe()


# -- wrong redelivery counters -------------------------------------------------------------------
def redeliver_without_counting(config, before, after):
    return z3.If(ctr.goes_to_dead_letter(config, before),
                 ctr.dead_lettered(config, before, after), ctr.back_available(before, after, bump=0))


def dead_letter_one_delivery_late(config, before, after):
    late = z3.And(config.limited, config.tracked, before.count_hi >= config.limit + 1)
    return z3.If(late, ctr.dead_lettered(config, before, after), ctr.back_available(before, after, bump=ctr.bump(config)))


def redeliver_counting_without_a_tracker(config, before, after):
    """Counts every redelivery, on Exclusive/Failover too."""
    return z3.If(ctr.goes_to_dead_letter(config, before),
                 ctr.dead_lettered(config, before, after), ctr.back_available(before, after, bump=1))


def refute_counter(prove, wrong):
    result = prove(transitions={**ctr.MESSAGE_TRANSITIONS, ctr.RedeliveryOp.REDELIVER: wrong})
    assert isinstance(result, Refuted), result
    cx = result.counterexample
    assert cx.op is ctr.RedeliveryOp.REDELIVER and cx.before.status == "held", cx.describe()
    return cx


def test_redelivery_count_is_refuted_when_a_redelivery_does_not_count():
    cx = refute_counter(ctr.prove_redelivery_count, redeliver_without_counting)
    assert cx.tracked and cx.after.status != "acked"
    assert cx.after.count_lo != cx.before.count_lo + 1, cx.describe()


def test_dead_letter_is_refuted_when_the_message_goes_one_delivery_late():
    cx = refute_counter(ctr.prove_dead_letter, dead_letter_one_delivery_late)
    due = cx.tracked and cx.max_redeliver_count is not None and cx.before.count_lo >= cx.max_redeliver_count
    assert due != (cx.after.dead and cx.after.status == "acked"), cx.describe()
    assert cx.before.count_lo == cx.max_redeliver_count, "late by exactly one delivery"


def test_redelivery_count_is_refuted_when_exclusive_counts_a_redelivery():
    cx = refute_counter(ctr.prove_redelivery_count, redeliver_counting_without_a_tracker)
    assert not cx.tracked and cx.after.count_lo != 0, cx.describe()
