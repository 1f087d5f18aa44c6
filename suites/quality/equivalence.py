"""Equivalent mutants told apart honestly: a survivor is run beside the model on random programs.

A mutant the conformance catalog did not catch is either equivalent (no program can tell it from
the model) or a gap. Both the model target and the mutant target answer the same seeded random
programs (the ops drawn as `model.simulate.run_random_program` draws them, from the model's state,
on every spec of the catalog, so every subscription type and knob); a program on which one
completion differs tells them apart, and the shortest such prefix is the evidence. A mutant no
program tells apart is set aside as equivalent, with the number of programs and the specs tried.
Answers are compared as a real target can observe them (`observable`): a cursor read shows
markDeletePosition and the individually deleted ranges (the broker's internal stats), not the
model's batch indexes or read position, so a mutant that differs only there is not told apart by
that read.

Every distinguishing program (its prefix up to the first differing answer) is then given to the
checker (the real model, in lock-step, with a drain at its end). When the checker refuses the
mutant's answers on one of them, the guarantee it names is what the catalog's programs missed (a
generation gap; or, for completion times that go back, that the history is malformed): the
shortest refused program is the evidence. When it accepts them on every one, the mutant answers as
a broker the model allows (another of the choices the model leaves open, a later completion time):
it is another conforming broker, which no check can refuse, and is set aside as allowed, with the
number of programs that told it apart. Whether the model is right to allow it is the evidence
report's question (suites/quality/evidence.py: the rules no broker history pins down), and the
real broker's, on the same program (suites/quality/allowed.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from fixtures.targets.model_target import ModelTarget
from model import cursor as cur
from model import ops as o
from model.nondet import ImpossibleStamp
from model.spec import Spec
from model.vocabulary import random_op
from suites.conformance.catalog import CHECKS
from suites.quality.catch import MALFORMED

PROGRAM_STEPS = 30


def catalog_specs() -> dict[str, Spec]:
    """Every distinct spec of the catalog, named by its first check and spec name."""
    specs: dict[Spec, str] = {}
    for check in CHECKS:
        for name, spec in check.specs.items():
            specs.setdefault(spec, f"{check.area}[{name}]")
    return {name: spec for spec, name in specs.items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Program:
    spec_name: str
    spec: Spec
    seed: int
    trace: tuple[tuple[o.Op, o.Completion], ...]  # the model's answers


def reference_programs(count: int, steps: int = PROGRAM_STEPS) -> list[Program]:
    """`count` seeded random programs spread over the catalog's specs, with the model's answers."""
    specs = list(catalog_specs().items())
    return [program_of(seed, specs, steps) for seed in range(count)]


def program_of(seed: int, specs: list[tuple[str, Spec]] | None = None, steps: int = PROGRAM_STEPS) -> Program:
    """The reference program of `seed` (the same on the same model and catalog)."""
    specs = list(catalog_specs().items()) if specs is None else specs
    spec_name, spec = specs[seed % len(specs)]
    rng, target = random.Random(seed), ModelTarget()
    target.reset(spec, f"program-{seed}")
    trace = []
    for _ in range(steps):
        op = random_op(target.state, rng)
        while not judged_on(spec, op):
            op = random_op(target.state, rng)
        trace.append((op, target.invoke(op)))
    return Program(spec_name=spec_name, spec=spec, seed=seed, trace=tuple(trace))


def judged_on(spec: Spec, op: o.Op) -> bool:
    """Whether the checker can judge `op` on `spec`: not a cursor read of a consumer with a retry
    letter topic, which the model does not check yet (model/partitions.py, NotModelled; the
    catalog's retry_letter_topic check has none). A program with one tells no mutant apart."""
    return not (spec.retry_letter_topic and isinstance(op, o.ReadCursor))


def observable(completion: o.Completion) -> o.Completion:
    """The completion as a real target answers it: a cursor read (one cursor, or one a topic) keeps
    markDeletePosition and the individually deleted ranges, all the broker's internal stats show
    (fixtures/targets/pulsar_target.py, `_model_cursor`)."""
    value = completion.value
    if isinstance(value, cur.Cursor):
        return replace(completion, value=_shown(value))
    if isinstance(value, tuple) and value and all(isinstance(c, cur.Cursor) for c in value):
        return replace(completion, value=tuple(_shown(c) for c in value))
    return completion


def _shown(cursor: cur.Cursor) -> cur.Cursor:
    return cur.Cursor(mark_delete=cursor.mark_delete, individually_deleted=cursor.individually_deleted)


@dataclass(frozen=True, slots=True, kw_only=True)
class Distinction:
    """A program on which the mutant answers otherwise than the model, and the checker's word on it."""

    program: Program
    length: int  # ops of the program up to and including the first differing answer
    expected: o.Completion | None
    got: o.Completion | str  # the mutant's answer, or the exception it raised
    refused_as: str | None = None  # the guarantee the checker names, or None if it allows the answers
    refusal: str = ""
    told_apart: int = 1  # how many of the programs tell the mutant apart (each judged by the checker)

    @property
    def allowed(self) -> bool:
        """The checker accepted the mutant's answers (neither refused them nor failed to run them)."""
        return self.refused_as is None and not self.refusal


def distinguish(make_mutant, programs: list[Program]) -> Distinction | None:
    """None if no program tells the mutant apart; else the shortest distinguishing prefix the checker
    refuses, or, when it refuses none, the shortest of them (`told_apart`: how many there were)."""
    found = [d for d in (first_difference(make_mutant, program) for program in programs) if d is not None]
    if not found:
        return None
    found.sort(key=lambda d: d.length)
    for distinction in found:
        judged = _judged(distinction, make_mutant)
        if not judged.allowed:
            return replace(judged, told_apart=len(found))
    return replace(found[0], told_apart=len(found))


def first_difference(make_mutant, program: Program) -> Distinction | None:
    """The shortest prefix of `program` on which the mutant answers otherwise than the model did (a
    crash is an answer too), or None."""
    target = make_mutant()
    target.reset(program.spec, f"program-{program.seed}")
    for i, (op, expected) in enumerate(program.trace):
        try:
            got = target.invoke(op)
        except Exception as error:  # noqa: BLE001  (a crash tells the mutant apart too)
            got = f"{type(error).__name__}: {error}"
        if not isinstance(got, o.Completion) or observable(got) != observable(expected):
            return Distinction(program=program, length=i + 1, expected=expected, got=got)
    return None


def _judged(found: Distinction, make_mutant) -> Distinction:
    """Run the distinguishing prefix against the checker, then drain: does the model refuse it?"""
    ops = [op for op, _ in found.program.trace[:found.length]]
    try:
        run = Lockstep(make_mutant(), found.program.spec, f"program-{found.program.seed}")
        for op in ops:
            run.do(op)
        run.drain(idle_ms=30)
    except ConformanceFailure as failure:
        return replace(found, refused_as=failure.violation.guarantee.value, refusal=failure.violation.detail)
    except ImpossibleStamp as error:  # the checker refuses the history itself: its times go back
        return replace(found, refused_as=MALFORMED, refusal=str(error))
    except Exception as error:  # noqa: BLE001
        return replace(found, refusal=f"the run raised {type(error).__name__}: {error}")
    return found
