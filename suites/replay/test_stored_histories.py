"""Every stored history, checked again against the current model: a failure found once stays found.

Each `histories/<name>.jsonl` is one program's history (model/history.py) with a sidecar
`<name>.expect.json` (suites/replay/stored.py): "ok", or a violation of a named guarantee at a
named step. The failing ones were found by conformance runs against the faulty targets of
fixtures/targets/faulty.py and written by the reports plugin (`<reports-dir>/failures/`); the
passing one is a program the model target ran. A model change that lets a stored failure through,
reports it as another guarantee or at another step, or rejects a passing history fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suites.replay.stored import SIDECAR, Expectation, StoredHistoryError, load, load_expectation, mismatch, replay

HISTORIES = Path(__file__).parent / "histories"
FILES = sorted(HISTORIES.glob("*.jsonl"))


def test_the_folder_holds_failures_and_passes_each_with_its_expectation():
    sidecars = sorted(HISTORIES.glob(f"*{SIDECAR}"))
    assert [p.name.removesuffix(".jsonl") for p in FILES] == [p.name.removesuffix(SIDECAR) for p in sidecars]
    expected = {load_expectation(p).expect for p in sidecars}
    assert {"ok", "violation"} <= expected


@pytest.mark.parametrize("path", FILES, ids=[p.name.removesuffix(".jsonl") for p in FILES])
def test_a_stored_history_gets_the_verdict_it_recorded(path):
    stored = load(path)
    replayed = replay(stored.spec, stored.history, drained=stored.expectation.drained)
    problem = mismatch(replayed, stored.expectation)
    assert problem is None, f"{path.name}: {problem}"


def test_the_check_fails_when_the_expectation_is_not_met():
    """The regression check can fail: a passing history expected to break a guarantee, and a failing one
    expected to pass, are both reported with what the model found instead."""
    ok = load(HISTORIES / "ok.batches-Shared.jsonl")
    lost = load(HISTORIES / "loses-a-message.individual_ack-Shared.jsonl")
    passes = replay(ok.spec, ok.history, drained=True)
    fails = replay(lost.spec, lost.history, drained=True)
    from model.guarantees import Guarantee

    assert "the model now allows the history" in mismatch(
        passes, Expectation(expect="violation", drained=True, guarantee=Guarantee.NO_LOSS))
    assert "expected ok, the model now finds no-loss" in mismatch(fails, Expectation(expect="ok", drained=True))
    assert "expected order" in mismatch(fails, Expectation(expect="violation", drained=True, guarantee=Guarantee.ORDER))
    assert "at step 3" in mismatch(fails, Expectation(expect="violation", drained=True, guarantee=Guarantee.NO_LOSS,
                                                      step=3))


def test_without_the_drain_check_a_lost_message_is_not_found():
    """`drained` matters: the history of a lost message is allowed until every consumer has been drained."""
    lost = load(HISTORIES / "loses-a-message.individual_ack-Shared.jsonl")
    assert replay(lost.spec, lost.history, drained=False).verdict.ok
    assert not replay(lost.spec, lost.history, drained=True).verdict.ok


def test_a_malformed_sidecar_is_a_clear_error(tmp_path):
    history = tmp_path / "h.jsonl"
    history.write_text((HISTORIES / "ok.batches-Shared.jsonl").read_text())
    with pytest.raises(StoredHistoryError, match="h.expect.json: missing"):
        load(history)
    (tmp_path / f"h{SIDECAR}").write_text(json.dumps({"expect": "violation", "guarantee": "no-such", "drained": True}))
    with pytest.raises(StoredHistoryError, match="\"guarantee\" must be one of"):
        load(history)
    (tmp_path / f"h{SIDECAR}").write_text(json.dumps({"expect": "maybe", "drained": True}))
    with pytest.raises(StoredHistoryError, match="\"expect\" must be one of"):
        load(history)


def test_a_failure_found_by_a_partial_drain_is_stored_with_the_consumers_drained(tmp_path):
    """The receiver-queue check follows a drain of only some consumers: the sidecar names them, and
    the stored history, its offline replay and its reproduction all run that same check."""
    from fixtures.targets.faulty import IgnoresFlowPermits
    from fixtures.targets.lockstep import ConformanceFailure, Lockstep
    from fixtures.targets.replay import replay as reproduce
    from model import ops as o
    from model.spec import Spec, SubscriptionType
    from reports.failures import write_failure

    spec = Spec(subscription_type=SubscriptionType.SHARED, receiver_queue_size=1)
    run = Lockstep(IgnoresFlowPermits(), spec, "partial")
    for op in (o.Subscribe(consumer="c0"), o.Subscribe(consumer="c1"), *[o.Send()] * 4):
        run.do(op)
    with pytest.raises(ConformanceFailure) as caught:
        run.drain("c1")
    failure = caught.value
    assert failure.drained == ("c1",) and failure.violation.guarantee.value == "receiver-queue"
    write_failure(tmp_path, "partial", failure)
    stored = load(tmp_path / "partial.jsonl")
    assert stored.expectation.drained == ("c1",) and stored.expectation.step == len(failure.history)
    assert mismatch(replay(stored.spec, stored.history, drained=stored.expectation.drained), stored.expectation) is None
    assert replay(stored.spec, stored.history, drained=False).verdict.ok  # the check is what finds it
    assert "drained=('c1',)" in failure.source
    with pytest.raises(ConformanceFailure, match="receiver-queue"):
        reproduce(IgnoresFlowPermits.name, spec, [op for op, _ in failure.history], drained=("c1",))
    (tmp_path / f"partial{SIDECAR}").write_text(json.dumps({"expect": "ok", "drained": ["c1", 2]}))
    with pytest.raises(StoredHistoryError, match="list of the consumers drained"):
        load(tmp_path / "partial.jsonl")
