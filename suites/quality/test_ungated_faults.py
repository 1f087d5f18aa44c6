"""The faults the `ci` profile catches too rarely to assert it (fixtures/targets/faulty.py, UNGATED)
are real faults all the same: each fails a program written for it, for the guarantee it breaks.
benchmarks.catch_rate measures how often generated programs find them; these programs say what
the generation has to reach.
"""

import pytest

from fixtures.targets.faulty import UNGATED
from model import ops as o
from model.nondet import apply, start

m = o.MessageId

PROGRAMS = {
    # The timeouts of m0 and m1 run out apart; the cumulative ack of m0 comes before m0's: the
    # client keeps m0's timer, which rewinds the subscription and brings m1 back before its own.
    "cumulative-ack-keeps-ack-timeouts": [
        o.Subscribe(consumer="c0"), o.Send(), o.Send(), o.Receive(consumer="c0"), o.Tick(ms=9_999),
        o.Receive(consumer="c0"), o.AcknowledgeCumulative(consumer="c0", message=m(0)), o.Tick(ms=150),
        o.Receive(consumer="c0")],
    # m1 acknowledged above the hole m0, then an unload: the reloaded cursor has lost the hole's
    # ack range above markDeletePosition.
    "individual-acks-lost-at-unload": [
        o.Send(), o.Send(), o.Send(), o.Subscribe(consumer="c0"), o.Receive(consumer="c0"), o.Receive(consumer="c0"),
        o.Acknowledge(consumer="c0", message=m(1)), o.Close(consumer="c0"), o.Unload(), o.ReadCursor()],
}


@pytest.mark.parametrize("fault", UNGATED, ids=[f.name for f in UNGATED])
def test_an_ungated_fault_fails_the_program_written_for_it(fault):
    target = fault.target()
    target.reset(fault.spec, fault.name)
    verdict = start(fault.spec)
    for op in PROGRAMS[fault.name]:
        verdict = apply(verdict, op, target.invoke(op))
        if verdict.violation is not None:
            break
    assert verdict.violation is not None, f"{fault.name} passed the program written for it"
    assert verdict.violation.guarantee in fault.breaks, verdict.violation
