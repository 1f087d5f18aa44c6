"""The allowed mutants put to the real broker: does it ever answer as the mutant does?

    python -m suites.quality.allowed [--report reports/out/mutation/mutation.json] [--runs 3]
        [--client python|java|go|rust] [--service-url URL --admin-url URL] [--out reports/out/allowed]

An allowed mutant (suites/quality/mutation.py) answers a program otherwise than the model's ideal
broker, and the checker accepts its answer: it takes a choice the model leaves open. Whether the
model is right to leave it open is a question for the broker, so here each allowed mutant's
distinguishing program (rebuilt from the report's seed: the model and catalog must be those the
report ran on) is run `--runs` times on a real broker through a client, in lock-step with the
checker. Each run's answer at the step that told the mutant apart is:

- the mutant's: the broker takes that choice too, and the model is right to allow it;
- the model's: the ideal broker's choice;
- another: an answer neither gives, which the checker accepted;
- another path: an earlier answer already differed from the ideal broker's, so the run did not
  reach the state the mutant was told apart in;
- refused: the checker refused the broker's answers (a false alarm, or a broker or client bug).

A mutant whose runs all gave the model's answer marks where the model may allow more than the
broker does. It is a candidate for a stricter rule, to be shown by a broker test first: a few runs
cannot show that the broker never takes the other choice. A refused run is reported with the
checker's words. Writes allowed.json and allowed.md to `--out`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fixtures.targets.lockstep import ConformanceFailure
from fixtures.targets.mutant_target import MutantTarget
from model import ops as o
from suites.quality import equivalence
from suites.quality.mutator import build, load, mutants

MUTANTS, MODELS, OTHER, ANOTHER_PATH, REFUSED = "the mutant's", "the model's", "another", "another path", "refused"
ANSWERS = (MUTANTS, MODELS, OTHER, ANOTHER_PATH, REFUSED)
# Ops whose program needs a broker of its own: behind the suite's proxy, or one the run may stop.
OWN_BROKER = (o.CutNetwork, o.StallNetwork, o.SlowNetwork, o.Restart, o.Crash)


@dataclass(frozen=True, slots=True)
class Case:
    """An allowed mutant's distinguishing program, with both answers at its last step."""

    mutant_id: str
    spec_name: str
    program: equivalence.Program
    length: int
    mutants_answer: o.Completion | str


def seen(completion: o.Completion) -> tuple:
    """What a run is compared on: outcome and observable value (never the time: the broker's
    milliseconds are its own); a send's value is the ids the target numbered, not an answer."""
    shown = equivalence.observable(completion)
    return completion.outcome, None if isinstance(shown.value, tuple) and not _cursors(shown.value) else shown.value


def _shows_nothing(op: o.Op, got: o.Completion) -> bool:
    """A cursor read the broker could not answer (no subscription yet, an admin call that failed):
    it proves nothing, and the program goes on as the model's did."""
    return isinstance(op, o.ReadCursor) and got.value is None


def _cursors(value: tuple) -> bool:
    return bool(value) and not isinstance(value[0], o.MessageId)


def answer_of(history: list[tuple[o.Op, o.Completion]], case: Case) -> tuple[str, int | None]:
    """Which answer a run gave at the distinguishing step, and the step an earlier answer differed
    at (another path), if one did."""
    expected = case.program.trace[:case.length]
    for step, ((op, model), (_, got)) in enumerate(zip(expected[:-1], history[:case.length - 1], strict=True)):
        if seen(model) != seen(got) and not _shows_nothing(op, got):
            return ANOTHER_PATH, step
    last = seen(history[case.length - 1][1])
    if last == seen(expected[-1][1]):
        return MODELS, None
    if isinstance(case.mutants_answer, o.Completion) and last == seen(case.mutants_answer):
        return MUTANTS, None
    return OTHER, None


def cases_of(report: dict, root: Path) -> list[Case]:
    """The report's allowed mutants, each with its program rebuilt and the mutant's answer made
    again; a report of another model or catalog is refused (its seeds would make other programs)."""
    allowed = [r for r in report["mutants"] if r["outcome"] == "allowed"]
    by_id = {m.id: m for m in mutants()}
    specs = list(equivalence.catalog_specs().items())
    cases = []
    for record in allowed:
        told = record["distinguishing"]
        mutant = by_id.get(record["id"])
        program = equivalence.program_of(told["seed"], specs)
        length = len(told["ops"])
        found = None
        if mutant is not None and program.spec_name == told["spec"] and \
                [repr(op) for op, _ in program.trace[:length]] == told["ops"]:
            modules = load(build(mutant, root), root)
            found = equivalence.first_difference(lambda: MutantTarget(*modules, name=f"mutant {mutant.id}"), program)
        if found is None or found.length != length:
            raise SystemExit(f"allowed: the report ran on commit {report.get('commit')}, whose model or catalog "
                             f"is not this one (mutant {record['id'][:60]!r} or its program differs): run it there")
        cases.append(Case(mutant_id=mutant.id, spec_name=told["spec"], program=program, length=length,
                          mutants_answer=found.got))
    return cases


def run_case(case: Case, runs: int, *, target: str = "pulsar", client: str | None = None,
             broker: tuple[str, str] | None = None, spec=None) -> dict:
    """The case's program run `runs` times on `target` (a broker's client, or any target the
    replay loads), each answer told apart; without `broker`, each run starts a broker of its own.
    `spec`: the case's spec as the client runs it (suites/machines.as_run), its own by default."""
    from fixtures.targets.replay import replay

    spec = case.program.spec if spec is None else spec
    ops = [op for op, _ in case.program.trace[:case.length]]
    shared = broker if broker and not any(isinstance(op, OWN_BROKER) for op in ops) else None
    answers, notes = Counter(), []
    for _ in range(runs):
        try:
            history = replay(target, spec, ops, client=client,
                             service_url=shared[0] if shared else None, admin_url=shared[1] if shared else None)
        except ConformanceFailure as failure:
            answers[REFUSED] += 1
            notes.append(f"refused: {failure.violation.guarantee.value}: {failure.violation.detail[:300]}")
            continue
        answer, step = answer_of(history, case)
        answers[answer] += 1
        if answer == ANOTHER_PATH:
            notes.append(f"step {step + 1} ({ops[step]!r}): the broker answered {history[step][1]!r}")
        elif answer == OTHER:
            notes.append(f"the broker answered {history[-1][1]!r}")
    return _record(case, runs, answers, notes, verdict(answers, runs))


def _record(case: Case, runs: int, answers: Counter, notes: list[str], said: str) -> dict:
    return {"mutant": case.mutant_id, "spec": case.spec_name, "seed": case.program.seed,
            "ops": [repr(op) for op, _ in case.program.trace[:case.length]],
            "model": repr(case.program.trace[case.length - 1][1]), "mutant_answer": repr(case.mutants_answer),
            "runs": runs, "answers": {a: answers[a] for a in ANSWERS}, "notes": notes, "verdict": said}


def verdict(answers: Counter, runs: int) -> str:
    if answers[REFUSED]:
        return "the checker refused the broker on this program: a false alarm or a broker bug (see the notes)"
    if answers[MUTANTS]:
        return "the broker answers as the mutant does: the model is right to allow it"
    if answers[MODELS] == runs:
        return "the broker gave the model's answer on every run: the model may allow more than the broker does"
    return "not decided on these runs (the broker took another path or answer)"


def markdown(results: list[dict], meta: dict) -> str:
    lines = ["# The allowed mutants on the broker", "",
             f"Mutation report of commit {meta['commit']}; client {meta['client']}; {meta['runs']} runs a program.", "",
             "| mutant | spec | " + " | ".join(ANSWERS) + " | verdict |", "|---|---|" + "---|" * len(ANSWERS) + "---|"]
    lines += [f"| `{r['mutant'][:90]}` | {r['spec']} | " + " | ".join(str(r["answers"][a]) for a in ANSWERS)
              + f" | {r['verdict']} |" for r in results]
    for r in results:
        lines += ["", f"## `{r['mutant']}`", "", f"- program ({r['spec']}, seed {r['seed']}): `{'; '.join(r['ops'])}`",
                  f"- the model's answer: `{r['model']}`", f"- the mutant's answer: `{r['mutant_answer']}`"]
        lines += [f"- {note}" for note in r["notes"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites.quality.allowed", description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, default=Path("reports/out/mutation/mutation.json"),
                        help="a mutation run's mutation.json")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--client", default=None, help="the client under test (default: the Python client)")
    parser.add_argument("--service-url", default=None)
    parser.add_argument("--admin-url", default=None)
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="only the allowed mutants whose id contains TEXT (repeatable)")
    parser.add_argument("--out", type=Path, default=Path("reports/out/allowed"))
    args = parser.parse_args(argv)
    if bool(args.service_url) != bool(args.admin_url):
        parser.error("--service-url and --admin-url go together")
    if not args.report.is_file():
        parser.error(f"--report {args.report}: no such file (python -m suites.quality.mutation writes it)")
    try:
        report = json.loads(args.report.read_text())
    except json.JSONDecodeError as error:
        parser.error(f"--report {args.report}: not a mutation report ({error})")
    if not isinstance(report, dict) or not isinstance(report.get("mutants"), list):
        parser.error(f"--report {args.report}: not a mutation report (no list of mutants)")
    root = Path(tempfile.mkdtemp(prefix="allowed-"))
    try:
        cases = [c for c in cases_of(report, root) if not args.only or any(t in c.mutant_id for t in args.only)]
        if not cases:
            print("allowed: the report has no allowed mutant" + (" that --only names" if args.only else ""))
            return 0
        results = _run(cases, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    meta = {"commit": report.get("commit"), "client": args.client or "python", "runs": args.runs}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "allowed.json").write_text(json.dumps({**meta, "mutants": results}, indent=1))
    text = markdown(results, meta)
    (args.out / "allowed.md").write_text(text)
    print(text.split("\n## ")[0])
    return 0


def _run(cases: list[Case], args) -> list[dict]:
    if args.service_url:
        return _run_on(cases, args, (args.service_url, args.admin_url))
    from fixtures.targets.replay import _start_broker

    broker = _start_broker(None)
    try:
        return _run_on(cases, args, (broker.config.service_url, broker.config.admin_url))
    finally:
        broker.stop()
        shutil.rmtree(broker.config.home, ignore_errors=True)


def _run_on(cases: list[Case], args, address: tuple[str, str]) -> list[dict]:
    """Each case as the suite would run it with this client: not applicable when its check needs
    what the client's driver does not declare, else on the spec with the client's own rules."""
    from fixtures.targets.loader import load_target
    from suites.conformance.catalog import check
    from suites.machines import as_run

    probe = load_target("pulsar", service_url=address[0], admin_url=address[1], client=args.client)
    lacking = getattr(probe, "lacking", None)
    results = []
    try:
        for case in cases:
            kinds = check(case.spec_name.partition("[")[0]).kinds
            missing = lacking(kinds, case.program.spec) if callable(lacking) else []
            if missing:
                results.append(_record(case, 0, Counter(), [],
                                       f"not applicable for this client: it lacks {', '.join(missing)}"))
            else:
                results.append(run_case(case, args.runs, client=args.client, broker=address,
                                        spec=as_run(case.program.spec, probe)))
            print(f"{case.mutant_id[:80]}: {results[-1]['answers']} {results[-1]['verdict'][:60]}",
                  file=sys.stderr, flush=True)
    finally:
        probe.close()
    return results


if __name__ == "__main__":
    raise SystemExit(main())
