"""The start the network tests' lock-step programs share (suites/broker/test_network_cut.py,
test_network_delay.py); the broker behind the proxy they run on: suites/broker/conftest.py."""

from __future__ import annotations

import time

from fixtures.targets.lockstep import Lockstep
from model import ops as o


def topic_for(request) -> str:
    """A topic of its own for the test `request` runs: its name and the time."""
    return f"persistent://public/default/{request.node.name.replace('[', '-').replace(']', '')}-{time.time_ns()}"


def acked_and_nacked(run: Lockstep) -> None:
    """c0 subscribes and receives m0, m1 and m2, acknowledges m0 and nacks m1: an ack grouped and a
    redelivery asked for, just before the fault."""
    run.do(o.Subscribe(consumer="c0"))
    for _ in range(3):
        run.do(o.Send())
    assert [run.receive("c0", timeout_ms=5000).message for _ in range(3)] == [o.MessageId(i) for i in range(3)]
    run.do(o.Acknowledge(consumer="c0", message=o.MessageId(0)))
    run.do(o.NegativeAcknowledge(consumer="c0", message=o.MessageId(1)))
