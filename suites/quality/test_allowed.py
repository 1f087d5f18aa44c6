"""Putting an allowed mutant to a target: each run's answer at the step that told the mutant apart
is the model's, the mutant's, another, or came after another path; a refused run is told."""

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

from fixtures.targets.mutant_target import MutantTarget
from model import cursor as cur
from model import ops as o
from suites.conformance.catalog import check
from suites.quality import equivalence
from suites.quality.allowed import ANOTHER_PATH, MODELS, MUTANTS, OTHER, REFUSED, Case, answer_of, run_case
from suites.quality.mutator import build, edited, load

SPEC = check("batches").specs["Exclusive-batch-index-ack"]
B = [o.MessageId(entry=0, index=i) for i in range(3)]
# A batch's index acked, a cursor read while the ack is grouped, the other two acked, a close, a read.
OPS = [o.Send(keys=(None,) * 3, batched=True), o.Subscribe(consumer="c0"),
       *[o.Receive(consumer="c0", timeout_ms=None)] * 3, o.Acknowledge(consumer="c0", message=B[0]), o.ReadCursor(),
       o.Acknowledge(consumer="c0", message=B[1]), o.Acknowledge(consumer="c0", message=B[2]),
       o.Close(consumer="c0"), o.ReadCursor()]
# A cursor read that forgets the grouped acks it does not show (the whole batch is then never acked).
FORGETS = ("transitions/acks.py", "tuple(p for p in c.pending_acks if not observed.is_acknowledged(p[1].entry))",
           "tuple(p for p in c.pending_acks if observed.is_acknowledged(p[1].entry))")


@cache
def _modules():
    root = Path(tempfile.mkdtemp(prefix="allowed-test-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)  # the modules stay imported till the end
    return tuple(load(build(edited(*FORGETS, number=9101), root), root))


def forgetful_target() -> MutantTarget:
    """The factory the replay loads (`suites.quality.test_allowed:forgetful_target`)."""
    return MutantTarget(*_modules(), name="forgets grouped acks at a read")


def _trace(target):
    target.reset(SPEC, "program")
    return tuple((op, target.invoke(op)) for op in OPS)


def _case() -> Case:
    from fixtures.targets.model_target import ModelTarget

    program = equivalence.Program(spec_name="batches[Exclusive-batch-index-ack]", spec=SPEC, seed=0,
                                  trace=_trace(ModelTarget()))
    return Case(mutant_id="forgets", spec_name=program.spec_name, program=program, length=len(OPS),
                mutants_answer=_trace(forgetful_target())[-1][1])


def test_the_answer_at_the_distinguishing_step_is_told_apart():
    case = _case()
    model = list(case.program.trace)
    assert case.mutants_answer.value.mark_delete == -1 and model[-1][1].value.mark_delete == 0
    assert answer_of(model, case) == (MODELS, None)
    assert answer_of(model[:-1] + [(OPS[-1], case.mutants_answer)], case) == (MUTANTS, None)
    assert answer_of(model[:-1] + [(OPS[-1], o.fail("the admin call failed"))], case) == (OTHER, None)
    # Only what a target observes counts: the batch indexes and read position, and the time, do not.
    shown = model[-1][1]
    hidden = o.ok(cur.Cursor(mark_delete=0, batch_deleted=((0, frozenset({1})),), read_position=7), at=shown.at + 5)
    assert answer_of(model[:-1] + [(OPS[-1], hidden)], case) == (MODELS, None)
    # A cursor read the broker could not answer (before any subscription) proves nothing.
    unread = model[:6] + [(OPS[6], o.ok(None))] + model[7:]
    assert answer_of(unread, case) == (MODELS, None)
    # An earlier answer that differs: the run took another path.
    other_first = model[:2] + [(OPS[2], o.ok(o.Delivery(message=B[1], redelivery_count=0)))] + model[3:]
    assert answer_of(other_first, case) == (ANOTHER_PATH, 2)


def test_a_run_on_a_target_tells_its_answer():
    case = _case()
    assert run_case(case, 2, target="model")["answers"][MODELS] == 2
    forgetful = run_case(case, 2, target="suites.quality.test_allowed:forgetful_target")
    # The checker refuses the forgetful answer here (this program is no allowed one's): told so.
    assert forgetful["answers"][REFUSED] == 2 and forgetful["notes"][0].startswith("refused: cursor")
    assert forgetful["verdict"].startswith("the checker refused")
