"""The client crash as the driver machinery performs it (fixtures/targets/driver_target.py): the
suite kills the driver process, waits for the broker side to drop its consumers, and a fresh
driver takes over the same program, its clock counted on from there; a driver's death the suite
caused is no crashed client. Only a target with a driver process and a broker side can do it, so
only such a target offers it to the programs. (On a real broker: suites/broker/test_client_crash.py.)"""

from __future__ import annotations

import sys

import pytest

from drivers.model.__main__ import ModelDriver
from fixtures.targets.driver_target import MODEL_DRIVER, DriverError, DriverProcess, DriverTarget, InProcess
from fixtures.targets.model_target import ModelTarget
from fixtures.targets.protocol import faults_performed
from fixtures.targets.recording import RecordingTarget
from model import ops as o
from model.spec import Spec
from fixtures.targets.lockstep import ConformanceFailure
from model.guarantees import Guarantee
from suites import generation as gen
from suites.machines import performable
from suites.programs import Step, run_program

# A driver with a wall clock: `at` counts ms from its own reset; a tick sleeps.
WALL_CLOCK_DRIVER = """
import json, sys, time
began = time.monotonic()
for line in sys.stdin:
    request = json.loads(line)
    reply = {"id": request["id"], "outcome": "ok"}
    if request["type"] == "hello":
        reply.update(client="wall-clock", version="0", protocol=1, ops=["subscribe", "tick"], capabilities=[])
    elif request["type"] == "reset":
        began = time.monotonic()
    elif request["type"] == "op":
        if request["op"] == "tick":
            time.sleep(request["ms"] / 1000)
        reply["at"] = int((time.monotonic() - began) * 1000)
    print(json.dumps(reply), flush=True)
    if request["type"] == "close":
        break
"""


class BrokerSideStub:
    """What a driver target asks of its broker side, and what it was asked."""

    subscription = "conformance"

    def __init__(self) -> None:
        self.topic, self.begun, self.asked_gone = "", 0, 0

    def check_settings(self, spec: Spec) -> None:
        pass

    def topic_for(self, program_id: str) -> str:
        return f"persistent://public/default/{program_id}"

    def begin(self, spec: Spec, topic: str) -> None:
        self.topic, self.begun = topic, self.begun + 1

    def published(self, position) -> None:
        pass

    def consumers_gone(self, within_ms: int) -> bool:
        self.asked_gone += 1
        return True

    def ground_truth(self):
        return None

    def close(self) -> None:
        pass


def _pid(target: DriverTarget) -> int:
    return target._channel.process.pid


def test_a_crash_kills_the_driver_and_a_fresh_one_goes_on_with_the_same_program():
    broker = BrokerSideStub()
    target = DriverTarget(lambda: DriverProcess((sys.executable, "-c", WALL_CLOCK_DRIVER)), broker=broker,
                          name="wall-clock", grace_ms=5000)
    try:
        target.reset(Spec(), "p1")
        target.invoke(o.Subscribe(consumer="c0"))
        waited = target.invoke(o.Tick(ms=300))
        killed = target._channel.process
        crash = target.invoke(o.CrashClient())
        assert crash.outcome is o.Outcome.OK and crash.at >= waited.at
        assert killed.returncode == -9, "killed with SIGKILL"
        assert _pid(target) != killed.pid
        assert (broker.begun, broker.asked_gone) == (1, 1), "the same topic: the program was not begun again"
        after = target.invoke(o.Tick(ms=100))
        # From the crash on (a few ms early: the driver starts its clock when it gets its reset), not from 0.
        assert after.at >= crash.at + 90, "the fresh driver's clock starts again at 0"
        assert target.invoke(o.Subscribe(consumer="c0")).outcome is o.Outcome.OK
    finally:
        target.close()


def test_only_a_driver_process_with_a_broker_side_performs_the_crash():
    killable = DriverTarget(lambda: DriverProcess(MODEL_DRIVER), broker=BrokerSideStub(), name="model-driver")
    alone = DriverTarget(lambda: DriverProcess(MODEL_DRIVER), name="model-driver")  # the model driver is its broker
    in_process = DriverTarget(lambda: InProcess(ModelDriver()), broker=BrokerSideStub(), name="in-process")
    try:
        assert faults_performed(RecordingTarget(killable, folder=None)) == {"crash_client"}
        assert faults_performed(alone) == faults_performed(in_process) == frozenset()
        kinds = ("send", "subscribe", "receive", "crash_client")
        assert performable(kinds, in_process) == kinds[:3]
        assert performable(kinds, ModelTarget()) == kinds
        alone.reset(Spec(), "p1")
        with pytest.raises(DriverError, match="crash_client needs a driver process and a broker side"):
            alone.invoke(o.CrashClient())
    finally:
        for target in (killable, alone, in_process):
            target.close()


class NothingAfterACrash(ModelTarget):
    """Delivers nothing once the client crashed."""

    def reset(self, spec, program_id):
        super().reset(spec, program_id)
        self.crashed = False

    def answer(self, op):
        self.crashed = self.crashed or isinstance(op, o.CrashClient)
        return o.ok(at=self.state.now) if self.crashed and isinstance(op, o.Receive) else super().answer(op)


def test_a_program_that_ends_with_a_crash_subscribes_in_its_teardown_and_checks_what_came_back():
    program = (Step(rule="send", op=o.Send()), Step(rule="subscribe", op=o.Subscribe(consumer="c0")),
               Step(rule="receive", op=o.Receive(consumer="c0")), Step(rule="crash_client", op=o.CrashClient()))
    run_program(ModelTarget(), Spec(), "ends-with-a-crash", program)
    with pytest.raises(ConformanceFailure) as lost:
        run_program(NothingAfterACrash(), Spec(), "ends-with-a-crash", program)
    assert lost.value.violation.guarantee is Guarantee.NO_LOSS
    kinds = [type(op) for op, _ in lost.value.history]
    assert kinds[kinds.index(o.CrashClient) + 1] is o.Subscribe


def test_a_crash_is_worth_most_right_after_an_acknowledge_left_an_ack_pending():
    target = ModelTarget()
    target.reset(Spec(), "weights")
    for op in (o.Send(), o.Send(), o.Subscribe(consumer="c0"), o.Receive(consumer="c0"), o.Receive(consumer="c0")):
        target.invoke(op)
    held = gen.weight(target.state, "crash_client")
    ack = o.Acknowledge(consumer="c0", message=o.MessageId(0))
    target.invoke(ack)
    assert gen.weight(target.state, "crash_client", last=ack) > gen.weight(target.state, "crash_client") == held
    assert gen.weight(target.state, "crash_client") <= gen.weight(target.state, "send")
