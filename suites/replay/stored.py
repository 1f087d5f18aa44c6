"""Stored histories, checked again offline against the current model.

A stored history is one program's events (model/history.py, one JSON line per op) in
`histories/<name>.jsonl`, with a sidecar `histories/<name>.expect.json` saying what checking it
must find:

    {"expect": "ok", "drained": true}
    {"expect": "violation", "guarantee": "no-loss", "drained": true, "step": 9, "detail": "..."}
    {"expect": "unknown", "guarantee": "...", ...}      (an undecided check)

`drained` (`model.nondet.check_drained`, what `Lockstep.check_drained` runs after the last
event): true, every connected consumer was drained, so nothing owed may be missing; or a list of
the only consumers drained (the others took nothing), so the receiver-queue check applies.
`step`: the event at which the violation is first found (the number of events when the drain
check finds it). Other keys (detail, target, nodeid, found_by) say where the history came
from. A conformance run writes exactly these two files for every failing example
(reports/failures.py: `<reports-dir>/failures/`), so a failure becomes a regression test by
copying them here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from model import ops as o
from model.guarantees import Guarantee
from model.history import completion_of, from_json_line, op_of, spec_of
from model.nondet import Drained, Verdict, apply, check_drained, start
from model.spec import Spec

EXPECTATIONS = ("ok", "violation", "unknown")
SIDECAR = ".expect.json"


class StoredHistoryError(ValueError):
    """A stored history or sidecar that cannot be checked; the message names the file and the problem."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectation:
    expect: str
    drained: Drained
    guarantee: Guarantee | None = None
    step: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredHistory:
    path: Path
    spec: Spec
    history: tuple[tuple[o.Op, o.Completion], ...]
    expectation: Expectation


@dataclass(frozen=True, slots=True, kw_only=True)
class Replayed:
    verdict: Verdict
    step: int | None  # where the violation was first found (len(history) for the drain check)


def load(path: Path) -> StoredHistory:
    """The history in `path` and its sidecar (`StoredHistoryError`, or `MalformedEvent` for a bad line)."""
    events = [from_json_line(line, where=f"{path.name}:{n}: ")
              for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]
    if not events:
        raise StoredHistoryError(f"{path.name}: no events")
    programs = {e.program_id for e in events}
    specs = {e.spec for e in events}
    steps = [e.step for e in events]
    if len(programs) != 1 or len(specs) != 1 or steps != list(range(len(events))):
        raise StoredHistoryError(f"{path.name}: one program per file, steps 0..n-1 in order, one spec "
                             f"(found {len(programs)} programs, {len(specs)} specs, steps {steps[:5]}...)")
    history = tuple((op_of(e), completion_of(e)) for e in events)
    return StoredHistory(path=path, spec=spec_of(events[0].spec), history=history,
                         expectation=load_expectation(sidecar_of(path)))


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".jsonl") + SIDECAR)


def load_expectation(path: Path) -> Expectation:
    if not path.is_file():
        raise StoredHistoryError(f"{path.name}: missing (every stored history says what checking it must find)")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise StoredHistoryError(f"{path.name}: not JSON ({error})") from None
    if not isinstance(raw, dict):
        raise StoredHistoryError(f"{path.name}: expected a JSON object")
    expect = raw.get("expect")
    if expect not in EXPECTATIONS:
        raise StoredHistoryError(f"{path.name}: \"expect\" must be one of {EXPECTATIONS}, got {expect!r}")
    drained = raw.get("drained")
    if isinstance(drained, list) and drained and all(isinstance(name, str) for name in drained):
        drained = tuple(drained)
    elif not isinstance(drained, bool):
        raise StoredHistoryError(f"{path.name}: \"drained\" must be true, false or a list of the consumers drained")
    guarantee = None
    if expect != "ok":
        try:
            guarantee = Guarantee(raw.get("guarantee"))
        except ValueError:
            raise StoredHistoryError(f"{path.name}: \"guarantee\" must be one of "
                                 f"{', '.join(g.value for g in Guarantee)}, got {raw.get('guarantee')!r}") from None
    step = raw.get("step")
    if step is not None and not isinstance(step, int):
        raise StoredHistoryError(f"{path.name}: \"step\" must be a number")
    return Expectation(expect=expect, drained=drained, guarantee=guarantee, step=step)


def replay(spec: Spec, history, *, drained: Drained) -> Replayed:
    """Run the history through the current model (model.nondet), then the drain check if `drained`
    (the receiver-queue check if only some consumers were drained)."""
    verdict, found = start(spec), None
    for i, (op, completion) in enumerate(history):
        verdict = apply(verdict, op, completion)
        if found is None and verdict.violation is not None:
            found = i
    if drained:
        verdict = check_drained(verdict, drained)
        if found is None and verdict.violation is not None:
            found = len(history)
    return Replayed(verdict=verdict, step=found)


def mismatch(replayed: Replayed, expectation: Expectation) -> str | None:
    """Why the replay does not match the expectation, or None when it does."""
    violation = replayed.verdict.violation
    if expectation.expect == "ok":
        return None if violation is None else f"expected ok, the model now finds {violation.describe()} " \
                                               f"at step {replayed.step}"
    if violation is None:
        return f"expected {expectation.expect} of {expectation.guarantee.value}, the model now allows the history"
    if violation.undecided != (expectation.expect == "unknown"):
        return f"expected {expectation.expect}, the model now finds {violation.describe()}"
    if violation.guarantee is not expectation.guarantee:
        return f"expected {expectation.guarantee.value}, the model now finds {violation.describe()}"
    if expectation.step is not None and replayed.step != expectation.step:
        return f"expected {expectation.guarantee.value} at step {expectation.step}, found at step {replayed.step}"
    return None
