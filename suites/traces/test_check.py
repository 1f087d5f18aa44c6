"""check: every program of a corpus replayed through the model's checker in the executors. A
corpus the model generated conforms in every program; one altered event is a violation of the
guarantee it breaks at its step, grouped into a signature whose shortest program is written as a
reproduction; programs that cannot be checked are unknown with their reason; the verdicts do not
depend on the partitioning; a corrupt corpus is refused (exit 2); the suites' stored broker
histories get the verdicts their sidecars say."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from model.history import Event, spec_id, to_json_line
from model.spec import Spec, SubscriptionType
from reports.signatures import detail_class
from suites.replay import stored
from suites.traces.helpers import EXCLUSIVE, SHARED, change, model_program, write_corpus
from traces import corpus as c
from traces.check import INPUT_COLUMNS, check_batches, check_history
from traces.cli import main
from traces.jobs import check, generate
from traces.schema import CorpusError, events_table

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
STEPS = 50
# Ops after which a second copy of a message has a cause (or the cursor moves back): an altered
# delivery is put only in a program that has none of them before it.
CAUSES = {"redeliver_unacknowledged_messages", "negative_acknowledge", "close", "seek", "unload", "restart", "crash"}
SHARED_ID, EXCLUSIVE_ID = spec_id(SHARED), spec_id(EXCLUSIVE)


def _receive(consumer: str, at: int, entry: int, index: int) -> dict:
    """The fields of an event that is a receive which got message (entry, index) first time."""
    return dict(op="receive", consumer=consumer, entry=None, index=None, keys=None, batched=None, ms=None,
                outcome="ok", at=at, delivered_entry=entry, delivered_index=index, redelivery_count=0, cursor=None,
                sent=None, error=None)


def _twice(program: list[Event]) -> tuple[list[Event], int] | None:
    """The receive after a program's first delivery gets the same message again."""
    k = next((e.step for e in program if e.op == "receive" and e.delivered_entry is not None), None)
    if k is None or k + 1 >= len(program) or any(e.op in CAUSES for e in program[:k + 2]):
        return None
    first = program[k]
    return change(program, k + 1, **_receive(first.consumer, first.at, first.delivered_entry,
                                             first.delivered_index)), k + 1


def _acked_again(program: list[Event]) -> tuple[list[Event], int] | None:
    """The op after a program's first successful acknowledge is a receive that gets the acked message."""
    a = next((e for e in program if e.op == "acknowledge" and e.outcome == "ok"), None)
    if a is None or a.step + 1 >= len(program) or any(e.op in CAUSES for e in program[:a.step + 2]):
        return None
    return change(program, a.step + 1, **_receive(a.consumer, a.at, a.entry, a.index)), a.step + 1


def _altered(spec: Spec, alter, pid: str, seeds=range(100, 400)) -> tuple[list[Event], int]:
    """The first seeded model program the alteration applies to, altered."""
    for seed in seeds:
        found = alter(model_program(spec, seed, STEPS, pid))
        if found is not None:
            return found
    raise AssertionError(f"no program of {seeds} fits {alter.__name__}")


@pytest.fixture(scope="module")
def altered(spark, tmp_path_factory):
    """A hand-made corpus: model programs, some with one event altered, and the check's output."""
    base = tmp_path_factory.mktemp("check")
    programs = {f"same-{i}": model_program(spec, i, STEPS, f"same-{i}")
                for i, spec in enumerate([SHARED, EXCLUSIVE] * 3)}
    truth = {}
    for pid, spec, alter, guarantee in [("twice-x", EXCLUSIVE, _twice, "no-duplicate-without-cause"),
                                        ("twice-s", SHARED, _twice, "no-duplicate-without-cause"),
                                        ("acked", EXCLUSIVE, _acked_again, "no-redelivery-after-ack")]:
        programs[pid], step = _altered(spec, alter, pid)
        truth[pid] = ("violation", guarantee, None, step)
    for pid, spec, seed, entry in [("phantom", SHARED, 7, 999), ("phantom-x", EXCLUSIVE, 8, 998)]:
        p = model_program(spec, seed, STEPS, pid)
        k = next(e.step for e in p if e.op == "receive" and e.delivered_entry is not None)
        programs[pid] = change(p, k, delivered_entry=entry, delivered_index=-1)
        truth[pid] = ("violation", "no-phantom", None, k)

    programs["unknown-op"] = change(model_program(SHARED, 8, STEPS, "unknown-op"), 3, op="frobnicate")
    truth["unknown-op"] = ("unknown", None, "malformed", 3)
    p = model_program(EXCLUSIVE, 9, STEPS, "step-twice")
    programs["step-twice"] = p[:10] + [dataclasses.replace(p[10], step=9)] + p[11:]
    truth["step-twice"] = ("unknown", None, "malformed", None)
    programs["seek-failed"] = change(model_program(SHARED, 10, STEPS, "seek-failed"), 2, outcome="fail",
                                     error="TargetError: RuntimeError: seek is not supported")
    truth["seek-failed"] = ("unknown", None, "harness", 2)
    path = write_corpus(spark, base / "corpus", [e for p in programs.values() for e in p])
    summary = check.run(spark, path, base / "out")
    return {"base": base, "corpus": path, "out": base / "out", "summary": summary, "truth": truth,
            "programs": programs}


def _verdicts(out: Path) -> list[dict]:
    table = pq.read_table(out / check.VERDICTS_DIR)
    return sorted(table.to_pylist(), key=lambda r: (r["spec_id"], r["program_id"]))


@pytest.fixture(scope="module")
def generated(spark, tmp_path_factory):
    """A corpus the model generated: the four subscription types, 25 programs each."""
    path = tmp_path_factory.mktemp("generated") / "corpus"
    generate.run(spark, path, specs=[Spec(subscription_type=kind) for kind in SubscriptionType], programs=25,
                 steps=40, seed=3)
    return path


def test_a_generated_corpus_conforms_in_every_program(generated, tmp_path):
    manifest = json.loads((generated / c.MANIFEST).read_text())
    assert main(["check", str(generated), "--out", str(tmp_path / "out"), "-q"]) == 0
    summary = json.loads((tmp_path / "out" / c.SUMMARY).read_text())
    assert summary["verdicts"] == {"conforms": manifest["programs"], "violation": 0, "unknown": 0}
    assert summary["events"] == manifest["events"] and summary["signature_count"] == 0
    assert {r["verdict"] for r in _verdicts(tmp_path / "out")} == {"conforms"}
    assert len(_verdicts(tmp_path / "out")) == manifest["programs"] == 100
    assert [r["conforms"] for r in summary["per_spec"]] == [25] * 4
    assert "Every program conforms." in (tmp_path / "out" / "summary.md").read_text()


def test_each_altered_event_is_found_at_its_step(altered):
    found = {r["program_id"]: (r["verdict"], r["guarantee"], r["reason"], r["step"]) for r in _verdicts(altered["out"])}
    assert {pid: v for pid, v in found.items() if pid in altered["truth"]} == altered["truth"]
    assert {v for pid, v in found.items() if pid not in altered["truth"]} == {("conforms", None, None, None)}
    summary = altered["summary"]
    assert summary["verdicts"] == {"conforms": 6, "violation": 5, "unknown": 3}
    assert {r["guarantee"]: r["violation"] for r in summary["per_guarantee"]} == {
        "no-redelivery-after-ack": 1, "no-duplicate-without-cause": 2, "no-phantom": 2}
    assert summary["unknown_reasons"] == {"harness": 1, "malformed": 2}
    phantoms = {(r["spec_id"], r["programs"]) for r in summary["counts"] if r["guarantee"] == "no-phantom"}
    assert phantoms == {(SHARED_ID, 1), (EXCLUSIVE_ID, 1)}
    assert sum(r["programs"] for r in summary["counts"]) == len(altered["programs"])


def test_violations_are_grouped_by_guarantee_and_detail_class(altered):
    verdicts = {r["program_id"]: r for r in _verdicts(altered["out"])}
    twice = [verdicts["twice-x"], verdicts["twice-s"]]
    assert twice[0]["signature"] == twice[1]["signature"]
    phantoms = [verdicts["phantom"], verdicts["phantom-x"]]  # m999 and m998: one class, m#
    assert phantoms[0]["detail"] != phantoms[1]["detail"] and phantoms[0]["signature"] == phantoms[1]["signature"]
    assert len({r["signature"] for r in verdicts.values() if r["verdict"] != "conforms"}) == 6
    for row in verdicts.values():
        if row["verdict"] != "conforms":
            assert row["detail"] and row["detail_class"] == detail_class(row["detail"])
    signature = next(s for s in altered["summary"]["signatures"] if s["signature"] == twice[0]["signature"])
    shortest = min(twice, key=lambda r: (r["step"], r["spec_id"], r["program_id"]))
    assert (signature["programs"], signature["specs"]) == (2, 2)
    assert (signature["representative_program"], signature["representative_step"]) == \
           (shortest["program_id"], shortest["step"])
    table = pq.read_table(altered["out"] / check.SIGNATURES)
    assert table.num_rows == altered["summary"]["signature_count"] == 6


def test_each_violation_signature_has_a_reproduction_that_names_its_program(altered):
    summary, out = altered["summary"], altered["out"]
    reproduced = [s for s in summary["signatures"] if s["verdict"] == "violation"]
    assert len(reproduced) == 3 and all(s["reproduction"] for s in reproduced)  # twice-, phantom- share one each
    assert all(s["reproduction"] is None for s in summary["signatures"] if s["verdict"] == "unknown")
    for signature in reproduced:
        source = (out / signature["reproduction"]).read_text()
        stem = (out / signature["reproduction"]).with_suffix("")
        program = signature["representative_program"]
        assert f"program {program} of spec {signature['representative_spec']}" in source
        assert f"broke {signature['guarantee']}" in source and "replay('model'" in source
        # The history up to the violation, checked again as the suites check a stored history.
        history = stored.load(stem.with_suffix(".jsonl"))
        assert len(history.history) == signature["representative_step"] + 1
        assert history.expectation.guarantee.value == signature["guarantee"]
        assert stored.mismatch(stored.replay(history.spec, history.history, drained=False), history.expectation) is None
        sidecar = json.loads(stem.with_suffix(".expect.json").read_text())
        assert (sidecar["program_id"], sidecar["step"]) == (program, signature["representative_step"])
    # Runnable: the ops replay on the model (which answers as the model does: nothing to find).
    first = out / reproduced[0]["reproduction"]
    ran = subprocess.run([sys.executable, str(first)], cwd=out, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert "| reproduction |" in (out / "summary.md").read_text()


def test_one_and_two_partitions_give_the_same_verdicts(spark, altered, tmp_path):
    for n in (1, 2):
        check.run(spark, altered["corpus"], tmp_path / f"p{n}", partitions=n)
        assert len(list((tmp_path / f"p{n}" / check.VERDICTS_DIR).glob("*.parquet"))) == n
    assert _verdicts(tmp_path / "p1") == _verdicts(tmp_path / "p2") == _verdicts(altered["out"])


def test_events_in_any_order_across_files_give_the_same_verdicts(spark, altered, tmp_path):
    """A Parquet dataset written by another tool: each program's events shuffled over three files."""
    import random

    events = [e for p in altered["programs"].values() for e in p]
    random.Random(5).shuffle(events)
    (tmp_path / "events").mkdir()
    for i in range(3):
        pq.write_table(events_table(events[i::3]), tmp_path / "events" / f"part-{i}.parquet")
    check.run(spark, tmp_path / "events", tmp_path / "out", partitions=2)
    assert _verdicts(tmp_path / "out") == _verdicts(altered["out"])


def test_a_program_split_across_arrow_batches_is_checked_whole():
    programs = [model_program(SHARED, seed, 13, f"p{seed}") for seed in range(3)]
    table = events_table([e for p in programs for e in p]).select(list(INPUT_COLUMNS))
    specs = {programs[0][0].spec_id: programs[0][0].spec}
    out = [r for b in check_batches(specs, iter(table.to_batches(max_chunksize=5))) for r in b.to_pylist()]
    assert [(r["program_id"], r["steps"], r["verdict"]) for r in out] == [(f"p{i}", 13, "conforms") for i in range(3)]
    assert check_history(SHARED, programs[0]).verdict == "conforms"


def test_a_checker_that_raises_or_an_undecided_solver_is_unknown_never_a_pass(monkeypatch):
    from model import nondet
    from model.guarantees import Guarantee
    from model.violations import Violation

    program = model_program(SHARED, 1, 12, "p")

    def raises(verdict, op, completion):
        raise RuntimeError("a bug in the checker")

    monkeypatch.setattr(nondet, "apply", raises)
    crashed = check_history(SHARED, program)
    assert (crashed.verdict, crashed.reason, crashed.step) == ("unknown", "crash", 0)
    assert crashed.detail == "the checker raised RuntimeError: a bug in the checker"

    def undecided(verdict, op, completion):
        return nondet.Verdict(states=frozenset(), violation=Violation(
            guarantee=Guarantee.CURSOR, detail="the solver could not decide the cursor 3|: rlimit", undecided=True))

    monkeypatch.setattr(nondet, "apply", undecided)
    unsure = check_history(SHARED, program)
    assert (unsure.verdict, unsure.reason, unsure.guarantee, unsure.step) == ("unknown", "solver", "cursor", 0)


def test_a_corrupt_corpus_is_refused_with_exit_2(generated, tmp_path, capsys):
    copy = tmp_path / "corpus"
    shutil.copytree(generated, copy)
    victim = sorted((copy / c.EVENTS).rglob("*.parquet"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    assert main(["check", str(copy), "--out", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and f"{victim.relative_to(copy)}: corrupt" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_an_existing_output_is_replaced_only_with_overwrite(spark, altered, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(altered["out"], out)
    with pytest.raises(CorpusError, match="already exists"):
        check.run(spark, altered["corpus"], out)
    assert main(["check", str(altered["corpus"]), "--out", str(out), "--overwrite", "--fail-on-violation", "-q"]) == 1
    assert json.loads((out / c.SUMMARY).read_text())["verdicts"]["violation"] == 5
    (tmp_path / "documents").mkdir()
    with pytest.raises(CorpusError, match="not a corpus, recording or diff"):
        check.run(spark, altered["corpus"], tmp_path / "documents", overwrite=True)


def test_the_stored_histories_get_their_sidecars_verdicts(spark, tmp_path):
    """The suites' stored histories (real broker runs and faulty targets) checked in Spark: each
    without a final drain gets the verdict its sidecar says, at its step."""
    lines, expected = [], {}
    for path in sorted((ROOT / "suites" / "replay" / "histories").glob("*.jsonl")):
        history = stored.load(path)
        if history.expectation.drained is not False:
            continue
        pid = path.name.removesuffix(".jsonl")
        lines += [to_json_line(dataclasses.replace(e, program_id=pid))
                  for e in (Event(**json.loads(line)) for line in path.read_text().splitlines() if line.strip())]
        want = history.expectation
        expected[pid] = ("conforms" if want.expect == "ok" else want.expect,
                         want.guarantee.value if want.guarantee else None, want.step)
    assert len(expected) >= 40 and sum(v[0] == "violation" for v in expected.values()) >= 10
    (tmp_path / "histories.jsonl").write_text("\n".join(lines) + "\n")
    check.run(spark, tmp_path / "histories.jsonl", tmp_path / "out")
    found = {r["program_id"]: (r["verdict"], r["guarantee"], r["step"]) for r in _verdicts(tmp_path / "out")}
    assert {pid: v[:2] for pid, v in found.items()} == {pid: v[:2] for pid, v in expected.items()}
    assert all(found[pid][2] == step for pid, (_, _, step) in expected.items() if step is not None)  # else unsaid
