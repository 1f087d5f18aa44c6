"""The guarantees table: for each guarantee of model/guarantees.py, everything that carries its name.

    python -m reports.guarantees           # (re)writes GUARANTEES.md and the README's guarantees block
    python -m reports.guarantees --check   # exit 1 when either is out of date

Exit status 2 (both ways) when a layer the table reads is missing or malformed, or a cell is empty
without a reason; the message names it.

Per guarantee: its promise, its model rules (`model.checks.RULES`), its proofs
(`model.smt.catalog.PROOFS`, or `NO_PROOF_BECAUSE`), the conformance checks that can break it
(`Check.guarantees` of suites/conformance/catalog.py), the faulty targets that break it
(`Fault.breaks`, fixtures/targets/faulty.py), the broker tests that show it (their
`@pytest.mark.guarantee`, read from the source with `ast`: nothing is run), its known divergences
(the `### KD-<n>` entries of KNOWN_DIVERGENCES.md naming it), the mutants of the model's rule code
its checks killed and let survive in the latest recorded sample (reports/mutation-score.json) and
its row in a run's report. A cell
left empty needs a reason: from `NO_PROOF_BECAUSE`, or from `EMPTY_BECAUSE` here. This is the
one module of reports/ that reads suites/ and fixtures/: the table spans every layer.

The README holds the short form between `<!-- guarantees:begin -->` and `<!-- guarantees:end -->`.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from fixtures.kit import module
from model.guarantees import Guarantee

ROOT = Path(__file__).resolve().parents[1]
TABLE = "GUARANTEES.md"
README = "README.md"
BEGIN, END = "<!-- guarantees:begin -->", "<!-- guarantees:end -->"
DIVERGENCES = "KNOWN_DIVERGENCES.md"
MUTATION = "reports/mutation-score.json"  # suites/quality/mutation.py --record
BROKER_TESTS = ("suites/broker/*.py", "suites/model/test_fidelity_broker.py", "suites/invariants/test_fidelity.py")
MUST_MARK = ("suites/broker/*.py", "suites/model/test_fidelity_broker.py")  # every test there names its guarantee

RULES, PROOFS, CHECKS, FAULTS, BROKER, DIVERGED = (
    "Model rules", "Proofs", "Conformance checks", "Faulty targets", "Broker tests", "Known divergences")
COLUMNS = (RULES, PROOFS, CHECKS, FAULTS, BROKER, DIVERGED)

# Cells empty by design, and why. Proofs give their own reason (model.smt.catalog.NO_PROOF_BECAUSE);
# a guarantee no entry of KNOWN_DIVERGENCES.md names has none known.
EMPTY_BECAUSE: dict[str, dict[Guarantee, str]] = {
    BROKER: {
        Guarantee.NO_PHANTOM: "No broker behaviour to pin down: every conformance run against the broker checks "
                              "it on each delivery.",
        Guarantee.EXCLUSIVE: "ConsumerBusy is checked by the exclusive_and_failover conformance check against the "
                             "broker; no question of the model's about it is open.",
    },
}
NO_DIVERGENCE = f"No entry of {DIVERGENCES} names it."


class MissingInterface(RuntimeError):
    """A layer the table reads is not there (yet): the message names it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    text: str
    href: str
    note: str = ""

    def markdown(self) -> str:
        return f"[{self.text}]({self.href})" + (f": {self.note}" if self.note else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Divergence:
    number: int
    title: str
    anchor: str
    guarantees: tuple[str, ...]
    seen_on: str


# -- reading each layer -----------------------------------------------------------------------------
def _where(obj: object) -> str:
    path = Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT)
    return f"{path.as_posix()}#L{inspect.getsourcelines(obj)[1]}"


def _attribute(module: str, name: str, owner: str) -> object:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        raise MissingInterface(f"{module}.{name} is missing ({owner} writes it): {error}") from None


def model_rules() -> dict[Guarantee, list[Link]]:
    rules = _attribute(module("model.checks"), "RULES", "the model's checks")
    return {g: [Link(text=f"`{fn.__name__}`", href=_where(fn)) for fn in rules.get(g, ())] for g in Guarantee}


def proofs() -> tuple[dict[Guarantee, list[Link]], dict[Guarantee, str]]:
    found = _attribute(module("model.smt.catalog"), "PROOFS", "the proof catalog")
    because = _attribute(module("model.smt.catalog"), "NO_PROOF_BECAUSE", "the proof catalog")
    links: dict[Guarantee, list[Link]] = {g: [] for g in Guarantee}
    for proof in found:
        links[proof.guarantee].append(Link(text=f"`{proof.name}`", href=_where(proof.prove), note=proof.doc))
    both = sorted(g.value for g in Guarantee if links[g] and g in because)
    if both:
        raise MissingInterface(f"model.smt.catalog: {', '.join(both)} have proofs and a reason for having none")
    return links, dict(because)


def conformance_checks() -> dict[Guarantee, list[Link]]:
    from suites.conformance.catalog import CHECKS as catalog

    links: dict[Guarantee, list[Link]] = {g: [] for g in Guarantee}
    for check in catalog:
        path = f"suites/conformance/test_{check.area}.py"
        line = _def_line(ROOT / path, f"test_{check.area}")
        for guarantee in check.guarantees:
            links[guarantee].append(Link(text=f"`{check.area}`", href=f"{path}#L{line}" if line else path,
                                         note=", ".join(check.specs) + (" (slow)" if check.slow else "")))
    return links


def faulty_targets() -> dict[Guarantee, list[Link]]:
    from fixtures.targets.faulty import FAULTS as faults

    links: dict[Guarantee, list[Link]] = {g: [] for g in Guarantee}
    for fault in faults:
        for guarantee in fault.breaks:
            links[guarantee].append(Link(text=f"`{fault.name}`", href=_where(fault.target),
                                         note=(inspect.getdoc(fault.target) or "").split("\n\n")[0]))
    return links


def _def_line(path: Path, name: str) -> int | None:
    tree = ast.parse(path.read_text())
    return next((n.lineno for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _guarantee_marks(function: ast.FunctionDef) -> list[str] | None:
    """The values of a `@pytest.mark.guarantee(...)` decorator, or None without one."""
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.guarantee":
            return [a.value for a in decorator.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return None


def _test_files(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    return sorted({p for pattern in patterns for p in root.glob(pattern) if p.name.startswith("test_")})


def broker_tests(root: Path = ROOT) -> dict[Guarantee, list[Link]]:
    """The tests under BROKER_TESTS by the guarantees they mark; each test under MUST_MARK must mark one."""
    links: dict[Guarantee, list[Link]] = {g: [] for g in Guarantee}
    must = set(_test_files(root, MUST_MARK))
    problems = []
    for path in _test_files(root, BROKER_TESTS):
        relative = path.relative_to(root).as_posix()
        for node in ast.parse(path.read_text()).body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            marks = _guarantee_marks(node)
            if marks is None:
                if path in must:
                    problems.append(f"{relative}::{node.name} has no @pytest.mark.guarantee")
                continue
            unknown = [m for m in marks if m not in {g.value for g in Guarantee}] or ([] if marks else ["nothing"])
            if unknown:
                problems.append(f"{relative}::{node.name} marks {', '.join(unknown)}, not a guarantee")
            line = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            for mark in marks:
                if mark in {g.value for g in Guarantee}:
                    links[Guarantee(mark)].append(Link(text=f"`{node.name}`", href=f"{relative}#L{line}"))
    if problems:
        raise MissingInterface("broker tests: " + "; ".join(problems))
    return links


ENTRY = re.compile(r"^### KD-(\d+): (.+)$")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def known_divergences(text: str) -> list[Divergence]:
    """The `### KD-<n>: <title>` entries, each with its `- **Guarantee:**` and `- **Seen on:**` lines."""
    entries, problems = [], []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        found = ENTRY.match(line)
        if not found:
            continue
        body = []
        for following in lines[i + 1:]:
            if following.startswith("#"):
                break
            body.append(following)
        guarantee = next((b for b in body if b.startswith("- **Guarantee:**")), None)
        seen_on = next((b for b in body if b.startswith("- **Seen on:**")), None)
        name = f"KD-{found.group(1)}"
        values = re.findall(r"`([^`]+)`", guarantee or "")
        if guarantee is None or not values or seen_on is None:
            problems.append(f"{name} has no '- **Guarantee:** `<value>`' or no '- **Seen on:**' line")
            continue
        unknown = [v for v in values if v not in {g.value for g in Guarantee}]
        if unknown:
            problems.append(f"{name} names {', '.join(unknown)}, not a guarantee")
        entries.append(Divergence(number=int(found.group(1)), title=found.group(2).strip(),
                                  anchor=slug(line.removeprefix("### ")), guarantees=tuple(values),
                                  seen_on=seen_on.removeprefix("- **Seen on:**").strip()))
    if not entries:
        problems.append("no '### KD-<n>: <title>' entries")
    if problems:
        raise MissingInterface(f"{DIVERGENCES}: " + "; ".join(problems))
    return entries


def divergences() -> dict[Guarantee, list[Link]]:
    links: dict[Guarantee, list[Link]] = {g: [] for g in Guarantee}
    for entry in sorted(known_divergences((ROOT / DIVERGENCES).read_text()), key=lambda e: e.number):
        for value in entry.guarantees:
            if value in {g.value for g in Guarantee}:
                links[Guarantee(value)].append(Link(text=f"KD-{entry.number}: {entry.title.replace('`', '')}",
                                                    href=f"{DIVERGENCES}#{entry.anchor}",
                                                    note=f"seen on {entry.seen_on}"))
    return links


@dataclass(frozen=True, slots=True, kw_only=True)
class MutationScore:
    """The latest recorded sample of mutants (suites/quality/mutation.py --record)."""

    commit: str
    date: str
    command: str
    killed: int
    survived: int
    per_guarantee: dict[str, dict[str, int]]  # guarantee (or what else told a mutant apart) -> outcome -> count

    def of(self, guarantee: Guarantee) -> tuple[int, int]:
        counts = self.per_guarantee.get(guarantee.value, {})
        return counts.get("killed", 0), counts.get("survived", 0)

    def summary(self) -> str:
        score = f" ({self.killed / (self.killed + self.survived):.0%})" if self.killed + self.survived else ""
        return (f"of the latest recorded sample of mutants of the model's rule code (commit {self.commit}, "
                f"{self.date}; `{self.command}`), {self.killed} of {self.killed + self.survived} were killed{score}, "
                "the mutants the model allows or no program tells apart set aside; a mutant counts under the guarantee its violation names, a survivor under "
                "the one the checker names on the shortest program that tells it apart")


def mutation_score(root: Path = ROOT) -> MutationScore:
    path = root / MUTATION
    try:
        record = json.loads(path.read_text())
        return MutationScore(commit=record["commit"], date=record["date"],
                             command=record["command"],
                             killed=record["counts"]["killed"], survived=record["counts"]["survived"],
                             per_guarantee={g: dict(c) for g, c in record["per_guarantee"].items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise MissingInterface(f"{MUTATION} is missing or malformed ({type(error).__name__}: {error}); write it "
                               "with python -m suites.quality.mutation --sample 200 --limit 62 --seed 0 "
                               f"--record {MUTATION}") from None


def _mutants_cell(score: MutationScore, guarantee: Guarantee) -> str:
    killed, survived = score.of(guarantee)
    return f"{killed} of {killed + survived}" if killed + survived else "–"


# -- the table ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    guarantee: Guarantee
    cells: dict[str, list[Link]]
    empty_because: dict[str, str]  # column -> why the cell is empty
    spec_ids: tuple[str, ...]  # where the report's guarantee view has cells for it


def rows() -> list[Row]:
    """Every guarantee with its cells; a `MissingInterface` names what is missing or wrong."""
    from suites.conformance.catalog import CHECKS as catalog

    rules, (proved, no_proof), checks = model_rules(), proofs(), conformance_checks()
    faults, broker, diverged = faulty_targets(), broker_tests(), divergences()
    table, unexplained = [], []
    for g in Guarantee:
        cells = {RULES: rules[g], PROOFS: proved[g], CHECKS: checks[g], FAULTS: faults[g], BROKER: broker[g],
                 DIVERGED: diverged[g]}
        reasons = {PROOFS: no_proof.get(g), DIVERGED: NO_DIVERGENCE,
                   **{column: why[g] for column, why in EMPTY_BECAUSE.items() if g in why}}
        empty = {column: reasons.get(column) for column, links in cells.items() if not links}
        unexplained += [f"{g.value}: {column}" for column, why in empty.items() if not why]
        spec_ids = tuple(dict.fromkeys(s for c in catalog if g in c.guarantees for s in c.specs))
        table.append(Row(guarantee=g, cells=cells, empty_because={c: w for c, w in empty.items() if w},
                         spec_ids=spec_ids))
    if unexplained:
        raise MissingInterface("empty cells without a reason (give one in reports/guarantees.py EMPTY_BECAUSE, or "
                               "model.smt.catalog.NO_PROOF_BECAUSE for proofs): " + "; ".join(unexplained))
    return table


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render_table(table: list[Row], score: MutationScore) -> str:
    lines = ["# Guarantees", "",
             "Generated by `python -m reports.guarantees` from model/guarantees.py, model/checks.py,",
             "model/smt/catalog.py, suites/conformance/catalog.py, fixtures/targets/faulty.py, the broker",
             f"tests' `@pytest.mark.guarantee` and {DIVERGENCES}; suites/reports/test_guarantees_table.py",
             "fails when it is out of date. Edit those, not this file.", "",
             f"Mutants killed: {score.summary()}.", "",
             "| guarantee | " + " | ".join(c.lower() for c in COLUMNS) + " | mutants killed |",
             "|---|" + "---:|" * (len(COLUMNS) + 1)]
    for row in table:
        counts = " | ".join(str(len(row.cells[c])) for c in COLUMNS)
        lines.append(f"| [`{row.guarantee.value}`](#{row.guarantee.value}) | {counts} | "
                     f"{_mutants_cell(score, row.guarantee)} |")
    for row in table:
        g = row.guarantee
        lines += ["", f"## {g.value}", "", f"> {g.promise}", ""]
        for column in COLUMNS:
            links = row.cells[column]
            if links:
                lines += [f"**{column}**", ""] + [f"- {_one_line(link.markdown())}" for link in links] + [""]
            else:
                lines += [f"**{column}**: none. {_one_line(row.empty_because[column])}", ""]
        killed, survived = score.of(g)
        lines += [f"**Mutants** ({MUTATION}, commit {score.commit}): "
                  + (f"{killed} killed, {survived} survived." if killed + survived else
                     "none of the sample's mutants was told apart by a violation of it."), ""]
        lines += ["**Report row**", "",
                  f"- `report.html#g-{g.value}`: the row of the report's guarantee view (reports/html.py), "
                  f"and `guarantee_matrix[\"{g.value}\"]` in `summary.json` (reports/README.md)",
                  f"- its cells: {', '.join(row.spec_ids)}"]
    return "\n".join(lines).rstrip() + "\n"


def render_readme_block(table: list[Row], score: MutationScore) -> str:
    lines = [BEGIN, "| guarantee | promise | rules | proofs | checks | faulty targets | mutants killed |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for row in table:
        g = row.guarantee
        counts = " | ".join(str(len(row.cells[c])) for c in (RULES, PROOFS, CHECKS, FAULTS))
        lines.append(f"| [`{g.value}`]({TABLE}#{g.value}) | {_one_line(g.promise)} | {counts} | "
                     f"{_mutants_cell(score, g)} |")
    lines += ["", f"Mutants killed: {score.summary()}."]
    return "\n".join(lines + [END])


def with_readme_block(readme: str, block: str) -> str:
    begin, end = readme.find(BEGIN), readme.find(END)
    if begin < 0 or end < begin:
        raise MissingInterface(f"{README} has no '{BEGIN}' ... '{END}' block")
    return readme[:begin] + block + readme[end + len(END):]


def expected(folder: Path = ROOT) -> dict[str, str]:
    """The generated files' whole text, by name (the README's text around its block from `folder`)."""
    table, score = rows(), mutation_score()
    return {TABLE: render_table(table, score),
            README: with_readme_block((folder / README).read_text(), render_readme_block(table, score))}


def stale(folder: Path = ROOT) -> list[str]:
    """The generated files in `folder` that differ from what the sources give."""
    return [name for name, text in expected(folder).items()
            if not (folder / name).is_file() or (folder / name).read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.guarantees", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the files are up to date")
    args = parser.parse_args(argv)
    try:
        if args.check:
            out_of_date = stale()
            for name in out_of_date:
                print(f"{name} is out of date: run python -m reports.guarantees", file=sys.stderr)
            return 1 if out_of_date else 0
        for name, text in expected().items():
            (ROOT / name).write_text(text)
            print(ROOT / name)
    except MissingInterface as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
