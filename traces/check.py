"""What `traces check` runs inside the executors: each program of a corpus replayed through the
model's non-deterministic checker (model/nondet.py), as the suites' lock-step run checks a target
(fixtures/targets/lockstep.py), giving one verdict per program.

    conforms    every observation is one some possible state allows
    violation   the first observation no state allows: the guarantee it breaks (the one most states
                agree on, model.nondet), the step, the model's detail
    unknown     no verdict, with the reason: `solver` (Z3 could not decide a cursor read: an
                undecided violation, never a pass), `harness` (the recording could not perform an
                op: an event failed with `TargetError`, which the suites raise as an error, not a
                verdict), `malformed` (the program cannot be checked: a spec or op that does not
                read back, steps other than 0..n-1, times that go back (model.nondet.ImpossibleStamp),
                an op the model calls malformed, such as a receive on a consumer that is not
                connected: its step functions raise ValueError) or `crash` (the checker raised
                anything else)

A program is checked up to its last event: a corpus program does not end with a drain, so the
check a drain ends with (model.nondet.check_drained: nothing owed may be missing) is not run, and
a loss shows only where an observation rules it out.

The input is the corpus's events without the spec column (the spec's JSON comes per spec id, not
per event), sorted by (spec_id, program_id, step) within each partition, so a program's events are
consecutive rows; `check_batches` is the mapInArrow body that cuts them into programs. A verdict's
`signature` groups programs that show the same anomaly: the guarantee (or the unknown's reason)
and the class of the detail, as the gate's baseline signatures normalise it
(reports.signatures.detail_class: message ids, consumer names and numbers left out).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from model import nondet
from model.history import FIELDS, Event, MalformedEvent, completion_of, op_of, spec_of
from model.spec import Spec
from reports.signatures import detail_class
from traces.schema import arrow_schema, spark_schema

CONFORMS, VIOLATION, UNKNOWN = "conforms", "violation", "unknown"
VERDICTS = (CONFORMS, VIOLATION, UNKNOWN)
SOLVER, HARNESS, MALFORMED, CRASH = "solver", "harness", "malformed", "crash"
TARGET_ERROR = "TargetError:"  # how traces.run.record_program records an op the target could not perform

# One row per program: the verdict, where it was found (`step`: the event whose observation no
# state allows), what the model says (`detail`), and how many states the checker held at most.
VERDICT_TYPES: dict[str, str] = {
    "spec_id": "string", "program_id": "string", "steps": "int", "verdict": "string", "guarantee": "string",
    "reason": "string", "step": "int", "detail": "string", "detail_class": "string", "signature": "string",
    "peak_states": "int",
}
VERDICT_SCHEMA = spark_schema(VERDICT_TYPES)
VERDICT_ARROW = arrow_schema(VERDICT_TYPES)
INPUT_COLUMNS = tuple(name for name in FIELDS if name != "spec")
_KEY = (INPUT_COLUMNS.index("spec_id"), INPUT_COLUMNS.index("program_id"))
_OUT_ROWS = 2000  # verdicts per output batch


@dataclass(frozen=True, slots=True, kw_only=True)
class Checked:
    """One program's verdict (the row of VERDICT_TYPES without its key)."""

    verdict: str
    steps: int
    guarantee: str | None = None
    reason: str | None = None
    step: int | None = None
    detail: str | None = None
    peak_states: int = 1

    @property
    def detail_class(self) -> str | None:
        return None if self.detail is None else detail_class(self.detail)

    @property
    def signature(self) -> str | None:
        """The anomaly's short id: the guarantee (an unknown: its reason) and the detail's class."""
        if self.verdict == CONFORMS:
            return None
        head = self.guarantee if self.verdict == VIOLATION else f"{self.reason}:{self.guarantee or ''}"
        return hashlib.sha256(f"{self.verdict}|{head}|{self.detail_class}".encode()).hexdigest()[:12]


def check_history(spec: Spec, events: list[Event]) -> Checked:
    """Replay one program's events (in step order) through the model's non-deterministic checker."""
    steps = len(events)
    numbers = [e.step for e in events]
    if numbers != list(range(steps)):
        return Checked(verdict=UNKNOWN, steps=steps, reason=MALFORMED, detail=_step_problem(numbers))
    verdict, peak = nondet.start(spec), 1
    for event in events:
        try:
            op, completion = op_of(event), completion_of(event)
        except (MalformedEvent, ValueError) as error:
            return Checked(verdict=UNKNOWN, steps=steps, reason=MALFORMED, step=event.step, detail=str(error),
                           peak_states=peak)
        if completion.error is not None and completion.error.startswith(TARGET_ERROR):
            return Checked(verdict=UNKNOWN, steps=steps, reason=HARNESS, step=event.step, peak_states=peak,
                           detail=f"the recording could not perform {event.op}: {completion.error}")
        try:
            verdict = nondet.apply(verdict, op, completion)
        except ValueError as error:  # how the model's steps refuse a malformed program; ImpossibleStamp too
            return Checked(verdict=UNKNOWN, steps=steps, reason=MALFORMED, step=event.step, detail=str(error),
                           peak_states=peak)
        except Exception as error:  # noqa: BLE001 - the checker's own failure: unknown, never a pass
            return Checked(verdict=UNKNOWN, steps=steps, reason=CRASH, step=event.step, peak_states=peak,
                           detail=f"the checker raised {type(error).__name__}: {error}")
        violation = verdict.violation
        if violation is not None:
            return Checked(verdict=UNKNOWN if violation.undecided else VIOLATION, steps=steps,
                           guarantee=violation.guarantee.value, reason=SOLVER if violation.undecided else None,
                           step=event.step, detail=violation.detail, peak_states=peak)
        peak = max(peak, len(verdict.states))
    return Checked(verdict=CONFORMS, steps=steps, peak_states=peak)


def _step_problem(numbers: list[int]) -> str:
    seen: set[int] = set()
    for position, number in enumerate(numbers):
        if number in seen:
            return f"step {number} appears twice (a program's steps are 0..n-1, each once)"
        seen.add(number)
        if number != position:
            return f"step {position} is missing (a program's steps are 0..n-1, each once; found {number})"
    return "steps are not 0..n-1"


def read_spec(text: str | None) -> Spec | str:
    """The spec of a program, or why it cannot be read (its programs are then malformed)."""
    if text is None:
        return "the corpus names no spec for it"
    try:
        return spec_of(text)
    except MalformedEvent as error:
        return str(error)


def check_program(spec: Spec | str, rows: list[tuple]) -> Checked:
    """One program as rows of INPUT_COLUMNS (sorted by step); `spec` as read_spec gives it."""
    if isinstance(spec, str):
        return Checked(verdict=UNKNOWN, steps=len(rows), reason=MALFORMED, detail=spec)
    return check_history(spec, [Event(spec="", **dict(zip(INPUT_COLUMNS, row))) for row in rows])


def _verdict_row(key: tuple[str, str], checked: Checked) -> dict:
    return {"spec_id": key[0], "program_id": key[1], "steps": checked.steps, "verdict": checked.verdict,
            "guarantee": checked.guarantee, "reason": checked.reason, "step": checked.step, "detail": checked.detail,
            "detail_class": checked.detail_class, "signature": checked.signature, "peak_states": checked.peak_states}


def _programs(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[tuple[str, str], list[tuple]]]:
    """Consecutive rows of one (spec_id, program_id) as one program, across batch boundaries."""
    key, rows = None, []
    for batch in batches:
        columns = [batch.column(name).to_pylist() for name in INPUT_COLUMNS]
        for row in zip(*columns):
            this = (row[_KEY[0]], row[_KEY[1]])
            if this != key:
                if rows:
                    yield key, rows
                key, rows = this, []
            rows.append(row)
    if rows:
        yield key, rows


def check_batches(specs: dict[str, str], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: events (INPUT_COLUMNS) sorted by spec, program and step in; one verdict row
    per program out (`specs`: spec_id -> the spec's JSON). A program's rows must not be split across
    partitions (the job repartitions by program first)."""
    read: dict[str, Spec | str] = {}
    out: list[dict] = []
    for key, rows in _programs(batches):
        if key[0] not in read:
            read[key[0]] = read_spec(specs.get(key[0]))
        out.append(_verdict_row(key, check_program(read[key[0]], rows)))
        if len(out) >= _OUT_ROWS:
            yield pa.RecordBatch.from_pylist(out, schema=VERDICT_ARROW)
            out = []
    if out:
        yield pa.RecordBatch.from_pylist(out, schema=VERDICT_ARROW)
