"""Which parts of the model's rules the broker's own behaviour pins down: its mutants as the checker.

    python -m suites.quality.evidence [--observations DIR ...] [--sample N] [--jobs 2] [--out DIR]

The mutation score (suites/quality/mutation.py) runs each mutant of the rule code as a target:
it measures what the conformance catalog catches. It cannot measure the other side: a mutant that
answers as a broker the model allows is not a miss of the catalog, and a model that allows too
much, or too little, is only shown wrong by what a broker or a fault did. So here each mutant
replaces the model as the checker, and replays what was observed:

- **broker observations**: stored broker histories the model accepts (suites/replay/histories,
  `broker-*`) and the programs of conformance runs against a real broker (`--histories` of a
  `--target pulsar` run: every program there passed), replayed without the final drain check.
  A mutant that refuses one is stricter than the broker: that history shows the rule.
- **known divergences**: stored broker histories the model refuses (a broker bug it reports). A
  mutant that accepts one would hide it.
- **faults**: the stored histories of the faulty targets, which the model refuses. A mutant that
  accepts one is more permissive than the model in a way a real fault shows.

A mutant none of these tell from the model is **unevidenced**: rule code that neither anything
the broker was seen to do nor any fault pins down. Unevidenced is not wrong, but it is where a rule
rests on reading alone (its comment should name a test), and where a new observation is worth
recording. Writes evidence.json and evidence.md to `--out`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from model import nondet
from model.history import MalformedEvent, completion_of, from_json_line, op_of, spec_of
from suites.quality.mutator import MODEL, RULE_FILES, Mutant, build, load, mutants
from suites.replay import stored

STORED = Path(__file__).resolve().parents[1] / "replay" / "histories"
BROKER, DIVERGENCE, FAULT = "broker", "known divergence", "fault"
SHOWN_BY_BROKER, HIDES_DIVERGENCE, SHOWN_BY_FAULT = "shown by the broker", "hides a divergence", "shown by a fault"
UNEVIDENCED, NOT_VIABLE = "unevidenced", "not viable"
OUTCOMES = (SHOWN_BY_BROKER, HIDES_DIVERGENCE, SHOWN_BY_FAULT, UNEVIDENCED, NOT_VIABLE)
# The checker's rule code: the step functions (the ideal broker of model/simulate.py checks nothing).
CHECKER_FILES = tuple(f for f in RULE_FILES if f.startswith("transitions/"))
TIMEOUT_S = 120  # CPU seconds per mutant: a few hundred histories replay in well under that


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    name: str
    kind: str  # BROKER, DIVERGENCE or FAULT
    spec: object
    history: tuple
    drained: object  # as stored.Expectation.drained; False for a recorded program
    expected: str | None  # None: accepted; else the guarantee the model names


def stored_observations(folder: Path = STORED) -> list[Observation]:
    """The stored histories: a broker's (`broker-*`, or found on Pulsar) as observations or known
    divergences, the faulty targets' as faults; the model target's own are left out."""
    found = []
    for path in sorted(folder.glob("*.jsonl")):
        history = stored.load(path)
        origin = json.loads(stored.sidecar_of(path).read_text()).get("found_by", "")
        broker = path.name.startswith("broker-") or origin.startswith("Pulsar")
        accepted = history.expectation.expect == "ok"
        if not broker and (accepted or "faulty" not in origin):
            continue
        kind = (BROKER if accepted else DIVERGENCE) if broker else FAULT
        found.append(Observation(name=path.name, kind=kind, spec=history.spec, history=history.history,
                                 drained=history.expectation.drained,
                                 expected=None if accepted else history.expectation.guarantee.value))
    return found


def recorded_observations(folders: list[Path], sample: int | None, seed: int) -> list[Observation]:
    """Programs recorded against a real broker (a run's `--histories`), those the model accepts
    without the drain check: a drain's end is not in the history, the safety checks all are."""
    paths = []
    for folder in folders:  # sampled per folder: a small folder of targeted programs is kept whole
        found = sorted(folder.rglob("*.jsonl"))
        paths += sorted(random.Random(seed).sample(found, sample)) if sample is not None and len(found) > sample \
            else found
    found = []
    for path in paths:
        try:
            events = [from_json_line(line) for line in path.read_text().splitlines() if line.strip()]
        except (MalformedEvent, ValueError) as error:
            raise SystemExit(f"error: {path}: not a recorded history ({error})") from None
        if not events:
            continue
        spec, history = spec_of(events[0].spec), tuple((op_of(e), completion_of(e)) for e in events)
        if _verdict(nondet, spec, history, False) is None:
            found.append(Observation(name=str(path), kind=BROKER, spec=spec, history=history, drained=False,
                                     expected=None))
    return found


def _verdict(checker, spec, history, drained) -> str | None:
    """What `checker` (a nondet module) finds: None if it accepts, else the guarantee it names."""
    verdict = checker.start(spec)
    for op, completion in history:
        verdict = checker.apply(verdict, op, completion)
        if verdict.violation is not None:
            return verdict.violation.guarantee.value
    if drained:
        verdict = checker.check_drained(verdict, drained)
    return verdict.violation.guarantee.value if verdict.violation is not None else None


def judge(checker, observations: list[Observation]) -> dict:
    """The first observation of each kind on which `checker` differs from the model's verdict."""
    told: dict[str, dict] = {}
    for observation in observations:
        outcome = {BROKER: SHOWN_BY_BROKER, DIVERGENCE: HIDES_DIVERGENCE, FAULT: SHOWN_BY_FAULT}[observation.kind]
        if outcome in told:
            continue
        try:
            got = _verdict(checker, observation.spec, observation.history, observation.drained)
        except Exception as error:  # noqa: BLE001  (a checker that crashes on it refuses it)
            got = f"crash: {type(error).__name__}"
        if got != observation.expected:
            told[outcome] = {"history": observation.name, "model": observation.expected or "accepts",
                             "mutant": got or "accepts"}
    return told


def run_mutant(mutant: Mutant, root: Path, observations: list[Observation], model: Path = MODEL) -> dict:
    record = _bare(mutant)
    try:
        _, checker, _ = load(build(mutant, root, model), root)
    except Exception as error:  # noqa: BLE001
        return record | {"outcome": NOT_VIABLE, "error": f"{type(error).__name__}: {error}"[:300]}
    told = judge(checker, observations)
    first = next((o for o in OUTCOMES if o in told), UNEVIDENCED)
    return record | {"outcome": first, "told": told}


def _bare(mutant: Mutant) -> dict:
    return {"id": mutant.id, "number": mutant.number, "module": mutant.module, "function": mutant.function,
            "line": mutant.line, "operator": mutant.operator, "original": mutant.original,
            "mutated": mutant.mutated, "rule_guarantees": list(mutant.rule_guarantees)}


_OBSERVATIONS: list[Observation] = []  # made once in the parent, shared by the forked workers


def _worker(mutant: Mutant, root: Path, send, model: Path) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CPU, (TIMEOUT_S, TIMEOUT_S + 5))
    try:
        send.send(run_mutant(mutant, root, _OBSERVATIONS, model))
    finally:
        shutil.rmtree(root / mutant.package, ignore_errors=True)


def run_all(chosen: list[Mutant], root: Path, model: Path, jobs: int, progress=print) -> list[dict]:
    """Each mutant in a forked worker of its own (a mutant may loop), `jobs` at a time."""
    context = multiprocessing.get_context("fork")
    todo, running, results = list(chosen), {}, []
    try:
        while todo or running:
            while todo and len(running) < jobs:
                mutant = todo.pop(0)
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_worker, args=(mutant, root, send, model), daemon=True)
                process.start()
                send.close()
                running[mutant.number] = (mutant, process, receive)
            time.sleep(0.02)
            for number, (mutant, process, receive) in list(running.items()):
                record = receive.recv() if receive.poll() else None
                if record is None and process.is_alive():
                    continue
                process.join()
                if record is None:
                    record = _bare(mutant) | {"outcome": NOT_VIABLE, "error": f"worker exited {process.exitcode}"}
                del running[number]
                results.append(record)
                progress(f"[{len(results)}/{len(chosen)}] {record['outcome']:20s} {mutant.id[:110]}")
    except KeyboardInterrupt:
        progress(f"interrupted: {len(results)} of {len(chosen)} mutants done")
        for _, process, _ in running.values():
            process.kill()
    return sorted(results, key=lambda r: r["number"])


def summarize(results: list[dict], observations: list[Observation], meta: dict) -> dict:
    per_function: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        per_function[f"{r['module']}.{r['function']}"][r["outcome"]] += 1
    viable = [r for r in results if r["outcome"] != NOT_VIABLE]
    return {**meta, "observations": dict(Counter(o.kind for o in observations)),
            "counts": {o: sum(1 for r in results if r["outcome"] == o) for o in OUTCOMES},
            "evidenced": (sum(1 for r in viable if r["outcome"] != UNEVIDENCED) / len(viable)) if viable else None,
            "per_function": {f: dict(c) for f, c in sorted(per_function.items())}, "mutants": results}


def markdown(report: dict) -> str:
    counts, kinds = report["counts"], report["observations"]
    lines = ["# Evidence for the model's rules: its mutants as the checker", "",
             f"{report['date']}, commit {report['commit']}; command: `{report['command']}`", "",
             f"Observations: {kinds.get(BROKER, 0)} broker histories the model accepts, "
             f"{kinds.get(DIVERGENCE, 0)} known divergences, {kinds.get(FAULT, 0)} faults' histories. "
             f"Mutants: {report['mutants_run']} of {report['mutants_total']}.", "",
             "| outcome (the first that applies) | mutants |", "|---|---|"]
    lines += [f"| {o} | {counts[o]} |" for o in OUTCOMES]
    if report["evidenced"] is not None:
        lines += ["", f"**Evidenced: {report['evidenced']:.1%} of the viable mutants** are told from the model by "
                      "something a broker or a fault did."]
    lines += ["", "## Per rule function", "", "| function | " + " | ".join(OUTCOMES) + " |",
              "|---|" + "---|" * len(OUTCOMES)]
    lines += [f"| `{f}` | " + " | ".join(str(c.get(o, 0)) for o in OUTCOMES) + " |"
              for f, c in report["per_function"].items()]
    lines += ["", "## Unevidenced mutants", ""]
    lines += [f"- `{r['id']}`" for r in report["mutants"] if r["outcome"] == UNEVIDENCED]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m suites.quality.evidence", description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=Path, action="append", default=[], metavar="DIR",
                        help="a folder of histories recorded against a real broker (a run's --histories); repeatable")
    parser.add_argument("--histories-sample", type=int, default=300, metavar="N",
                        help="replay at most N recorded histories of each folder, drawn at random (default %(default)s)")
    parser.add_argument("--sample", type=int, default=None, help="run a random sample of this many mutants")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("reports/out/evidence"))
    args = parser.parse_args(argv)
    for folder in args.observations:
        if not folder.is_dir():
            parser.error(f"--observations {folder}: not a folder")
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    _OBSERVATIONS[:] = stored_observations() + recorded_observations(args.observations, args.histories_sample,
                                                                     args.seed)
    root = Path(tempfile.mkdtemp(prefix="ack-evidence-"))
    try:
        snapshot = root / "model-snapshot"
        shutil.copytree(MODEL, snapshot, ignore=shutil.ignore_patterns("__pycache__"))
        every = mutants(CHECKER_FILES, model=snapshot)
        chosen = random.Random(args.seed).sample(every, min(args.sample or len(every), len(every)))
        results = run_all(chosen, root, snapshot, args.jobs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=MODEL.parent).stdout.strip() or "unknown"
    report = summarize(results, _OBSERVATIONS, {
        "date": date.today().isoformat(), "commit": commit, "mutants_total": len(every), "mutants_run": len(results),
        "command": "python -m suites.quality.evidence " + " ".join(argv)})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "evidence.json").write_text(json.dumps(report, indent=1, default=str))
    (args.out / "evidence.md").write_text(markdown(report))
    print(markdown(report).split("## Per rule function")[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
