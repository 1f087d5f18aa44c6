"""The order of a mutant's run: the cells whose programs run its statement go first.

A line counts for the statement that holds it; the reach measured on the model target names the
cells whose programs run a statement (a Key_Shared rule is run by Key_Shared cells only); a
mutant's run takes those cells first, at both budgets, and only then the others.
"""

from collections import Counter

import pytest
from hypothesis import settings

from suites.conformance.catalog import check
from suites.quality import equivalence
from suites.quality.catch import DRAIN_IDLE_MS
from suites.quality.mutation import KILLED, run_mutant
from suites.quality.mutator import MODEL, edited
from suites.quality.reach import Reach, measure, statement_line

RULE = '''def rule(state, m):
    if (state.now < m.at
            and m.ok):
        return m.with_(
            status=1)
    match m:
        case Message(status=s) if (s
                                   is HELD):
            return None
    return None
'''


def test_a_line_counts_for_the_statement_that_holds_it(tmp_path):
    (tmp_path / "rule.py").write_text(RULE)
    assert statement_line(tmp_path / "rule.py", 3) == 2  # the condition's second line: the `if`
    assert statement_line(tmp_path / "rule.py", 5) == 4  # a call's argument: the `return`
    assert statement_line(tmp_path / "rule.py", 8) == 7  # a guard's second line: the `case`
    assert statement_line(tmp_path / "rule.py", 10) == 10


@pytest.fixture(scope="module")
def reach():
    """The reach of two checks' programs, a few a cell."""
    return measure(MODEL, settings(settings.get_profile("ci"), max_examples=5),
                   (check("individual_ack"), check("key_shared")), drain_idle_ms=DRAIN_IDLE_MS)


def _line_of(file: str, text: str) -> int:
    source = (MODEL / file).read_text()
    assert source.count(text) == 1, text
    return source[:source.index(text)].count("\n") + 1


def test_a_key_shared_rule_is_reached_by_the_key_shared_cells_only(reach):
    # A key's owner is looked up only on a Key_Shared subscription.
    line = _line_of("simulate.py", "owner = state.key_owner(message.key)")
    first = [cell.name for cell in reach.first("simulate.py", line, (check("individual_ack"), check("key_shared")))]
    assert first and all(name.endswith("[Key_Shared]") for name in first), first
    assert "individual_ack[Key_Shared]" in first and "key_shared[Key_Shared]" in first
    # A statement every program runs: every cell, the one with more programs first.
    line = _line_of("simulate.py", "    at = state.now\n    match op:")
    every = reach.first("simulate.py", line, (check("individual_ack"), check("key_shared")))
    assert len(every) == len(check("individual_ack").specs) + len(check("key_shared").specs)
    ran = reach.programs("simulate.py", line)
    assert [ran[cell.name] for cell in every] == sorted(ran.values(), reverse=True)
    # A condition's second line counts for its statement, where coverage.py records it.
    inner = _line_of("simulate.py", "or (m.status is HELD and m.redelivery_from is not None and m.redelivery_from <= now)")
    assert statement_line(MODEL / "simulate.py", inner) == inner - 1 and reach.first("simulate.py", inner)


def test_a_mutant_run_takes_the_cells_that_run_its_statement_first(tmp_path):
    """The same mutant, killed by individual_ack's first cell in the catalog's order, is killed by
    key_shared's when the reach says only that one runs its statement."""
    programs = equivalence.reference_programs(30)
    def mutant(number):  # the last message never delivered goes out first: out of order on every type
        return edited("simulate.py", "        if first_fresh is None:\n            first_fresh = m",
                      "        first_fresh = m", number=number)

    checks = (check("individual_ack"), check("key_shared"))
    plain = run_mutant(mutant(11), tmp_path, programs, checks=checks)
    assert plain["outcome"] == KILLED and plain["by"].startswith("individual_ack["), plain
    only_key_shared = Reach(model=MODEL, runs={"simulate.py": {
        statement_line(MODEL / "simulate.py", mutant(12).line): Counter({"key_shared[Key_Shared]": 3})}})
    ordered = run_mutant(mutant(12), tmp_path, programs, checks=checks, reach=only_key_shared)
    assert ordered["outcome"] == KILLED and ordered["by"] == "key_shared[Key_Shared]", ordered
