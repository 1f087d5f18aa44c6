"""What stays of the programs' histories (fixtures/targets/recording.py): a failing program's
history always, a passing one's only when the rule (--keep-histories) keeps it, the fidelity
tests' observations always."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import settings

from fixtures.targets.faulty import LosesAMessage
from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from fixtures.targets.model_target import ModelTarget
from fixtures.targets.recording import RecordingTarget
from model import ops as o
from model.spec import Spec, SubscriptionType
from suites.machines import run_conformance
from suites.plumbing.test_edges import run_pytest

SPEC = Spec(subscription_type=SubscriptionType.EXCLUSIVE)
PROGRAM = (o.Subscribe(consumer="c0"), o.Send(), o.Send(), o.Send())


def _run(recorder: RecordingTarget, program_id: str) -> None:
    run = Lockstep(recorder, SPEC, program_id)
    for op in PROGRAM:
        run.do(op)
    run.drain()


def test_failing_keeps_a_failing_program_only(tmp_path):
    recorder = RecordingTarget(LosesAMessage(), tmp_path, keep="failing")
    model = RecordingTarget(ModelTarget(), tmp_path, keep="failing")
    _run(model, "passes")
    model.close()
    with pytest.raises(ConformanceFailure):
        _run(recorder, "fails")
    recorder.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fails.jsonl"]


def test_sample_keeps_one_passing_program_in_n_and_all_keeps_each(tmp_path):
    sample = RecordingTarget(ModelTarget(), tmp_path / "sample", keep="sample", sample_every=10)
    every = RecordingTarget(ModelTarget(), tmp_path / "all", keep="all")
    for n in range(25):
        _run(sample, f"p{n:02d}")
        _run(every, f"p{n:02d}")
    sample.close()
    every.close()
    assert sorted(p.stem for p in (tmp_path / "sample").iterdir()) == ["p00", "p10", "p20"]
    assert len(list((tmp_path / "all").iterdir())) == 25


def test_a_target_that_raises_keeps_its_program(tmp_path):
    class Raises(ModelTarget):
        def invoke(self, op):
            if isinstance(op, o.Send):
                raise RuntimeError("the client died")
            return super().invoke(op)

    recorder = RecordingTarget(Raises(), tmp_path, keep="failing")
    with pytest.raises(RuntimeError):
        _run(recorder, "crashed")
    recorder.end_program()
    assert [p.name for p in tmp_path.iterdir()] == ["crashed.jsonl"]


def test_a_shrunk_failure_leaves_its_failing_programs_only(tmp_path):
    ids = (f"p{n}" for n in itertools.count())
    recorder = RecordingTarget(LosesAMessage(), tmp_path / "h", keep="failing")
    with pytest.raises(ConformanceFailure):
        run_conformance(recorder, SPEC, lambda: next(ids), kinds=("send", "subscribe", "receive"),
                        settings_=settings(settings.get_profile("ci"), max_examples=300))
    recorder.end_program()
    begun = recorder._programs
    kept = list((tmp_path / "h").iterdir())
    assert 0 < len(kept) < begun
    for history in kept:  # each kept program is one the model refuses
        lines = [json.loads(line) for line in history.read_text().splitlines()]
        assert lines and lines[0]["program_id"] == history.stem


def test_a_run_on_the_model_keeps_no_passing_history_and_keeps_the_observations(tmp_path):
    """End to end: a conformance file on the model target leaves no history by default, all of
    them with --keep-histories all; a folder of observations already there is left alone."""
    observation = tmp_path / "histories" / "observations" / "a-test" / "p.jsonl"
    observation.parent.mkdir(parents=True)
    observation.write_text("{}\n")
    args = ("suites/conformance/test_individual_ack.py", "-k", "Exclusive", "--hypothesis-profile", "ci")
    done, _ = run_pytest(tmp_path, *args, timeout_s=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    left = sorted(p.relative_to(tmp_path / "histories") for p in (tmp_path / "histories").rglob("*.jsonl"))
    assert [str(p) for p in left] == ["observations/a-test/p.jsonl"]
    done, _ = run_pytest(tmp_path, *args, "--keep-histories", "all", timeout_s=300)
    assert done.returncode == 0
    assert len(list((tmp_path / "histories").rglob("*.jsonl"))) > 10
