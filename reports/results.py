"""The results of one conformance run, as records: what `summary.json` holds and how it is read back.

One `Result` per conformance test (a guarantee area on one spec id): its outcome, the guarantee it
broke, the guarantees it can break (the catalog's declaration, carried by the test's `guarantee`
marker), the reason it is unknown or not applicable, and how many programs and ops it ran. A `Summary`
is the run (target, Pulsar, client, profile) with its results; `matrix` folds the results into
the conformance matrix, area x spec id, and `guarantee_view` into one row per guarantee
(model/guarantees.py), guarantee x spec id. Outcomes are those of reports/vocabulary.py: passed,
failed, unknown with its kind (never a pass), not applicable.

`load_summary` is what the gate, the comparison and the HTML report read; a missing or malformed
file is an `InputError` whose message names the file and what is wrong with it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from model.guarantees import Guarantee
from reports.vocabulary import (FAILED, LEGACY_OUTCOMES, NOT_APPLICABLE, OUTCOMES, PASSED, UNKNOWN, UNKNOWN_KINDS,
                                kind_of_reason, verdict_word)

SCHEMA = "pulsar-ack-conformance/summary/1"
NOT_RUN = "not run"  # a guarantee view cell no test of the run could decide
SUBSCRIPTION_ORDER = ("Exclusive", "Failover", "Shared", "Key_Shared")


class InputError(ValueError):
    """A results or baseline file that is missing or malformed; the message says which and why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportedViolation:
    """One broken guarantee of a failed (or undecided) test, and the files that keep its history."""

    guarantee: str
    detail: str
    failure: str | None = None  # file stem under failures/: <stem>.jsonl, <stem>.py, <stem>.expect.json
    undecided: bool = False
    signature: dict | None = None  # reports/signatures.py: what a baseline entry accepting it matches
    replayed: dict | None = None  # {"times", "reproduced", "errors"}: reports/replay_failures.py

    def replayed_text(self) -> str | None:
        """`reproduced 3 of 5 replays (1 could not run)`, when the failure was replayed."""
        if not self.replayed:
            return None
        errors = self.replayed.get("errors") or 0
        return (f"reproduced {self.replayed.get('reproduced', 0)} of {self.replayed.get('times', 0)} replays"
                + (f" ({errors} could not run)" if errors else ""))


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    nodeid: str
    area: str
    spec_id: str
    outcome: str
    target: str | None = None
    subscription_type: str | None = None
    spec: str | None = None  # Spec.describe()
    spec_fields: dict | None = None  # every field of the Spec (model/spec.py), as JSON
    violations: tuple[ReportedViolation, ...] = ()
    can_break: tuple[str, ...] | None = None  # the guarantees the test can break; None: not recorded
    reason: str | None = None  # why unknown or not applicable
    reason_kind: str | None = None  # why unknown, one of vocabulary.UNKNOWN_KINDS
    flaky: bool = False  # Hypothesis could not reproduce the failure on replay
    examples: int | None = None  # programs run, shrinking included
    steps: int | None = None  # ops run
    duration_s: float | None = None
    # The faults its programs could use (model/faults.py): fault -> {"performable": the target
    # performs it, "programs": how many performed it, "ops": how often, <window>: how many of
    # those programs reached it}. None: the check has none.
    faults: dict | None = None

    @property
    def guarantees(self) -> frozenset[str]:
        return frozenset(v.guarantee for v in self.violations if not v.undecided)

    @property
    def key(self) -> tuple[str, str]:
        return self.area, self.spec_id

    def verdict(self) -> str:
        """One short phrase: `passed`, `failed: no-loss`, `unknown: timed out`, `not applicable`."""
        if self.outcome == FAILED:
            return f"failed: {', '.join(sorted(self.guarantees))}"
        return verdict_word(self.outcome, self.reason_kind)


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    run: dict = field(default_factory=dict)
    results: tuple[Result, ...] = ()

    def totals(self) -> dict[str, int]:
        counts = Counter(r.outcome for r in self.results)
        return {outcome: counts.get(outcome, 0) for outcome in OUTCOMES}

    def unknown_kinds(self) -> dict[str, int]:
        """How many cells are unknown for each reason kind (only the kinds that occur)."""
        counts = Counter(r.reason_kind or "unrecorded" for r in self.results if r.outcome == UNKNOWN)
        return dict(sorted(counts.items()))

    def areas(self) -> list[str]:
        return list(dict.fromkeys(r.area for r in self.results))

    def spec_ids(self) -> list[str]:
        return order_spec_ids(r.spec_id for r in self.results)

    def result(self, area: str, spec_id: str) -> Result | None:
        return next((r for r in self.results if r.key == (area, spec_id)), None)

    def label(self) -> str:
        """How the run names itself in a comparison: the Pulsar version, else the target."""
        pulsar = self.run.get("pulsar") or {}
        return pulsar.get("version") or self.run.get("target") or "run"

    def client(self) -> str | None:
        """The client under test and its version (`python 3.13.0`), as its driver named itself."""
        client = self.run.get("client") or {}
        name = client.get("name")
        return " ".join(str(client[k]) for k in ("name", "version") if client.get(k)) if name else None

    def label_parts(self) -> tuple[str | None, str | None, str | None, str | None]:
        """What can set two runs apart: the Pulsar version, where that broker was (`embedded`, or
        `at <service URL>` when given), the client, the target."""
        pulsar = self.run.get("pulsar") or {}
        embedded = pulsar.get("embedded")
        where = "embedded" if embedded else f"at {pulsar.get('service_url') or '?'}" if embedded is False else None
        return pulsar.get("version"), where, self.client(), self.run.get("target")


def order_spec_ids(spec_ids) -> list[str]:
    """Spec ids grouped by subscription type (Exclusive, Failover, Shared, Key_Shared), plain first."""
    def rank(spec_id: str) -> tuple[int, int, str]:
        base = subscription_of(spec_id)
        group = SUBSCRIPTION_ORDER.index(base) if base in SUBSCRIPTION_ORDER else len(SUBSCRIPTION_ORDER)
        return group, spec_id != base, spec_id
    return sorted(dict.fromkeys(spec_ids), key=rank)


def subscription_of(spec_id: str) -> str:
    """`Key_Shared-dlq2` -> `Key_Shared`: the catalog's ids start with the subscription type."""
    return next((t for t in sorted(SUBSCRIPTION_ORDER, key=len, reverse=True) if spec_id.startswith(t)), spec_id)


def matrix(summary: Summary) -> dict[str, dict[str, dict]]:
    """area -> spec id -> {outcome, reason_kind, guarantees, examples, steps}: the conformance matrix."""
    cells: dict[str, dict[str, dict]] = {}
    for r in summary.results:
        cells.setdefault(r.area, {})[r.spec_id] = {
            "outcome": r.outcome, "reason_kind": r.reason_kind, "guarantees": sorted(r.guarantees),
            "examples": r.examples, "steps": r.steps, "subscription_type": r.subscription_type}
    return cells


@dataclass(frozen=True, slots=True, kw_only=True)
class GuaranteeCell:
    """One guarantee on one spec id, over every test of that spec id that can break it.

    failed: some test failed naming the guarantee (`failures`: the area and the violation);
    unknown: none did, but a test that can break it was undecided, errored, or failed on another
    guarantee first (which stopped its program before this one could show);
    passed: every test that can break it and ran passed (`reasons` lists the not applicable ones);
    not applicable: every such test was; not run: no test of the run can break it on this spec id.
    """

    guarantee: str
    spec_id: str
    outcome: str
    tests: tuple[str, ...] = ()  # the areas, on this spec id, that can break it or failed naming it
    failures: tuple[tuple[str, ReportedViolation], ...] = ()
    reasons: tuple[str, ...] = ()  # per area, why the cell is unknown or not applicable (or which were)


def guarantees_of(summary: Summary) -> list[str]:
    """The guarantee view's rows: every guarantee of model/guarantees.py, then any other a failure names."""
    named = [v.guarantee for r in summary.results for v in r.violations]
    return list(dict.fromkeys([g.value for g in Guarantee] + named))


def guarantee_cell(summary: Summary, guarantee: str, spec_id: str) -> GuaranteeCell:
    on_spec = [r for r in summary.results if r.spec_id == spec_id]
    naming = [r for r in on_spec if any(v.guarantee == guarantee for v in r.violations)]
    tests = [r for r in on_spec if guarantee in (r.can_break or ()) or r in naming]
    failures = tuple((r.area, v) for r in naming if r.outcome == FAILED
                     for v in r.violations if v.guarantee == guarantee and not v.undecided)
    areas = tuple(r.area for r in tests)
    if failures:
        return GuaranteeCell(guarantee=guarantee, spec_id=spec_id, outcome=FAILED, tests=areas, failures=failures)
    undecided = [r for r in tests if r.outcome in (UNKNOWN, FAILED)]
    if undecided:
        return GuaranteeCell(guarantee=guarantee, spec_id=spec_id, outcome=UNKNOWN, tests=areas,
                             reasons=tuple(f"{r.area}: {_why_undecided(r, guarantee)}" for r in undecided))
    inapplicable = tuple(f"{r.area}: not applicable, {r.reason or 'no reason recorded'}" for r in tests
                         if r.outcome == NOT_APPLICABLE)
    outcome = PASSED if any(r.outcome == PASSED for r in tests) else NOT_APPLICABLE if tests else NOT_RUN
    return GuaranteeCell(guarantee=guarantee, spec_id=spec_id, outcome=outcome, tests=areas, reasons=inapplicable)


def _why_undecided(result: Result, guarantee: str) -> str:
    if any(v.guarantee == guarantee and v.undecided for v in result.violations):
        return f"the check of {guarantee} could not decide"
    if result.outcome == FAILED:
        return f"failed on {', '.join(sorted(result.guarantees))} first"
    return f"{result.reason_kind or 'unknown'}: {result.reason or 'no reason recorded'}"


def guarantee_view(summary: Summary) -> dict[str, dict[str, GuaranteeCell]]:
    """guarantee -> spec id -> its cell, for the spec ids where some test can break it (or named it)."""
    view: dict[str, dict[str, GuaranteeCell]] = {}
    for guarantee in guarantees_of(summary):
        cells = (guarantee_cell(summary, guarantee, s) for s in summary.spec_ids())
        view[guarantee] = {c.spec_id: c for c in cells if c.outcome != NOT_RUN}
    return view


def guarantee_matrix(summary: Summary) -> dict[str, dict[str, dict]]:
    """The guarantee view as JSON: guarantee -> spec id -> {outcome, tests, failures, reasons}."""
    return {guarantee: {spec_id: {"outcome": c.outcome, "tests": list(c.tests),
                                  "failures": [{"area": area, **asdict(v)} for area, v in c.failures],
                                  "reasons": list(c.reasons)} for spec_id, c in cells.items()}
            for guarantee, cells in guarantee_view(summary).items()}


def to_json(summary: Summary) -> dict:
    return {"schema": SCHEMA, "run": summary.run, "totals": summary.totals(),
            "unknown_kinds": summary.unknown_kinds(), "matrix": matrix(summary),
            "guarantee_matrix": guarantee_matrix(summary), "results": [_result_json(r) for r in summary.results]}


def _result_json(result: Result) -> dict:
    raw = asdict(result)
    raw["violations"] = [asdict(v) for v in result.violations]
    return raw


def write_summary(summary: Summary, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(summary), indent=2) + "\n")


def read_json(path: Path, what: str) -> object:
    """The JSON in `path`, or an `InputError` saying the file is missing or not JSON."""
    if not path.is_file():
        raise InputError(f"{what} {path}: no such file")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise InputError(f"{what} {path}: not JSON ({error})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{what} {path}: cannot be read ({error})") from None


def load_summary(path: Path) -> Summary:
    raw = read_json(Path(path), "results")
    where = f"results {path}"
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise InputError(f"{where}: not a conformance summary (expected \"schema\": \"{SCHEMA}\")")
    if not isinstance(raw.get("results"), list):
        raise InputError(f"{where}: \"results\" must be a list")
    results = tuple(_result_of(item, f"{where}: results[{i}]") for i, item in enumerate(raw["results"]))
    seen = Counter(r.key for r in results)
    twice = [f"{a} [{s}]" for (a, s), n in seen.items() if n > 1]
    if twice:
        raise InputError(f"{where}: more than one result for {', '.join(twice)}")
    run = raw.get("run") or {}
    if not isinstance(run, dict):
        raise InputError(f"{where}: \"run\" must be an object")
    return Summary(run=run, results=results)


def _result_of(item: object, where: str) -> Result:
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object")
    known = set(Result.__dataclass_fields__)
    unknown = sorted(set(item) - known)
    missing = [name for name in ("nodeid", "area", "spec_id", "outcome") if not isinstance(item.get(name), str)]
    if unknown or missing:
        problems = ([f"unknown fields {unknown}"] if unknown else []) + (
            [f"missing text fields {missing}"] if missing else [])
        raise InputError(f"{where}: " + "; ".join(problems))
    item = {**item, "outcome": LEGACY_OUTCOMES.get(item["outcome"], item["outcome"])}
    if item["outcome"] not in OUTCOMES:
        raise InputError(f"{where}: outcome must be one of {', '.join(OUTCOMES)}, got {item['outcome']!r}")
    kind = item.get("reason_kind")
    if kind is not None and kind not in UNKNOWN_KINDS:
        raise InputError(f"{where}: reason_kind must be one of {', '.join(UNKNOWN_KINDS)}, got {kind!r}")
    if item["outcome"] == UNKNOWN and kind is None:  # a summary older than the kinds
        item["reason_kind"] = kind_of_reason(item.get("reason"))
    raw_violations = item.get("violations") or []
    if not isinstance(raw_violations, list):
        raise InputError(f"{where}: \"violations\" must be a list")
    violations = []
    for j, v in enumerate(raw_violations):
        known = set(ReportedViolation.__dataclass_fields__)
        if not isinstance(v, dict) or not isinstance(v.get("guarantee"), str) or set(v) - known:
            raise InputError(f"{where}: violations[{j}] must be an object with a \"guarantee\" and a \"detail\"")
        violations.append(ReportedViolation(**{"detail": "", **v}))
    faults = item.get("faults")
    if faults is not None and not (isinstance(faults, dict) and all(isinstance(t, dict) for t in faults.values())):
        raise InputError(f"{where}: \"faults\" must be an object of one object per fault")
    can_break = item.get("can_break")
    if can_break is not None and not (isinstance(can_break, list) and all(isinstance(g, str) for g in can_break)):
        raise InputError(f"{where}: \"can_break\" must be a list of guarantees")
    result = Result(**{**item, "violations": tuple(violations),
                       "can_break": None if can_break is None else tuple(can_break)})
    if result.outcome == FAILED and not result.guarantees:
        raise InputError(f"{where}: {result.area} [{result.spec_id}] failed without naming a broken guarantee")
    return result
