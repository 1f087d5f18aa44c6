"""Targets load from --target, third-party ones included; a failure's reproduction really reproduces."""

import itertools

import pytest
from hypothesis import settings

from fixtures.targets.lockstep import ConformanceFailure
from fixtures.targets.loader import TargetLoadError, load_target
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
