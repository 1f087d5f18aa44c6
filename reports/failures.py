"""The files a failing example leaves: its history, its reproduction and its expectation.

For a conformance failure, `failures/<stem>.jsonl` holds the shrunk program's history in the one
event schema (model/history.py), `<stem>.py` the runnable reproduction the failure printed, and
`<stem>.expect.json` what checking the history again must find ("violation" of a guarantee, after
the final drain check or not). The sidecar has the format of suites/replay/histories, so copying
the two files there keeps the failure as a regression test.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from model.guarantees import Guarantee
from model.history import Event, event_of, from_json_line, to_json_line

SUFFIXES = (".jsonl", ".py", ".expect.json")


@runtime_checkable
class FailureLike(Protocol):
    """What the reports read of `fixtures.targets.lockstep.ConformanceFailure` (or a target's own)."""

    violation: object  # model.violations.Violation
    history: tuple
    spec: object  # model.spec.Spec
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredFailure:
    stem: str
    events: tuple[Event, ...]
    source: str | None
    expectation: dict


def stem_for(area: str, spec_id: str, index: int = 0) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{area}-{spec_id}").strip("-")
    return base if index == 0 else f"{base}-{index + 1}"


def expectation_of(failure: FailureLike, **context: object) -> dict:
    """The sidecar: what a replay of the history must find, and where the failure came from."""
    violation = failure.violation
    # The drain check that found it (fixtures.targets.lockstep.Drained); a target's own failure
    # without one: only the check after a drain finds a loss.
    drained = getattr(failure, "drained", violation.guarantee is Guarantee.NO_LOSS)
    return {
        "expect": "unknown" if violation.undecided else "violation",
        "guarantee": violation.guarantee.value,
        "detail": violation.detail,
        # run the drain check (Lockstep.check_drained) after the last event: true, or the only
        # consumers drained (the others idle: the receiver-queue check)
        "drained": list(drained) if isinstance(drained, tuple) else drained,
        "step": len(failure.history) if drained else len(failure.history) - 1,  # where it is first found
        **{k: v for k, v in context.items() if v is not None},
    }


def write_failure(folder: Path, stem: str, failure: FailureLike, **context: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    events = [event_of(stem, failure.spec, i, op, c) for i, (op, c) in enumerate(failure.history)]
    (folder / f"{stem}.jsonl").write_text("".join(to_json_line(e) + "\n" for e in events))
    (folder / f"{stem}.py").write_text(failure.source)
    (folder / f"{stem}.expect.json").write_text(json.dumps(expectation_of(failure, **context), indent=2) + "\n")


def read_events(path: Path) -> tuple[Event, ...]:
    """The events of a history file (model.history.MalformedEvent names the line that is wrong)."""
    lines = path.read_text().splitlines()
    return tuple(from_json_line(line, where=f"{path}:{n}: ") for n, line in enumerate(lines, 1) if line.strip())


def read_failure(folder: Path, stem: str) -> StoredFailure:
    history = folder / f"{stem}.jsonl"
    source = folder / f"{stem}.py"
    sidecar = folder / f"{stem}.expect.json"
    return StoredFailure(stem=stem, events=read_events(history),
                         source=source.read_text() if source.is_file() else None,
                         expectation=json.loads(sidecar.read_text()) if sidecar.is_file() else {})


def clear(folder: Path) -> None:
    """Remove the files a previous run left in `folder` (only the kinds this module writes)."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.is_file() and path.name.endswith(SUFFIXES):
            path.unlink()
