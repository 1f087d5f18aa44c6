"""What the gate and the comparison conclude, as records: a judgement of one run against a baseline
of accepted divergences, and two runs side by side cell by cell.

The records only: reports/gate.py and reports/compare.py build them, reports/markdown.py and the
pages render them. So the dependencies point one way (gate, compare -> markdown -> verdicts ->
results) and rendering never imports the commands.
"""

from __future__ import annotations

from dataclasses import dataclass

from reports.results import Result, Summary
from reports.vocabulary import CLIENT_CRASHED, UNKNOWN


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted:
    """One accepted divergence: this area on this spec id breaks this guarantee, for this reason,
    the way its signature says (reports/signatures.py; None: an entry older than signatures), on
    runs of this target and this client (None: any)."""

    area: str
    spec_id: str
    guarantee: str
    reason: str
    evidence: str
    target: str | None = None
    client: str | None = None  # a client's name as its driver names itself (`rust`), or `name==version`
    signature: dict | None = None

    def for_client(self, run: dict) -> bool:
        """Whether the entry applies to a run's client (summary.json's `run.client`: name, version)."""
        return client_matches(self.client, run)


def client_matches(client: str | None, run: dict) -> bool:
    """Whether an entry's `client` (None: any; `name` or `name==version`) is the run's."""
    if client is None:
        return True
    name, _, version = client.partition("==")
    ran = run.get("client") or {}
    return ran.get("name") == name and (not version or str(ran.get("version")) == version)


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownCrash:
    """A client crash a project accepts: in this area on this spec id the client's process died,
    and the crash's record (its signal and the end of its log) contains `log`, a client bug's own
    line; on runs of this target and this client (None: any). Such a cell stays unknown in the
    report (nothing was decided about the broker), but does not fail the gate."""

    area: str
    spec_id: str
    log: str
    reason: str
    evidence: str
    target: str | None = None
    client: str | None = None

    def for_client(self, run: dict) -> bool:
        return client_matches(self.client, run)

    def matches(self, result: Result) -> bool:
        return (result.area, result.spec_id) == (self.area, self.spec_id) and result.outcome == UNKNOWN \
            and result.reason_kind == CLIENT_CRASHED and self.log in (result.reason or "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    accepted: tuple[Accepted, ...] = ()
    crashes: tuple[KnownCrash, ...] = ()
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Divergence:
    """A broken guarantee the baseline does not accept; `why` says so when its cell has an accepted
    divergence of another signature."""

    result: Result
    guarantee: str
    detail: str
    why: str = "not in the baseline"


@dataclass(frozen=True, slots=True, kw_only=True)
class Judgement:
    summary: Summary
    new: tuple[Divergence, ...]
    accepted: tuple[tuple[Accepted, Result], ...]
    fixed: tuple[tuple[Accepted, Result], ...]
    unknown: tuple[Result, ...]  # those a known crash accounts for are in `crashed`
    unconfirmed: tuple[tuple[Accepted, str], ...]  # baseline entries this run says nothing about, and why
    crashed: tuple[tuple[KnownCrash, Result], ...] = ()  # unknown cells whose client crashed as the baseline says
    other_clients: tuple[Accepted, ...] = ()  # entries for a client this run did not drive: not in this run
    unsigned: tuple[Accepted, ...] = ()  # entries without a signature that accepted a failure of this run
    nothing_checked: str | None = None  # why the run decided nothing: never a pass, whatever is allowed
    # Failed cells that passed when run once more (the gate's --rerun): reported, not failing.
    not_repeated: tuple[Result, ...] = ()
    allow_unknown: bool = False
    fail_on_fixed: bool = False

    @property
    def passed(self) -> bool:
        return not (self.nothing_checked or self.new or (self.unknown and not self.allow_unknown)
                    or (self.fixed and self.fail_on_fixed))


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """One area on one spec id in two runs: `a` and `b` are None where that run did not have it."""

    area: str
    spec_id: str
    a: Result | None
    b: Result | None

    @property
    def differs(self) -> bool:
        return self.a is not None and self.b is not None and verdict_of(self.a) != verdict_of(self.b)

    @property
    def in_one_run(self) -> bool:
        return (self.a is None) != (self.b is None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    a: Summary
    b: Summary
    labels: tuple[str, str]
    cells: tuple[Cell, ...]

    @property
    def runs(self) -> tuple[Summary, Summary]:
        return self.a, self.b

    @property
    def differing(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.differs)

    @property
    def in_one_run(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.in_one_run)


def verdict_of(result: Result | None) -> tuple[str, str | None, tuple[str, ...]] | None:
    """What a comparison compares: the outcome, an unknown's kind, and the broken guarantees."""
    return None if result is None else (result.outcome, result.reason_kind, tuple(sorted(result.guarantees)))
