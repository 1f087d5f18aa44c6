"""Equivalent mutants told apart honestly: a survivor is run beside the model on random programs.

A mutant the conformance catalog did not catch is either equivalent (no program can tell it from
the model) or a gap. Both the model target and the mutant target answer the same seeded random
programs (the ops drawn as `model.simulate.run_random_program` draws them, from the model's state,
on every spec of the catalog, so every subscription type and knob); a program on which one
completion differs tells them apart, and the shortest such prefix is the evidence. A mutant no
program tells apart is set aside as equivalent, with the number of programs and the specs tried.

A distinguishing program is then given to the checker (the real model, in lock-step, with a drain
at its end): when the checker refuses the mutant's answers, the guarantee it names is what the
catalog's programs missed (a generation gap; or, for completion times that go back, that the
history is malformed); when it accepts them, the mutant answers as a broker
the model allows (another of the choices the model leaves open), which no check can refuse.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from fixtures.targets.model_target import ModelTarget
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
    programs = []
    for seed in range(count):
        spec_name, spec = specs[seed % len(specs)]
        rng, target = random.Random(seed), ModelTarget()
        target.reset(spec, f"program-{seed}")
        trace = []
        for _ in range(steps):
            op = random_op(target.state, rng)
            trace.append((op, target.invoke(op)))
        programs.append(Program(spec_name=spec_name, spec=spec, seed=seed, trace=tuple(trace)))
    return programs


@dataclass(frozen=True, slots=True, kw_only=True)
class Distinction:
    """The shortest program found on which the mutant answers otherwise than the model."""

    program: Program
    length: int  # ops of the program up to and including the first differing answer
    expected: o.Completion | None
    got: o.Completion | str  # the mutant's answer, or the exception it raised
    refused_as: str | None = None  # the guarantee the checker names, or None if it allows the answers
    refusal: str = ""


def distinguish(make_mutant, programs: list[Program]) -> Distinction | None:
    """The shortest distinguishing prefix over `programs`, or None if none tells the mutant apart."""
    best: Distinction | None = None
    for program in programs:
        limit = best.length - 1 if best else len(program.trace)
        if limit <= 0:
            break
        target = make_mutant()
        target.reset(program.spec, f"program-{program.seed}")
        for i, (op, expected) in enumerate(program.trace[:limit]):
            try:
                got = target.invoke(op)
            except Exception as error:  # noqa: BLE001  (a crash tells the mutant apart too)
                got = f"{type(error).__name__}: {error}"
            if got != expected:
                best = Distinction(program=program, length=i + 1, expected=expected, got=got)
                break
    return best if best is None else _judged(best, make_mutant)


def _judged(found: Distinction, make_mutant) -> Distinction:
    """Run the distinguishing prefix against the checker, then drain: does the model refuse it?"""
    ops = [op for op, _ in found.program.trace[:found.length]]
    try:
        run = Lockstep(make_mutant(), found.program.spec, f"program-{found.program.seed}")
        for op in ops:
            run.do(op)
        run.drain(idle_ms=30)
    except ConformanceFailure as failure:
        return Distinction(program=found.program, length=found.length, expected=found.expected, got=found.got,
                           refused_as=failure.violation.guarantee.value, refusal=failure.violation.detail)
    except ImpossibleStamp as error:  # the checker refuses the history itself: its times go back
        return Distinction(program=found.program, length=found.length, expected=found.expected, got=found.got,
                           refused_as=MALFORMED, refusal=str(error))
    except Exception as error:  # noqa: BLE001
        return Distinction(program=found.program, length=found.length, expected=found.expected, got=found.got,
                           refusal=f"the run raised {type(error).__name__}: {error}")
    return found
