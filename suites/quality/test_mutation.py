"""The mutation run's parts, each on a small case (the full run is `python -m suites.quality.mutation`).

The mutator makes each operator's mutant; a mutant package imports beside the real model without
touching it; a known-bad mutant is killed by the catalog; a mutant that only renames is found
equivalent; one the catalog misses survives when the checker refuses it on a random program, and is
set aside as allowed when the checker accepts it on every program that tells it apart; the
report's counts add up.
"""

import ast
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import model.cursor
import model.nondet
import model.simulate
import model.transitions
from model import ops as o
from model.spec import Spec, SubscriptionType
from suites.conformance.catalog import check
from suites.quality import equivalence
from suites.quality.mutation import (
    ALLOWED, CRASHED, EQUIVALENT, KILLED, NOT_IMPORTED, SURVIVED, TIMED_OUT, record_of, run_mutant, summarize)
from suites.quality.mutator import MODEL, OPERATORS, Mutant, build, edited, load, mutants, mutants_of

RULE = '''
def rule(state, m):
    if state.now < m.at and m.ok or m.late:
        state = replace_message(state, m.with_(status=1, holder=None))
    else:
        state = replace_messages(state, {m.id: m, m.other: m})
    chosen = min(m.a, m.b) if m.ok else None
    return Delivery(message=m.id, key=m.key)
'''


def test_the_mutator_makes_each_operators_mutant():
    made = {(m.operator, m.original, m.mutated) for m in mutants_of(RULE, "rule.py")}
    expected = {
        ("negate-condition", "state.now < m.at and m.ok or m.late", "not (state.now < m.at and m.ok or m.late)"),
        ("drop-condition", "state.now < m.at and m.ok or m.late", "m.late"),
        ("drop-condition", "state.now < m.at and m.ok", "m.ok"),
        ("shift-bound", "state.now < m.at", "state.now <= m.at"),
        ("shift-bound", "1", "0"),
        ("shift-bound", "1", "2"),
        ("skip-update", "m.with_(status=1, holder=None)", "m.with_(holder=None)"),
        ("skip-update", "replace_message(state, m.with_(status=1, holder=None))", "state"),
        ("skip-update", "{m.id: m, m.other: m}", "{m.other: m}"),
        ("swap-choices", "min(m.a, m.b)", "max(m.a, m.b)"),
        ("swap-choices", "min(m.a, m.b) if m.ok else None", "None if m.ok else min(m.a, m.b)"),
        ("forget-field", "Delivery(message=m.id, key=m.key)", "Delivery(key=m.key)"),
    }
    assert expected <= made, sorted(expected - made)
    assert {operator for operator, _, _ in made} == set(OPERATORS)
    swapped = [m for m in mutants_of(RULE, "rule.py") if m.operator == "swap-choices" and m.original.startswith("if")]
    assert len(swapped) == 1 and "replace_messages" in ast.unparse(ast.parse(swapped[0].source).body[0].body[0].body[0])
    for mutant in mutants_of(RULE, "rule.py"):
        compile(mutant.source, mutant.file, "exec")


def test_each_mutant_has_an_id_of_its_own_when_one_line_reads_the_same_twice():
    """`window=(0, 0)`: each 0 shifted reads `0 -> 1`; a report, `--only` and the time to kill
    name a mutant by its id, so the second one's says which it is."""
    twice = "def rule(state):\n    return redeliver(state, window=(0, 0))\n"
    ids = [m.id for m in mutants_of(twice, "rule.py") if m.mutated == "1"]
    assert ids == ["rule.py:2:shift-bound:0 -> 1", "rule.py:2#2:shift-bound:0 -> 1"]
    every = [m.id for m in mutants()]
    assert len(set(every)) == len(every)


def test_a_mutant_package_imports_beside_the_model(tmp_path):
    respond, step = model.simulate.respond, model.transitions.step
    mutant = edited("simulate.py", "return o.ok(at=at + ms)", "return o.ok(at=at + ms + 1)", number=0)
    simulate, nondet, state = load(build(mutant, tmp_path), tmp_path)
    assert Path(simulate.__file__).is_relative_to(tmp_path) and Path(nondet.__file__).is_relative_to(tmp_path)
    assert nondet.step is sys.modules["mutant_model_0.transitions"].step is not step
    assert state is sys.modules["model.state"]  # values are the real model's types
    # The real model is untouched: same functions, same files, same answers.
    assert model.simulate.respond is respond and model.transitions.step is step and model.nondet.step is step
    assert Path(model.simulate.__file__).parent == MODEL
    tick, start = o.Tick(ms=5), state.initial(Spec(subscription_type=SubscriptionType.SHARED))
    assert model.simulate.respond(start, tick, None).at == 5
    assert simulate.respond(start, tick, None).at == 6
    assert type(simulate.respond(start, tick, None)) is o.Completion


@pytest.fixture(scope="module")
def programs():
    return equivalence.reference_programs(300)


def test_a_known_bad_mutant_is_killed(tmp_path, programs):
    """An `and` turned `or` in the ideal broker: a second consumer is refused on every type."""
    mutant = edited("simulate.py", "SubscriptionType.EXCLUSIVE and connected:",
                    "SubscriptionType.EXCLUSIVE or connected:", number=1)
    result = run_mutant(mutant, tmp_path, programs, checks=(check("key_shared"),))
    assert result["outcome"] == KILLED, result
    assert result["guarantee"] == "subscribe" and result["by"] == "key_shared[Key_Shared]"


def test_a_mutant_that_renames_is_equivalent(tmp_path, programs):
    text = (MODEL / "simulate.py").read_text()
    mutant = Mutant(number=2, file="simulate.py", line=1, operator="rename", original="first_fresh",
                    mutated="earliest_never_delivered", function="pick_delivery", rule_guarantees=(),
                    source=text.replace("first_fresh", "earliest_never_delivered"))
    result = run_mutant(mutant, tmp_path, programs, checks=(check("key_shared"),))
    assert result["outcome"] == EQUIVALENT, result
    assert result["evidence"]["programs"] == len(programs)
    assert len(result["evidence"]["specs"]) == len(equivalence.catalog_specs())


def test_no_reference_program_holds_an_op_the_checker_cannot_judge(programs):
    """A cursor read of a consumer with a retry letter topic is not modelled (NotModelled): a
    program with one would leave a mutant it tells apart neither refused nor allowed, counted as a
    survivor for a gap of the model, not of the catalog."""
    retry = [p for p in programs if p.spec.retry_letter_topic]
    assert retry and not any(isinstance(op, o.ReadCursor) for p in retry for op, _ in p.trace)
    assert all(equivalence.judged_on(p.spec, op) for p in programs for op, _ in p.trace)


def test_a_mutant_the_catalog_misses_and_the_checker_refuses_survives(tmp_path, programs):
    """A survivor: the catalog's checks given (key_shared, whose programs never acknowledge
    cumulatively) pass, and a random program that tells the mutant apart shows the checker
    refusing it: the ideal broker accepts a cumulative ack on Shared."""
    mutant = edited("simulate.py", "if not state.spec.subscription_type.allows_cumulative_ack:",
                    "if False:", number=3)
    result = run_mutant(mutant, tmp_path, programs, checks=(check("key_shared"),))
    assert result["outcome"] == SURVIVED, result
    assert result["guarantee"] == "cumulative-refused-on-shared"
    told = result["distinguishing"]
    assert told["ops"][-1].startswith("AcknowledgeCumulative(") and told["checker"].startswith("refuses it")


def test_every_program_that_tells_a_mutant_apart_is_judged_not_only_the_shortest(tmp_path, programs):
    """Two edits: ticks 1 ms late (allowed, and on the shortest programs that tell it apart) and
    cumulative acks accepted on Shared (refused, on longer ones): it survives, on the refused one."""
    text = (MODEL / "simulate.py").read_text()
    for old, new in (("return o.ok(at=at + ms)", "return o.ok(at=at + ms + 1)"),
                     ("if not state.spec.subscription_type.allows_cumulative_ack:", "if False:")):
        assert text.count(old) == 1
        text = text.replace(old, new)
    mutant = Mutant(number=6, file="simulate.py", line=1, operator="two-edits", original="", mutated="",
                    function="respond", rule_guarantees=(), source=text)
    result = run_mutant(mutant, tmp_path, programs, checks=(check("key_shared"),))
    assert result["outcome"] == SURVIVED, result
    assert result["guarantee"] == "cumulative-refused-on-shared"
    told = result["distinguishing"]
    assert told["ops"][-1].startswith("AcknowledgeCumulative(") and "Tick(" not in " ".join(told["ops"])


def test_a_mutant_that_answers_as_the_model_allows_is_allowed(tmp_path, programs):
    """Not a survivor: a tick that ends 1 ms late tells the mutant apart on many programs, and the
    checker accepts it on every one (a completion may come later than the model's earliest): it is
    another conforming broker, set aside with the count of programs that told it apart."""
    mutant = edited("simulate.py", "return o.ok(at=at + ms)", "return o.ok(at=at + ms + 1)", number=4)
    result = run_mutant(mutant, tmp_path, programs, checks=(check("key_shared"),))
    assert result["outcome"] == ALLOWED, result
    assert result["told_apart"] > 1 and result["guarantee"] is None
    told = result["distinguishing"]
    assert told["ops"][-1].startswith("Tick(") and "Tick(" not in " ".join(told["ops"][:-1])
    assert told["checker"] == f"allows the mutant's answers on all {result['told_apart']} programs that tell it apart"


def test_a_mutant_that_differs_only_where_no_target_can_look_is_equivalent(tmp_path, programs):
    """A batch's first index acknowledged with batch-index acks kept by the client, not sent (the
    mutant): the ideal broker's batch indexes differ, and the broker's internal stats do not show
    them; every other answer is the model's. Told apart by nothing a target observes, it is
    equivalent, not allowed."""
    mutant = edited("transitions/acks.py", "elif message_id.index >= 0 and state.spec.batch_index_ack:",
                    "elif message_id.index >= 1 and state.spec.batch_index_ack:", number=7)
    result = run_mutant(mutant, tmp_path, programs, checks=_only("cumulative_ack", "Exclusive-batch-index-ack"))
    assert result["outcome"] == EQUIVALENT, result
    cursor = model.cursor.Cursor(mark_delete=0, individually_deleted=((1, 3),), batch_deleted=((4, frozenset({0})),),
                                 read_position=5)
    shown = equivalence.observable(o.ok(cursor, at=3))
    assert shown == o.ok(model.cursor.Cursor(mark_delete=0, individually_deleted=((1, 3),)), at=3)
    assert equivalence.observable(o.ok((cursor, cursor))).value == (shown.value, shown.value)


def _only(area: str, spec_name: str):
    whole = check(area)
    return (replace(whole, specs={spec_name: whole.specs[spec_name]}),)


def test_an_ack_timeout_is_dropped_by_a_close(tmp_path, programs):
    """The ack_timeout check closes consumers: a held message's ack timeout, counted ahead, is
    dropped with its consumer's client, so the next consumer gets it with the count it had. A
    close that kept the count (the mutant) is caught there."""
    mutant = edited("transitions/consumers.py", "lo = max(lo - 1, 0)", "lo = max(lo - 0, 0)", number=5)
    result = run_mutant(mutant, tmp_path, programs, checks=_only("ack_timeout", "Shared"))
    assert result["outcome"] == KILLED, result
    assert result["guarantee"] == "redelivery-count"


def test_the_report_counts_add_up():
    def record(number, outcome, module="model.simulate", **more):
        return {"number": number, "id": f"m{number}", "outcome": outcome, "module": module, "rule_guarantees": [],
                "function": "f", **more}

    results = [record(0, KILLED, seconds=2.0, cpu_seconds=1.0, guarantee="no-loss"),
               record(1, KILLED, "model.transitions.acks", seconds=4.0, cpu_seconds=3.0, guarantee="cursor"),
               record(2, KILLED, seconds=9.0, cpu_seconds=5.0, guarantee="no-loss"),
               record(3, SURVIVED, "model.transitions.acks", guarantee=None,
                      distinguishing={"spec": "s", "seed": 1, "ops": ["Tick(ms=1)"], "expected": "", "got": "",
                                      "checker": "allows"}),
               record(4, EQUIVALENT, evidence={"programs": 3, "steps": 30, "specs": ["s"]}),
               record(5, NOT_IMPORTED, error="SyntaxError"), record(6, CRASHED, error="TypeError"),
               record(7, TIMED_OUT),
               record(8, ALLOWED, guarantee=None, told_apart=4,
                      distinguishing={"spec": "s", "seed": 2, "ops": ["Tick(ms=1)"], "expected": "", "got": "",
                                      "checker": "allows"})]
    report = summarize(results, total=20, meta={})
    assert sum(report["counts"].values()) == report["mutants_run"] == len(results)
    assert report["score"] == 3 / 4 and report["strict_score"] == 3 / 5
    assert report["median_seconds_to_kill"] == 4.0 and report["median_cpu_seconds_to_kill"] == 3.0
    assert sum(sum(c.values()) for c in report["per_module"].values()) == len(results)
    assert report["per_guarantee"] == {"no-loss": {KILLED: 2}, "cursor": {KILLED: 1},
                                       "untold": {SURVIVED: 1, ALLOWED: 1}}
    assert [r["number"] for r in report["survivors"]] == [3] and [r["number"] for r in report["allowed"]] == [8]


def test_the_recorded_score_is_what_the_guarantees_table_reads(tmp_path):
    from model.guarantees import Guarantee
    from reports.guarantees import MUTATION, mutation_score

    results = [{"number": n, "id": f"m{n}", "outcome": outcome, "module": "model.simulate", "rule_guarantees": [],
                "function": "f", "seconds": 1.0, "cpu_seconds": 1.0, "guarantee": guarantee}
               for n, (outcome, guarantee) in enumerate([(KILLED, "no-loss"), (KILLED, "no-loss"), (KILLED, "cursor"),
                                                         (SURVIVED, "no-loss"), (EQUIVALENT, None)])]
    meta = {"date": "2026-01-02", "commit": "abc1234", "profile": "ci", "sample": 5,
            "command": f"python -m suites.quality.mutation --sample 5 --out /tmp/x --record {MUTATION}"}
    (tmp_path / MUTATION).parent.mkdir(parents=True)
    (tmp_path / MUTATION).write_text(json.dumps(record_of(summarize(results, total=9, meta=meta))))
    score = mutation_score(tmp_path)
    assert (score.killed, score.survived, score.commit) == (3, 1, "abc1234")
    assert score.of(Guarantee.NO_LOSS) == (2, 1) and score.of(Guarantee.CURSOR) == (1, 0)
    assert score.of(Guarantee.ORDER) == (0, 0)
    assert "3 of 4 were killed (75%)" in score.summary()
    assert "`python -m suites.quality.mutation --sample 5`" in score.summary(), "where the run wrote is its own"
