"""Stored broker histories run again on the session broker, in lock-step with the current model.

A history a conformance run recorded against the real broker is one run of its program; the
broker's timing decides much of what it did. Running the program's ops again (fresh topic, the
broker this pytest session started) shows whether the model accepts what the broker does on
other runs too. The recorded final drain (the trailing receives) is replaced by the Lockstep's own
drain, which waits as long as the model's windows ask. Each run's cursor and deliveries are
recorded as JUnit properties, so a run the model rejects can be told from a rare broker choice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from model import ops as o
from suites.replay.stored import StoredHistory, load

pytestmark = pytest.mark.broker

HISTORIES = Path(__file__).parent / "histories"
RUNS = 3
# Broker histories whose explanation rests on timing: each is run again RUNS times.
TIMED = (
    "broker-nack-back-within-the-delay-of-its-call.batches-Shared-batch-index-ack",
    "broker-nack-rewind-within-the-delay-of-its-call.batches-Exclusive-batch-index-ack",
    "broker-nack-rewind-within-the-delay-of-its-call.negative_ack-Exclusive",
)


def program_of(stored: StoredHistory) -> list[o.Op]:
    """The ops before the recorded final drain (the trailing receives)."""
    ops = [op for op, _ in stored.history]
    while ops and isinstance(ops[-1], o.Receive):
        ops.pop()
    return ops


def run_again(target, stored: StoredHistory, program_id: str) -> Lockstep:
    run = Lockstep(target, stored.spec, program_id)
    for op in program_of(stored):
        run.do(op)
    if stored.expectation.drained is True:
        run.drain()
    return run


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("name", TIMED)
def test_a_timed_broker_history_is_accepted_when_its_program_runs_again(pulsar_target, names, record_property, name,
                                                                        run):
    stored = load(HISTORIES / f"{name}.jsonl")
    try:
        again = run_again(pulsar_target, stored, names.topic().rsplit("/", 1)[1])
    except ConformanceFailure as failure:
        record_property("history", [(op, c.value, c.at) for op, c in failure.history])
        raise
    record_property("deliveries", [(c.value.message, c.at) for op, c in again.history
                                   if isinstance(op, o.Receive) and isinstance(c.value, o.Delivery)])
    record_property("cursor", pulsar_target.ground_truth())
