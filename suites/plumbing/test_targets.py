"""Targets load from --target, third-party ones included; a failure's reproduction really reproduces."""

import itertools

import pytest
from hypothesis import settings
from hypothesis.errors import Flaky

from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from fixtures.targets.faulty import LosesAMessage
from fixtures.targets.loader import TargetLoadError, load_target
from fixtures.targets.model_target import ModelTarget
from fixtures.targets.recording import RecordingTarget
from model import ops as o
from model.history import from_json_line
from model.spec import Spec, SubscriptionType
from suites.machines import run_conformance


@pytest.mark.parametrize("spec, message", [
    ("nope", "expected 'model', 'pulsar' or 'package.module:factory'"),
    ("no_such_module_xyz:make", "cannot import"),
    ("fixtures.targets.faulty:NOT_THERE", "has no callable"),
    ("json:dumps", "the factory raised TypeError"),
    ("collections:OrderedDict", "lacks reset, invoke, ground_truth, close"),
])
def test_a_bad_target_is_refused_with_the_reason(spec, message):
    with pytest.raises(TargetLoadError, match=message):
        load_target(spec, seed=0)


def test_the_reproduction_of_a_failure_replays_it_on_the_same_target():
    target = load_target("fixtures.targets.faulty:LosesAMessage", seed=0)
    ids = (f"repro-{n}" for n in itertools.count())
    spec = Spec(subscription_type=SubscriptionType.EXCLUSIVE)
    with pytest.raises(ConformanceFailure) as caught:
        run_conformance(target, spec, lambda: next(ids), kinds=("send", "subscribe", "receive"),
                        settings_=settings(settings.get_profile("ci"), max_examples=300))
    assert "replay('fixtures.targets.faulty:LosesAMessage'" in caught.value.source
    with pytest.raises(ConformanceFailure) as again:
        exec(compile(caught.value.source, "reproduction.py", "exec"), {})
    assert again.value.violation.guarantee is caught.value.violation.guarantee


def test_the_recording_wrapper_writes_one_event_per_op(tmp_path):
    recorder = RecordingTarget(load_target("model"), tmp_path)
    recorder.reset(Spec(), "p-1")
    for op in (o.Send(), o.Subscribe(consumer="c0"), o.Receive(consumer="c0"), o.ReadCursor()):
        recorder.invoke(op)
    recorder.close()
    events = [from_json_line(line) for line in (tmp_path / "p-1.jsonl").read_text().splitlines()]
    assert [e.op for e in events] == ["send", "subscribe", "receive", "read_cursor"]
    assert events[2].delivered_entry == 0 and events[3].cursor == "-1|"


class _LosesAMessageOnce(LosesAMessage):
    """Like a real broker, it does not fail the same way twice: the fault shows in one program only."""

    deterministic = False

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.lost = False

    def reset(self, spec, program_id):
        super().reset(spec, program_id)
        self.faulty = not self.lost

    def answer(self, op):
        completion = ModelTarget.answer(self, op)
        faulty = LosesAMessage.answer(self, op)
        if self.faulty and faulty != completion:
            self.lost = True
            return faulty
        return completion


def test_a_failure_a_nondeterministic_target_does_not_repeat_is_still_the_verdict():
    """Hypothesis replays a failing program; a broker may then behave otherwise (Flaky). The
    failure first seen is reported, with its reproduction, not Hypothesis' complaint."""
    ids = (f"once-{n}" for n in itertools.count())
    with pytest.raises(ConformanceFailure) as caught:
        run_conformance(_LosesAMessageOnce(), Spec(subscription_type=SubscriptionType.EXCLUSIVE), lambda: next(ids),
                        kinds=("send", "subscribe", "receive"),
                        settings_=settings(settings.get_profile("ci"), max_examples=300))
    assert caught.value.violation.guarantee.name == "NO_LOSS"
    assert isinstance(caught.value.__cause__, Flaky)


def test_broker_settings_that_contradict_the_spec_are_named():
    from fixtures.targets.pulsar_target import settings_mismatches

    failover = Spec(subscription_type=SubscriptionType.FAILOVER, failover_delay_ms=200)
    default = {"activeConsumerFailoverDelayTimeMillis": "1000", "acknowledgmentAtBatchIndexLevelEnabled": "false"}
    [delay] = settings_mismatches(failover, default)
    assert "activeConsumerFailoverDelayTimeMillis is 1000" in delay and "at most 200" in delay
    assert settings_mismatches(failover, {**default, "activeConsumerFailoverDelayTimeMillis": "100"}) == []
    assert settings_mismatches(Spec(), default) == []  # a Shared spec without batch-index acks: nothing to contradict
    [batch] = settings_mismatches(Spec(client_batch_index_ack=True), default)
    assert "acknowledgmentAtBatchIndexLevelEnabled is false" in batch
    assert settings_mismatches(failover, {}) == []  # settings not shown: unchecked


def test_a_drain_waits_out_a_failover_pause_only_when_something_is_owed_after_it():
    """On a real broker every wait is real time: with nothing to hand out after the pause, each
    receive of the drain is a glance; with a message waiting for the pause, it polls."""
    from fixtures.targets.lockstep import Lockstep

    spec = Spec(subscription_type=SubscriptionType.FAILOVER, failover_delay_ms=200)
    empty = Lockstep(ModelTarget(), spec, "pause-empty")
    empty.do(o.Subscribe(consumer="c0"))
    empty.drain(glance_ms=5)
    assert {op.timeout_ms for op, _ in empty.history if isinstance(op, o.Receive)} == {5}
    waiting = Lockstep(ModelTarget(), spec, "pause-owed")
    waiting.do(o.Send())
    waiting.do(o.Subscribe(consumer="c0"))
    waiting.drain(glance_ms=5)
    timeouts = [op.timeout_ms for op, _ in waiting.history if isinstance(op, o.Receive)]
    assert timeouts[0] == 100


class LateAfterAClose(ModelTarget):
    """Hands nothing out for `quiet` receives after a consumer's close, then as the model does: a
    dispatcher slow to give the closed consumer's messages to the one left."""

    def __init__(self, quiet: int):
        super().__init__()
        self.quiet, self.left = quiet, 0

    def answer(self, op):
        if isinstance(op, o.Close):
            self.left = self.quiet
        elif isinstance(op, o.Receive) and self.left:
            self.left -= 1
            return o.ok(None, at=self.state.now)
        return super().answer(op)


@pytest.mark.parametrize("quiet, lost", [(20, False), (100, True)], ids=["two-seconds-late", "never"])
def test_a_drain_waits_once_more_before_it_calls_a_message_lost(quiet, lost):
    """The closed consumer's messages reach c1 after 2 s of empty 100 ms polls, past the drain's
    usual second: late, not lost. Ten seconds of nothing is a loss."""
    run = Lockstep(LateAfterAClose(quiet), Spec(), f"late-{quiet}")
    run.do(o.Subscribe(consumer="c0"))
    run.do(o.Subscribe(consumer="c1"))
    run.do(o.Send())
    assert run.receive("c0", timeout_ms=100).message == o.MessageId(0)
    run.do(o.Close(consumer="c0"))
    if lost:
        with pytest.raises(ConformanceFailure, match="m0 never came"):
            run.drain()
    else:
        assert [d.message for d in run.drain()] == [o.MessageId(0)]


def test_the_last_chance_is_counted_in_idle_waits_so_a_model_drain_gives_up_soon():
    """On the model target a drain idles 30 ms: a message it never gives is called lost after five
    of them more, a dozen empty receives, not after five seconds of 15 ms polls (330 of them, each
    through the checker, and again at every step of a shrink)."""
    run = Lockstep(LateAfterAClose(quiet=1000), Spec(), "never-with-a-short-idle")
    run.do(o.Subscribe(consumer="c0"))
    run.do(o.Subscribe(consumer="c1"))
    run.do(o.Send())
    assert run.receive("c0", timeout_ms=100).message == o.MessageId(0)
    run.do(o.Close(consumer="c0"))
    before = len(run.history)
    with pytest.raises(ConformanceFailure, match="m0 never came"):
        run.drain(idle_ms=30)
    assert len(run.history) - before <= 20, f"{len(run.history) - before} receives before m0 was called lost"


def test_a_dead_letter_programs_client_is_closed_before_its_topic_is_deleted(monkeypatch):
    """The C++ client crashed (segmentation fault) in its own threads while the topic of a program
    with a dead-letter policy was deleted under the client still open: that client (it owns the
    dead-letter producers its consumers made) is closed first, and the next program gets a new one."""
    from drivers.python import driver
    from fixtures.targets import pulsar_target

    log = []
    clients = itertools.count()

    class Client:
        def __init__(self, *args, **kwargs):
            self.name = f"client-{next(clients)}"

        def close(self):
            log.append(f"close {self.name}")

    class Admin:
        def __init__(self, admin_url, credentials=None):
            pass

        def runtime_configuration(self):
            return {"acknowledgmentAtBatchIndexLevelEnabled": "true", "activeConsumerFailoverDelayTimeMillis": "100"}

        def delete_topic(self, topic):
            log.append(f"delete {topic.rsplit('/', 1)[1]}")

    monkeypatch.setattr(driver.pulsar, "Client", Client)
    monkeypatch.setattr(pulsar_target, "AdminClient", Admin)
    target = pulsar_target.PulsarTarget("pulsar://nowhere:6650", "http://nowhere:8080")
    target.reset(Spec(max_redeliver_count=1), "p1")
    target.reset(Spec(), "p2")
    target.reset(Spec(), "p3")
    assert log == ["close client-0", "delete p1", "delete p2"]
    target.close()
    assert log[3:] == ["close client-1", "delete p3", "delete p1-conformance-DLQ"]


def test_a_drain_that_never_ends_stops_with_the_history(monkeypatch):
    """A drain that the model lets go on (here: a model that checks no receive) against a target
    that hands out the same message forever stops after its cap, as a harness error that shows
    the history, instead of hanging the run."""
    import signal

    from fixtures.targets import lockstep

    checked = lockstep.apply
    monkeypatch.setattr(lockstep, "apply", lambda verdict, op, completion: verdict if isinstance(op, o.Receive)
                        else checked(verdict, op, completion))

    class Forever(ModelTarget):
        def answer(self, op):
            if isinstance(op, o.Receive):
                return o.ok(o.Delivery(message=o.MessageId(0), redelivery_count=0), at=self.state.now)
            return super().answer(op)

    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the drain did not end"))
    signal.alarm(20)
    try:
        run = lockstep.Lockstep(Forever(), Spec(), "endless")
        run.do(o.Send())
        run.do(o.Subscribe(consumer="c0"))
        with pytest.raises(lockstep.EndlessDrain, match="a drain took 121 copies of a program of 1 messages"):
            run.drain()
    finally:
        signal.alarm(0)


def test_a_drain_ends_though_an_ack_timeout_keeps_handing_its_messages_back():
    """With an ack timeout, a broker hands back every timeout what the drain took and did not
    acknowledge, without end (seen on 4.0.7 at nightly depth: 2,400 receives in four minutes); a
    copy of a message the drain already took is no progress, so the drain ends."""
    import signal

    class Clocked(ModelTarget):
        """The model as a broker whose receives take their whole timeout when nothing comes."""

        def answer(self, op):
            completion = super().answer(op)
            if isinstance(op, o.Receive) and completion.value is None:
                return o.ok(None, at=self.state.now + (op.timeout_ms or 100))
            return completion

    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the drain did not end"))
    signal.alarm(30)
    try:
        run = Lockstep(Clocked(), Spec(subscription_type=SubscriptionType.SHARED, ack_timeout_ms=1000), "timeouts")
        run.do(o.Send())
        run.do(o.Send())
        run.do(o.Subscribe(consumer="c0"))
        taken = run.drain(idle_ms=1000)
    finally:
        signal.alarm(0)
    assert [d.message for d in taken][:2] == [o.MessageId(0), o.MessageId(1)]
    assert len(taken) < 20, taken


def test_a_slow_check_on_a_broker_gets_fewer_programs_at_nightly_depth():
    from types import SimpleNamespace

    from fixtures.hypothesis_profiles import settings_for

    config = SimpleNamespace(getoption=lambda name, default=None: "nightly")
    broker = SimpleNamespace(deterministic=False)
    assert settings_for(broker, config).max_examples == 200
    assert settings_for(broker, config, slow=True).max_examples == 25
    assert settings_for(ModelTarget(), config, slow=True).max_examples == 2000  # the model's steps cost nothing
