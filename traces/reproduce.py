"""The shortest program of each violation signature `traces check` finds, written as a conformance
failure is (reports/failures.py): `<stem>.jsonl` its history up to the violation, `<stem>.py` the
runnable reproduction (fixtures.targets.lockstep.program_source: the ops replayed on the target in
lock-step with the model), `<stem>.expect.json` what checking the history again must find.

The reproduction replays on the target that recorded the corpus (its manifest says which: a
generated corpus is the model's; a recording names its target and, for a broker given by URL, the
URLs without their userinfo); a broker may choose otherwise on a replay than it did when recorded,
so the history file is the evidence: checking it again (`python -m traces check <stem>.jsonl`, or
the suites' stored-history test after copying the two files to suites/replay/histories) finds the
same violation at the same step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fixtures import kit
from fixtures.targets.lockstep import program_source
from model import ops as o
from model.guarantees import Guarantee
from model.history import Event, completion_of, op_of, spec_of
from model.spec import Spec
from model.violations import Violation
from reports.failures import stem_for, write_failure

GENERATED_BY_THE_MODEL = ("generated",)


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """A violation found in a stored program (reports.failures.FailureLike): not drained."""

    violation: Violation
    history: tuple[tuple[o.Op, o.Completion], ...]
    spec: Spec
    source: str
    drained: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Recorder:
    """What a corpus says about the target that produced it."""

    name: str = "model"
    replay_args: dict | None = None
    said: bool = True  # False: the corpus does not say; the model is named

    @classmethod
    def of(cls, manifest: dict) -> Recorder:
        if manifest.get("kind") in GENERATED_BY_THE_MODEL:
            return cls()
        name = manifest.get("target_name")
        if name:
            return cls(name=name, replay_args=dict(manifest.get("replay_args") or {}))
        described = str(manifest.get("target") or "")  # older recordings: traces.targets.TargetSpec.describe()
        if described:
            return cls(name=described.split(" ", 1)[0])
        return cls(said=False)


def _comment(text: str) -> str:
    return "".join(f"# {line}".rstrip() + "\n" for line in text.splitlines())


def write_reproduction(folder: Path, signature: dict, events: list[Event], *, corpus: str,
                       recorder: Recorder) -> str:
    """Write the reproduction of `signature`'s shortest program (its events in step order); the stem."""
    step = signature["representative_step"]
    spec = spec_of(events[0].spec)
    history = tuple((op_of(e), completion_of(e)) for e in events[:step + 1])
    guarantee = Guarantee(signature["guarantee"])
    violation = Violation(guarantee=guarantee, detail=signature["representative_detail"])
    program, key = signature["representative_program"], signature["representative_spec"]
    stem = stem_for(f"{guarantee.value}-{signature['signature']}", f"{key}-{program}")
    check = kit.command("traces")
    where = "" if recorder.said else ("The corpus does not say which target recorded it: the ops replay on the "
                                      "model.\n")
    header = _comment(
        f"{check} check: program {program} of spec {key} ({spec.describe()}) in {corpus}\n"
        f"broke {guarantee.value} ({guarantee.promise}) at step {step}:\n  {violation.detail}\n"
        f"signature {signature['signature']}: {signature['detail_class']} ({signature['programs']} programs; this is "
        f"the shortest)\n"
        f"Its recorded history is {stem}.jsonl; check it again: {check} check {stem}.jsonl --out <folder>\n"
        f"{where}The ops below replay on the target in lock-step with the model: a broker may choose otherwise than "
        f"it did when recorded.")
    source = header + program_source(spec, [op for op, _ in history], recorder.name,
                                     replay_args=recorder.replay_args)
    write_failure(folder, stem, Found(violation=violation, history=history, spec=spec, source=source),
                  found_by="traces check", corpus=corpus, spec_id=key, program_id=program,
                  signature=signature["signature"], target=recorder.name)
    return stem
