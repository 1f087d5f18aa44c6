"""The catalog's guarantee declarations (suites/conformance/catalog.py), which the report's
guarantee view and GUARANTEES.md read: each check declares exactly the guarantees its ops and
specs can reach, and every faulty target's broken guarantee is declared by a check that can catch it.

What a guarantee needs to be broken follows where the model raises it: `cursor` only on a cursor
read, `receiver-queue` only when some consumers are drained while others idle, `exclusive` only
on an Exclusive subscription, `dead-letter` only under a dead-letter policy on a type with a
redelivery tracker, an acknowledged message coming back only when something acknowledged it (an
ack, a subscription at Latest, a seek, the dead-letter topic).
"""

from __future__ import annotations

import pytest

from fixtures.targets.faulty import FAULTS
from model.guarantees import Guarantee as G
from model.spec import InitialPosition, SubscriptionType
from suites.conformance.catalog import CHECKS, EVERY_PROGRAM, Check

ACK_KINDS = {"acknowledge", "acknowledge_cumulative"}


def _types(check: Check) -> set[SubscriptionType]:
    return {spec.subscription_type for spec in check.specs.values()}


NEEDS = {
    G.ACK: lambda c: bool(ACK_KINDS & set(c.kinds)),
    G.NO_REDELIVERY_AFTER_ACK: lambda c: bool(ACK_KINDS & set(c.kinds)) or "seek" in c.kinds or any(
        s.initial_position is InitialPosition.LATEST or s.max_redeliver_count is not None for s in c.specs.values()),
    G.CURSOR: lambda c: "read_cursor" in c.kinds,
    G.RECEIVER_QUEUE: lambda c: "drain_others" in c.kinds,
    G.EXCLUSIVE: lambda c: SubscriptionType.EXCLUSIVE in _types(c),
    G.KEY_SHARED_STICKINESS: lambda c: SubscriptionType.KEY_SHARED in _types(c),
    G.CUMULATIVE_REFUSED_ON_SHARED: lambda c: "acknowledge_cumulative" in c.kinds and bool(
        {SubscriptionType.SHARED, SubscriptionType.KEY_SHARED} & _types(c)),
    G.DEAD_LETTER: lambda c: any(s.max_redeliver_count is not None and s.subscription_type.tracks_redelivery_count
                                 for s in c.specs.values()),
    G.RECONSUME_LATER: lambda c: "reconsume_later" in c.kinds,
    **{g: (lambda c: True) for g in EVERY_PROGRAM},
}


def test_every_guarantee_says_what_a_check_needs_to_break_it():
    assert set(NEEDS) == set(G)


@pytest.mark.parametrize("check", CHECKS, ids=[c.area for c in CHECKS])
def test_a_check_declares_exactly_what_its_ops_and_specs_can_break(check):
    reachable = {g for g, needs in NEEDS.items() if needs(check)}
    assert check.guarantees == reachable, (
        f"{check.area}: declared but out of reach {sorted(g.value for g in check.guarantees - reachable)}, "
        f"reachable but not declared {sorted(g.value for g in reachable - check.guarantees)}")


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_what_a_fault_breaks_is_declared_by_a_check_that_runs_on_its_subscription_type(fault):
    """suites/quality runs the catalog against each faulty target; the check that catches it must
    be one that declares the guarantee it names, so the fault's guarantee needs such a check."""
    kind = fault.spec.subscription_type
    for guarantee in fault.breaks:
        declaring = [c.area for c in CHECKS if not c.slow and guarantee in c.guarantees and kind in _types(c)]
        assert declaring, f"{fault.name} breaks {guarantee.value} on {kind}: no check declares it there"
