"""A cumulative ack and the ack timeout on one topic: what model/transitions/acks.py takes from the
broker.

The client tracks each message it hands to the application in its unacked-message tracker, and
asks for it again when the ack timeout runs out (on Exclusive and Failover by a redelivery of
everything unacknowledged: a rewind of the cursor). An acknowledge_cumulative takes every tracked
message up to its own out of the tracker (C++ and Java UnAckedMessageTracker.removeMessagesTill),
so none of them comes again once the timeout has passed; a message it does not cover still does.
A client that kept them tracked (the multi-topics consumer before Pulsar 2.11.1) redelivered
acknowledged messages.

Observed on Pulsar 4.0.7 with the Python client (C++ underneath; its least ack timeout, 10 s)
and the Java client 4.0.7 (3 or 6 s), each through its driver.
"""

from __future__ import annotations

import pytest

from model import ops as o
from model.guarantees import Guarantee
from model.spec import Spec, SubscriptionType
from suites.broker.logged import Logged, client_target, received
from suites.machines import as_run
from suites.replay.stored import replay

pytestmark = pytest.mark.broker

m = o.MessageId


@pytest.fixture(scope="module", params=["python", "java"])
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


@pytest.mark.guarantee("no-redelivery-after-ack")
def test_a_cumulative_ack_ends_the_ack_timeouts_of_what_it_acknowledges(client, names):
    """Exclusive, three messages received, an acknowledge_cumulative of m1, a cursor read that
    shows it at the broker, a wait past the timeout and its tick: m2 comes again (its timeout ran
    out and rewound the cursor), m0 and m1 do not. The model takes the history, and refuses it
    with one more copy of m0: the ack ended m0's timeout."""
    name, target = client
    timeout = 10_000 if name == "python" else 3_000  # the receives and the ack well inside it
    spec = as_run(Spec(subscription_type=SubscriptionType.EXCLUSIVE, ack_timeout_ms=timeout), target)
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), *(o.Send() for _ in range(3)))
    got = [logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value for _ in range(3)]
    assert [d.message for d in got if d is not None] == [m(0), m(1), m(2)]
    assert logged.invoke(o.AcknowledgeCumulative(consumer="a", message=m(1))).outcome is o.Outcome.OK
    logged.invoke(o.Tick(ms=500))
    cursor = logged.invoke(o.ReadCursor()).value
    assert cursor.mark_delete == 1, cursor
    logged.invoke(o.Tick(ms=spec.ack_timeout_window_ms[1] + 500))  # past the timeout and its tick
    assert received(logged, "a") == [m(2)]
    assert replay(spec, logged.history, drained=True).step is None
    forged = logged.history + [(o.Receive(consumer="a"), o.ok(o.Delivery(message=m(0), redelivery_count=0),
                                                               at=logged.history[-1][1].at + 1))]
    refused = replay(spec, forged, drained=False).verdict.violation
    assert refused is not None and refused.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK, refused


@pytest.mark.parametrize("ack", ["acknowledge", "acknowledge_cumulative"])
@pytest.mark.guarantee("no-duplicate-without-cause")
def test_an_ack_ends_the_timeout_that_would_have_brought_back_a_later_message(client, names, ack):
    """Exclusive: m0 received, half the timeout later m1, then an ack of m0 (individual or
    cumulative). On Exclusive one timeout rewinds everything, so m0's would have brought m1 back;
    the ack ended it, and m1 waits its own: past m0's timeout m1 has not come again, past its own it
    does. The model refuses the history with m1 back at m0's timeout."""
    name, target = client
    timeout = 10_000 if name == "python" else 6_000  # m0's timeout and tick well inside m1's
    spec = as_run(Spec(subscription_type=SubscriptionType.EXCLUSIVE, ack_timeout_ms=timeout), target)
    window = spec.ack_timeout_window_ms
    acknowledge = o.Acknowledge if ack == "acknowledge" else o.AcknowledgeCumulative
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), o.Send(), o.Send())
    assert logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message == m(0)
    logged.invoke(o.Tick(ms=timeout // 2))
    assert logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message == m(1)
    received_m1 = logged.history[-1][1].at
    assert logged.invoke(acknowledge(consumer="a", message=m(0))).outcome is o.Outcome.OK
    logged.invoke(o.Tick(ms=window[1] - timeout // 2 + 300))  # past m0's timeout and its tick
    assert logged.invoke(o.Receive(consumer="a", timeout_ms=200)).value is None
    assert logged.history[-1][1].at < received_m1 + window[0]  # m1's own timeout is still to run out
    at_m0_s_timeout = logged.history + [(o.Receive(consumer="a"), o.ok(o.Delivery(message=m(1), redelivery_count=0),
                                                                       at=logged.history[-1][1].at + 1))]
    refused = replay(spec, at_m0_s_timeout, drained=False).verdict.violation
    assert refused is not None and refused.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE, refused
    logged.invoke(o.Tick(ms=received_m1 + window[1] + 500 - logged.history[-1][1].at))  # past m1's own
    assert logged.invoke(o.Receive(consumer="a", timeout_ms=2000)).value.message == m(1)
    assert replay(spec, logged.history, drained=False).step is None
