"""The mutation report: how many mechanically made faults of the model the conformance catalog catches.

    python -m suites.quality.mutation [--sample N [--limit K]] [--seed S] [--jobs 2] [--out reports/out/mutation]
    python -m suites.quality.mutation --only 'simulate.py:42:forget-field'   (the mutants whose id has it)

Every mutant of the model's rule code (suites/quality/mutator.py) is run as a target against the
whole catalog, check after check at the `ci` profile (suites/quality/catch.py), each in its own
worker process bounded by a timeout. The cells whose programs run the mutant's statement on the
model target go first (`--order reach`, the default: suites/quality/reach.py, measured once per run
before the workers start); `--order catalog` keeps the catalog's order for every mutant. Outcomes:
- killed: a check failed; the guarantee its violation names (or, when the checker refused the
  mutant's history as malformed, its completion times going back, that), the check, and the time
  to kill (finding and shrinking, as the faulty targets' quality test counts it);
- survived: every check passed and the checker refuses the mutant's answers on some random program
  that tells it from the model (the shortest such program is reported, with the guarantee the
  checker names for it): a gap of the catalog's programs;
- allowed: every check passed, and on every random program that tells the mutant from the model
  the checker accepts its answers: it answers as another broker the model allows, which no check
  can refuse (suites/quality/equivalence.py); set aside with that evidence (whether a real broker
  answers as the mutant does: suites/quality/allowed.py);
- equivalent: every check passed and no program of the equivalence run tells it apart
  (suites/quality/equivalence.py), set aside with that evidence;
- not viable: the mutant package does not import, the run crashed (an exception other than a
  conformance failure), or it ran past the timeout.
The score is killed / (killed + survived); the strict score counts the allowed as survivors too.
Writes mutation.json and mutation.md to `--out`; `--record reports/mutation-score.json` also keeps the
sample's score where the guarantees table (reports/guarantees.py) reads it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from datetime import date
from pathlib import Path

from fixtures.targets.mutant_target import MutantTarget
from suites.quality import equivalence
from suites.quality.catch import DRAIN_IDLE_MS, budgets, first_failure_of
from suites.quality.mutator import MODEL, Mutant, build, load, mutants
from suites.quality.reach import Reach, measure

KILLED, SURVIVED, ALLOWED, EQUIVALENT = "killed", "survived", "allowed", "equivalent"
NOT_IMPORTED, CRASHED, TIMED_OUT = "not viable: import", "not viable: crash", "not viable: timeout"
OUTCOMES = (KILLED, SURVIVED, ALLOWED, EQUIVALENT, NOT_IMPORTED, CRASHED, TIMED_OUT)
EQUIVALENCE_PROGRAMS = 3000
SNAPSHOT = "model-snapshot"
RECORD = "reports/mutation-score.json"  # the latest sample's score, kept in the repository (--record)
TIMEOUT_S = 300  # CPU seconds: a survivor's whole catalog and equivalence run take about 80

_PROGRAMS: list[equivalence.Program] = []  # made once in the parent, shared by the forked workers
_REACH: list[Reach] = []  # likewise: measured once, empty with --order catalog


def run_mutant(mutant: Mutant, root: Path, programs: list[equivalence.Program], checks=None,
               model: Path = MODEL, reach: Reach | None = None) -> dict:
    """Build, import and run one mutant (in the calling process): its outcome as a record. With
    `reach`, the cells that run the mutant's statement go first."""
    result = {"id": mutant.id, "number": mutant.number, "file": mutant.file, "module": mutant.module,
              "line": mutant.line, "operator": mutant.operator, "original": mutant.original,
              "mutated": mutant.mutated, "function": mutant.function, "rule_guarantees": list(mutant.rule_guarantees)}
    try:
        package = build(mutant, root, model)
        modules = load(package, root)
    except Exception as error:  # noqa: BLE001
        return result | {"outcome": NOT_IMPORTED, "error": _error(error)}

    def make() -> MutantTarget:
        return MutantTarget(*modules, name=f"mutant {mutant.id}")

    chosen = {"checks": checks} if checks is not None else {}
    first = reach.first(mutant.file, mutant.line, **chosen) if reach is not None else None
    started, cpu = time.perf_counter(), time.process_time()
    try:
        catch = first_failure_of(make, package, **chosen, first=first)
    except Exception as error:  # noqa: BLE001
        return result | {"outcome": CRASHED, "error": _error(error), "seconds": time.perf_counter() - started}
    seconds = time.perf_counter() - started
    result["cpu_seconds"] = time.process_time() - cpu
    if catch is not None:
        return result | {"outcome": KILLED, "seconds": seconds, "guarantee": catch.told, "by": catch.where,
                         "shrunk_to": catch.length}
    found = equivalence.distinguish(make, programs)
    if found is None:
        return result | {"outcome": EQUIVALENT, "seconds": seconds, "evidence": {
            "programs": len(programs), "steps": equivalence.PROGRAM_STEPS,
            "specs": sorted({p.spec_name for p in programs})}}
    program = found.program
    ops = [repr(op) for op, _ in program.trace[:found.length]]
    return result | {"outcome": ALLOWED if found.allowed else SURVIVED, "seconds": seconds,
                     "guarantee": found.refused_as, "told_apart": found.told_apart,
                     "distinguishing": {"spec": program.spec_name, "seed": program.seed, "ops": ops,
                                        "expected": repr(found.expected), "got": repr(found.got),
                                        "checker": (f"refuses it: {found.refused_as}: {found.refusal}"
                                                    if found.refused_as else found.refusal or
                                                    f"allows the mutant's answers on all {found.told_apart} "
                                                    "programs that tell it apart")}}


def _error(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}{where}"


def _worker(mutant: Mutant, root: Path, send, cpu_limit_s: float) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # The bound is CPU time (a hang spins), so that a machine shared with other work does not turn
    # slow mutants into timeouts; the parent's wall-clock bound is a backstop.
    resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_limit_s), int(cpu_limit_s) + 5))
    try:
        send.send(run_mutant(mutant, root, _PROGRAMS, model=root / SNAPSHOT, reach=_REACH[0] if _REACH else None))
    finally:
        shutil.rmtree(root / mutant.package, ignore_errors=True)


def run_all(chosen: list[Mutant], root: Path, jobs: int, timeout_s: float, log=None,
            progress=lambda line: print(line, flush=True)) -> list[dict]:
    """Each mutant in a forked worker of its own, `jobs` at a time, each bounded by `timeout_s` of
    CPU time (and ten times that of wall time); each built from `root`'s snapshot of the model.
    Interrupted (Ctrl-C), the results so far."""
    context = multiprocessing.get_context("fork")
    todo, running, results = list(chosen), {}, []
    try:
        while todo or running:
            while todo and len(running) < jobs:
                mutant = todo.pop(0)
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_worker, args=(mutant, root, send, timeout_s), daemon=True)
                process.start()
                send.close()
                running[mutant.number] = (mutant, process, receive, time.monotonic())
            time.sleep(0.05)
            for number, (mutant, process, receive, started) in list(running.items()):
                record = None
                if receive.poll():
                    try:
                        record = receive.recv()
                    except EOFError:
                        record = None
                if record is None and process.is_alive() and time.monotonic() - started < 10 * timeout_s:
                    continue
                if record is None:
                    process.kill()
                    process.join()
                    # Killed by its CPU limit (SIGXCPU) or by the wall-clock backstop: a timeout.
                    timed_out = process.exitcode in (-signal.SIGXCPU, -signal.SIGKILL)
                    record = _bare(mutant) | ({"outcome": TIMED_OUT, "seconds": time.monotonic() - started}
                                              if timed_out else
                                              {"outcome": CRASHED, "error": f"worker exited {process.exitcode}"})
                process.join()
                shutil.rmtree(root / mutant.package, ignore_errors=True)
                del running[number]
                results.append(record)
                if log is not None:
                    log.write(json.dumps(record, default=str) + "\n")
                    log.flush()
                progress(f"[{len(results)}/{len(chosen)}] {record['outcome']:20s} "
                         f"{record.get('seconds', 0):6.1f} s  {mutant.id[:110]}")
    except KeyboardInterrupt:
        progress(f"interrupted: {len(results)} of {len(chosen)} mutants done")
        for _, process, _, _ in running.values():
            process.kill()
            process.join()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return sorted(results, key=lambda r: r["number"])


def _bare(mutant: Mutant) -> dict:
    return {"id": mutant.id, "number": mutant.number, "file": mutant.file, "module": mutant.module,
            "line": mutant.line, "operator": mutant.operator, "original": mutant.original, "mutated": mutant.mutated,
            "function": mutant.function, "rule_guarantees": list(mutant.rule_guarantees)}


# -- the report ----------------------------------------------------------------------------------
def summarize(results: list[dict], *, total: int, meta: dict) -> dict:
    counts = Counter(r["outcome"] for r in results)
    killed, survived = counts[KILLED], counts[SURVIVED]
    kill_times = [r["seconds"] for r in results if r["outcome"] == KILLED]
    kill_cpu = [r["cpu_seconds"] for r in results if r["outcome"] == KILLED]
    allowed = counts[ALLOWED]
    per_guarantee: dict[str, Counter] = defaultdict(Counter)
    per_module: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        per_module[r["module"]][r["outcome"]] += 1
        if r["outcome"] in (KILLED, SURVIVED, ALLOWED):
            told = r.get("guarantee") or ("/".join(r["rule_guarantees"]) or "untold")
            per_guarantee[told][r["outcome"]] += 1
    survivors = [r for r in results if r["outcome"] == SURVIVED]
    return {**meta, "mutants_total": total, "mutants_run": len(results),
            "counts": {outcome: counts[outcome] for outcome in OUTCOMES},
            "score": killed / (killed + survived) if killed + survived else None,
            "strict_score": killed / (killed + survived + allowed) if killed + survived + allowed else None,
            "median_seconds_to_kill": statistics.median(kill_times) if kill_times else None,
            "median_cpu_seconds_to_kill": statistics.median(kill_cpu) if kill_cpu else None,
            "survivors_the_checker_refuses": sum(1 for r in survivors if r.get("guarantee")),
            "allowed": [r for r in results if r["outcome"] == ALLOWED],
            "per_guarantee": {g: dict(c) for g, c in sorted(per_guarantee.items())},
            "per_module": {m: dict(c) for m, c in sorted(per_module.items())},
            "survivors": survivors,
            "mutants": results}


def record_of(report: dict) -> dict:
    """What the project keeps of a sample's run (RECORD): where and how it ran, its counts and
    score, per guarantee; the mutants themselves stay in the run's own mutation.json."""
    keys = ("date", "commit", "command", "profile", "sample", "mutants_total", "mutants_run", "counts", "score",
            "strict_score", "median_seconds_to_kill", "per_guarantee")
    # The command as anyone re-runs it: where this run wrote its files is its own.
    words, command = report["command"].split(), []
    for word in words:
        if command and command[-1] in ("--out", "--record"):
            command.pop()
        elif not word.startswith(("--out=", "--record=")):
            command.append(word)
    return {key: report[key] for key in keys} | {"command": " ".join(command),
                                                 "survivors": [r["id"] for r in report["survivors"]]}


def markdown(report: dict) -> str:
    counts = report["counts"]
    score = report["score"]
    median = report["median_seconds_to_kill"]
    lines = ["# Mutation score of the conformance catalog (`ci` profile)", "",
             f"{report['date']}, commit {report['commit']}, {report['machine']}; command: `{report['command']}`", "",
             f"Mutants of the rule code: {report['mutants_total']}; run: {report['mutants_run']}"
             + (f", those whose id contains {' or '.join(map(repr, report['only']))}" if report.get("only") else
                f", the first of them in a random order (seed {report['seed']}; {report['sample']} drawn)"
                if report["mutants_run"] < report["mutants_total"] else ""),
             "", "| outcome | mutants |", "|---|---|"]
    lines += [f"| {outcome} | {counts[outcome]} |" for outcome in OUTCOMES]
    strict = report["strict_score"]
    lines += ["", f"**Score: {counts[KILLED]} / {counts[KILLED] + counts[SURVIVED]} = "
                  f"{score:.1%}**" if score is not None else "**Score: n/a**",
              f"Strict score (the allowed counted as survivors): {counts[KILLED]} / "
              f"{counts[KILLED] + counts[SURVIVED] + counts[ALLOWED]} = {strict:.1%}" if strict is not None else
              "Strict score: n/a",
              (f"Median time to kill: {median:.1f} s wall, {report['median_cpu_seconds_to_kill']:.1f} s of CPU "
               "(finding and shrinking)") if median is not None else "Median time to kill: n/a",
              f"Survivors whose distinguishing program the checker refuses: {report['survivors_the_checker_refuses']}"
              f" of {counts[SURVIVED]} (the others: the checker's run of it raised)", "",
              "## Per guarantee (killed: the violation's; survived: the checker's on the distinguishing program, "
              "else the rule's checks; allowed: the rule's checks)", "",
              "| guarantee | killed | survived | allowed |", "|---|---|---|---|"]
    lines += [f"| {g} | {c.get(KILLED, 0)} | {c.get(SURVIVED, 0)} | {c.get(ALLOWED, 0)} |"
              for g, c in report["per_guarantee"].items()]
    lines += ["", "## Per model module", "", "| module | " + " | ".join(OUTCOMES) + " |",
              "|---|" + "---|" * len(OUTCOMES)]
    lines += [f"| {m} | " + " | ".join(str(c.get(o, 0)) for o in OUTCOMES) + " |"
              for m, c in report["per_module"].items()]
    for title, records in (("Survivors", report["survivors"]), ("Allowed", report["allowed"])):
        lines += _told_apart(title, records)
    equivalent = [r for r in report["mutants"] if r["outcome"] == EQUIVALENT]
    if equivalent:
        evidence = equivalent[0]["evidence"]
        lines += ["", f"## Equivalent ({evidence['programs']} random programs of {evidence['steps']} ops over "
                      f"{len(evidence['specs'])} specs told none apart)", ""]
        lines += [f"- `{r['id']}`" for r in equivalent]
    broken = [r for r in report["mutants"] if r["outcome"].startswith("not viable")]
    if broken:
        lines += ["", "## Not viable", ""]
        lines += [f"- `{r['id']}`: {r['outcome']}: {r.get('error', '')}" for r in broken]
    return "\n".join(lines) + "\n"


def _told_apart(title: str, records: list[dict]) -> list[str]:
    if not records:
        return []
    lines = ["", f"## {title}", ""]
    for r in records:
        d = r["distinguishing"]
        lines += [f"- `{r['id']}` (in `{r['function']}`)", f"  - told apart on {d['spec']} (seed {d['seed']}) after "
                  f"{len(d['ops'])} ops: expected {d['expected']}, got {d['got']}; the checker {d['checker']}",
                  f"  - program: `{'; '.join(d['ops'])}`"]
    return lines


def _meta(args, argv: list[str]) -> dict:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    return {"date": date.today().isoformat(), "commit": commit or "unknown",
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "command": "python -m suites.quality.mutation " + " ".join(argv), "seed": args.seed,
            "profile": "ci", "equivalence_programs": args.programs, "only": args.only, "order": args.order}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m suites.quality.mutation", description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=None, help="run a random sample of this many mutants")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--limit", type=int, default=None, metavar="K",
                        help="run only the first K mutants of the sample (as a run stopped after K would)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="CPU seconds per mutant")
    parser.add_argument("--programs", type=int, default=EQUIVALENCE_PROGRAMS, help="random programs per survivor")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="run only the mutants whose id (file:line:operator:original -> mutated) contains "
                             "TEXT (repeatable), all of them, unsampled")
    parser.add_argument("--order", choices=("reach", "catalog"), default="reach",
                        help="the cells that run a mutant's statement first (default), or the catalog's order")
    parser.add_argument("--out", type=Path, default=Path("reports/out/mutation"))
    parser.add_argument("--record", type=Path, default=None, metavar="PATH",
                        help=f"also write the score's summary there (the project keeps its latest sample's in "
                             f"{RECORD}, which `python -m reports.guarantees` puts in the guarantees table)")
    args = parser.parse_args(argv)
    if args.record is not None and args.only:
        parser.error("--record keeps a sample's score: a run of --only mutants is no sample")
    if args.order == "reach":
        try:
            import coverage  # noqa: F401
        except ImportError:
            parser.error("--order reach measures the reach with coverage.py, which is not installed "
                         "(pip install 'coverage>=7.4', or the kit's [bench] extra); --order catalog runs without it")
    # Stopped early (Ctrl-C, or SIGTERM: a background run ignores SIGINT), the report covers the
    # mutants done so far.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    # The model as it stands now, copied once: mutants and their packages come from the same text
    # even if model/ is edited during the run.
    root = Path(tempfile.mkdtemp(prefix="ack-mutants-"))
    shutil.copytree(MODEL, root / SNAPSHOT, ignore=shutil.ignore_patterns("__pycache__"))
    every = mutants(model=root / SNAPSHOT)
    # In a random order (seeded), so that a run cut short is still a random sample.
    chosen = random.Random(args.seed).sample(every, min(args.sample or len(every), len(every)))[:args.limit]
    if args.only:
        chosen = [m for m in every if any(text in m.id for text in args.only)]
        if not chosen:
            parser.error(f"no mutant's id contains {' or '.join(map(repr, args.only))}")
    _PROGRAMS[:] = equivalence.reference_programs(args.programs)
    meta = _meta(args, argv)  # the commit the run starts on
    if args.order == "reach":
        quick, _ = budgets()
        _REACH[:] = [measure(MODEL, quick, drain_idle_ms=DRAIN_IDLE_MS)]
        _REACH[0].model = root / SNAPSHOT  # the mutants' lines are the snapshot's, whatever model/ becomes
        meta["reach_seconds"] = round(_REACH[0].seconds, 1)
        print(f"reach: every cell's quick pass on the model target under coverage, {_REACH[0].seconds:.0f} s",
              flush=True)
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "results.jsonl").open("w") as log:
        results = run_all(chosen, root, args.jobs, args.timeout, log)
    report = summarize(results, total=len(every), meta=meta | {
        "wall_seconds": round(time.monotonic() - started),
        "sample": min(args.sample or len(every), len(every))})
    (args.out / "mutation.json").write_text(json.dumps(report, indent=1, default=str))
    (args.out / "mutation.md").write_text(markdown(report))
    if args.record is not None:
        args.record.write_text(json.dumps(record_of(report), indent=1) + "\n")
    print(markdown(report).split("## Per guarantee")[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
