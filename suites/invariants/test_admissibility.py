"""What a broker crash left behind, judged by Z3: admissible (with the acks that survived), or
inadmissible (with the few facts that cannot all hold), or unknown (Z3 gave up).

Each epoch runs from a persisted floor to the observation after a crash: the cursor read and the
entries a fresh consumer received again. The acks of a (consumer, kind) that survive are a prefix
of its calls; acks known applied are in it (model/smt/admissibility.py).
"""

import random

import pytest

from model import cursor as cur
from model.smt import admissibility as adm
from model.smt.admissibility import AckEvent, AckKind, AckStatus, Epoch, Fact, FactKind
from model.smt.solver import Unknown

pytestmark = pytest.mark.z3

INDIVIDUAL, CUMULATIVE = AckKind.INDIVIDUAL, AckKind.CUMULATIVE
APPLIED = AckStatus.APPLIED


def ack(index, consumer, kind, entry, status=AckStatus.UNKNOWN):
    return AckEvent(index=index, consumer=consumer, kind=kind, entry=entry, status=status)


def after_crash(entries, acked):
    """The observation of a broker that kept exactly `acked`: its cursor and what comes again."""
    return {"cursor": cur.from_acknowledged(acked), "redelivered": frozenset(range(entries)) - set(acked)}


def fact(kind, entry, event=None, epoch=0):
    return Fact(epoch=epoch, kind=kind, entry=entry, event=event)


def assert_explains(epoch, witness):
    """The witness is a prefix of each (consumer, kind)'s calls, holds every applied ack, and
    replays (with model/cursor.py) to exactly what was observed."""
    kept = set(witness.kept)
    for consumer, kind in {(a.consumer, a.kind) for a in epoch.acks}:
        calls = sorted((a for a in epoch.acks if (a.consumer, a.kind) == (consumer, kind)), key=lambda a: a.index)
        flags = [a in kept for a in calls]
        assert flags == sorted(flags, reverse=True), f"{consumer} {kind}: not a prefix"
    assert all(a in kept for a in epoch.acks if a.status is APPLIED)
    replayed = adm.replay(epoch, witness.kept)
    assert replayed == witness.cursor
    if epoch.cursor is not None:
        assert replayed.acknowledged(epoch.entries) == epoch.cursor.acknowledged(epoch.entries)
    if epoch.redelivered is not None:
        assert set(range(epoch.entries)) - replayed.acknowledged(epoch.entries) == epoch.redelivered


def test_a_crash_that_kept_a_prefix_of_each_consumers_acks_is_admissible():
    acks = (ack(0, "c0", INDIVIDUAL, 0, APPLIED), ack(1, "c1", INDIVIDUAL, 1), ack(2, "c0", INDIVIDUAL, 2),
            ack(3, "c1", INDIVIDUAL, 3), ack(4, "c0", CUMULATIVE, 5))
    epoch = Epoch(entries=7, acks=acks, **after_crash(7, {0, 1, 2}))
    result = adm.check_admissible([epoch])
    assert isinstance(result, adm.Admissible), result
    (witness,) = result.witnesses
    assert [a.index for a in witness.kept] == [0, 1, 2]
    assert_explains(epoch, witness)


def test_the_floor_counts_as_acknowledged_and_a_cursor_alone_is_enough():
    epoch = Epoch(entries=5, floor=cur.Cursor(mark_delete=1, read_position=2), acks=(ack(0, "c0", CUMULATIVE, 3),),
                  cursor=cur.from_acknowledged({0, 1, 2, 3}))
    result = adm.check_admissible([epoch])
    assert isinstance(result, adm.Admissible) and result.witnesses[0].kept == epoch.acks
    assert_explains(epoch, result.witnesses[0])


def test_acks_cannot_survive_out_of_call_order():
    acks = (ack(0, "c0", INDIVIDUAL, 2), ack(1, "c0", INDIVIDUAL, 0))
    result = adm.check_admissible([Epoch(entries=3, acks=acks, cursor=cur.from_acknowledged({0}))])
    assert isinstance(result, adm.Inadmissible), result
    assert result.core == (fact(FactKind.CURSOR_ACKED, 0), fact(FactKind.CURSOR_UNACKED, 2))


def test_an_applied_ack_must_survive():
    acks = (ack(0, "c0", INDIVIDUAL, 0), ack(1, "c0", INDIVIDUAL, 1, APPLIED), ack(2, "c1", INDIVIDUAL, 2))
    result = adm.check_admissible([Epoch(entries=3, acks=acks, **after_crash(3, {0}))])
    assert isinstance(result, adm.Inadmissible), result
    assert set(result.core) in ({fact(FactKind.APPLIED, 1, 1), fact(FactKind.CURSOR_UNACKED, 1)},
                                {fact(FactKind.APPLIED, 1, 1), fact(FactKind.REDELIVERED, 1)})
    assert "ack #1 (m1) was applied" in result.describe()


def test_the_floor_cannot_be_lost():
    result = adm.check_admissible([Epoch(entries=3, floor=cur.Cursor(mark_delete=0, read_position=1),
                                         redelivered=frozenset({0, 1, 2}))])
    assert isinstance(result, adm.Inadmissible)
    assert result.core == (fact(FactKind.FLOOR, 0), fact(FactKind.REDELIVERED, 0))


def test_an_applied_cumulative_ack_covers_everything_below_it():
    acks = (ack(0, "c0", CUMULATIVE, 0), ack(1, "c0", CUMULATIVE, 2, APPLIED))
    floor = cur.from_acknowledged({0, 2})
    result = adm.check_admissible([Epoch(entries=3, floor=floor, acks=acks, cursor=cur.from_acknowledged({0, 2}))])
    assert isinstance(result, adm.Inadmissible)
    assert result.core == (fact(FactKind.APPLIED, 2, 1), fact(FactKind.CURSOR_UNACKED, 1))


def test_the_cursor_and_the_redeliveries_must_agree():
    acks = (ack(0, "c0", INDIVIDUAL, 1),)
    result = adm.check_admissible([Epoch(entries=3, acks=acks, cursor=cur.from_acknowledged({1}),
                                         redelivered=frozenset({0, 1, 2}))])
    assert isinstance(result, adm.Inadmissible)
    assert result.core == (fact(FactKind.CURSOR_ACKED, 1), fact(FactKind.REDELIVERED, 1))


def test_observations_of_entries_never_published_are_inadmissible_alone():
    epoch = Epoch(entries=2, acks=(ack(0, "c0", CUMULATIVE, 1),), cursor=cur.Cursor(mark_delete=4, read_position=5))
    result = adm.check_admissible([epoch])
    assert isinstance(result, adm.Inadmissible) and result.core == (fact(FactKind.CURSOR_BEYOND, 4),)


def test_epochs_are_judged_one_by_one_and_the_core_names_its_epoch():
    good = Epoch(entries=2, acks=(ack(0, "c0", INDIVIDUAL, 0),), **after_crash(2, {0}))
    bad = Epoch(entries=2, acks=(ack(0, "c0", INDIVIDUAL, 1, APPLIED),), **after_crash(2, set()))
    assert isinstance(adm.check_admissible([good, good]), adm.Admissible)
    result = adm.check_admissible([good, bad])
    assert isinstance(result, adm.Inadmissible)
    assert {f.epoch for f in result.core} == {1} and fact(FactKind.APPLIED, 1, 0, epoch=1) in result.core


def test_a_tiny_resource_limit_gives_unknown_not_a_verdict():
    epoch = adm.synthetic_epoch(random.Random(3), 200)
    result = adm.check_admissible([epoch], rlimit=1)
    assert isinstance(result, Unknown) and result.reason.startswith("epoch 0")


def assert_minimal(epoch, core):
    """The core's facts cannot all hold; without any one of them, the rest can."""
    assert isinstance(adm.check_facts(epoch, core), adm.Inadmissible)
    for left_out in core:
        assert isinstance(adm.check_facts(epoch, set(core) - {left_out}), adm.Admissible), left_out.describe()


@pytest.mark.parametrize("hints", [True, False], ids=["suspects first", "Z3 core over blocks"])
def test_cores_are_minimal(hints):
    acks = (ack(0, "c0", INDIVIDUAL, 2), ack(1, "c0", INDIVIDUAL, 0, APPLIED), ack(2, "c1", CUMULATIVE, 3))
    epoch = Epoch(entries=5, floor=cur.from_acknowledged({4}), acks=acks, cursor=cur.from_acknowledged({0, 1}),
                  redelivered=frozenset({2, 3}))
    result = adm.check_admissible([epoch], hints=hints)
    assert isinstance(result, adm.Inadmissible)
    assert_minimal(epoch, result.core)


@pytest.mark.parametrize("seed", range(3))
def test_synthetic_crashes_are_admissible_and_one_contradiction_is_found_among_thousands(seed):
    epoch = adm.synthetic_epoch(random.Random(seed), 2_000)
    result = adm.check_admissible([epoch])
    assert isinstance(result, adm.Admissible), result
    assert_explains(epoch, result.witnesses[0])
    entry = sorted(epoch.redelivered)[len(epoch.redelivered) // 2]
    lying = Epoch(entries=epoch.entries, floor=epoch.floor, acks=epoch.acks, cursor=epoch.cursor,
                  redelivered=epoch.redelivered - {entry})
    result = adm.check_admissible([lying])
    assert isinstance(result, adm.Inadmissible), result
    assert result.core == (fact(FactKind.CURSOR_UNACKED, entry), fact(FactKind.NOT_REDELIVERED, entry))
    assert_minimal(lying, result.core)
