"""How often the programs reached a fault's windows, not only tried it: the recording target counts
what the lock-step driver tells it (model/faults.py), the summary keeps it per test, and the
markdown says it, a window never reached and a fault the target cannot perform included."""

from __future__ import annotations

from fixtures.targets.lockstep import Lockstep
from fixtures.targets.model_target import ModelTarget
from fixtures.targets.recording import RecordingTarget
from model import ops as o
from model.faults import CRASH_CLIENT, HELD_UNACKNOWLEDGED, UNFLUSHED_ACK, WINDOWS
from model.spec import Spec, SubscriptionType
from reports.markdown import fault_list
from reports.results import Result, Summary, load_summary, write_summary

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)


def _program(recorder: RecordingTarget, program_id: str, *, ack: bool, crashes: int) -> None:
    run = Lockstep(recorder, SHARED, program_id)
    run.do(o.Send())
    run.do(o.Subscribe(consumer="c0"))
    run.receive("c0")
    if ack:
        run.do(o.Acknowledge(consumer="c0", message=o.MessageId(0)))
    for _ in range(crashes):
        run.do(o.CrashClient())
        run.do(o.Subscribe(consumer="c0"))


def test_each_window_counts_once_per_program_that_reached_it(tmp_path):
    recorder = RecordingTarget(ModelTarget(), tmp_path)
    recorder.offer_fault(CRASH_CLIENT, WINDOWS[CRASH_CLIENT], performable=True)
    _program(recorder, "p0", ack=True, crashes=2)  # an unflushed ack at the first crash; nothing held at the second
    _program(recorder, "p1", ack=False, crashes=1)  # m0 held
    _program(recorder, "p2", ack=False, crashes=0)
    assert recorder.faults_reached[CRASH_CLIENT] == {"performable": True, "programs": 2, "ops": 3,
                                                     UNFLUSHED_ACK: 1, HELD_UNACKNOWLEDGED: 1}


def test_the_summary_keeps_the_counts_and_the_markdown_says_them(tmp_path):
    reached = {"performable": True, "programs": 4, "ops": 5, UNFLUSHED_ACK: 0, HELD_UNACKNOWLEDGED: 3}
    summary = Summary(results=(
        Result(nodeid="a", area="individual_ack", spec_id="Shared", outcome="passed", examples=6,
               faults={CRASH_CLIENT: reached}),
        Result(nodeid="b", area="individual_ack", spec_id="Exclusive", outcome="passed", examples=6,
               faults={CRASH_CLIENT: {"performable": False, "programs": 0, "ops": 0}}),
        Result(nodeid="c", area="seek", spec_id="Shared", outcome="passed")))
    write_summary(summary, tmp_path / "summary.json")
    assert load_summary(tmp_path / "summary.json").results[0].faults == {CRASH_CLIENT: reached}
    assert fault_list(summary) == [
        "### Faults reached", "",
        "- **individual_ack [Shared]** `crash_client` in 4 of 6 programs (5 times); reached: "
        "unflushed ack **never reached**, held unacknowledged in 3",
        "- **individual_ack [Exclusive]** `crash_client`: not performed, the target cannot", ""]
    assert fault_list(Summary(results=summary.results[2:])) == []
