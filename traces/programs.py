"""A corpus program is a seed and a spec: the ops are drawn as the program runs, each from what
the target has actually delivered so far (closed loop), never from a script written in advance.

`next_op` is the one draw both sides use: the op vocabulary's weighted random choice
(`model.vocabulary.random_op`, whose candidates are the conformance machine's: acks and nacks
name messages a consumer holds, receives and closes name connected consumers), from a state of
the model, with a seeded `random.Random` in place of Hypothesis. Two ops wait for what exists on
a broker: a cursor read for the subscription (before the first subscribe the model knows a
cursor and a broker none), an unload for the topic (before the first send or subscribe the admin
API answers that the topic does not exist).

- `run_on_model`: the model answers (`model.simulate.respond`, the ideal broker) and one state
  is stepped; what `traces generate` writes.
- `run_closed_loop`: a target answers and the model's non-deterministic checker follows it
  (`model.nondet.apply`); each next op is drawn from a state the checker still allows, so a
  consumer only acknowledges what it holds on that target. A receive waits long only when the
  model says a message is there (as the conformance machine's receives), on a target that is not
  deterministic. The program stops at the first observation the model does not allow or the
  first op the target cannot perform: what follows would be drawn from no state at all.

On the model target both give the same ops and completions for a seed: the checker's state set
is then the one state the generator steps (suites/traces/test_closed_loop.py shows it).
"""

from __future__ import annotations

import random
from dataclasses import replace

from fixtures.targets.protocol import is_deterministic
from model import ops as o
from model.nondet import apply, start, step_decided
from model.simulate import pick_delivery, run_random_program
from model.spec import Spec
from model.state import State, initial
from model.vocabulary import random_op

# How long a receive waits, as the conformance machine's (suites/programs.py; suites is not shipped
# to a cluster's executors): long when the model says a message is there, a glance otherwise.
SLOW_RECEIVE_MS, FAST_RECEIVE_MS = 300, 10


def exists_for(state: State, op: o.Op) -> bool:
    """Whether what `op` acts on exists on a broker: the subscription for a cursor read (made by
    the first subscribe), the topic for an unload (made by the first send or subscribe)."""
    if isinstance(op, o.ReadCursor):
        return bool(state.consumers)
    if isinstance(op, o.Unload):
        return bool(state.consumers or state.entries)
    return True


def next_op(state: State, rng: random.Random) -> o.Op:
    """The next op of a program in `state`: the vocabulary's draw, drawn again while it would act on
    something the broker does not have yet."""
    while True:
        op = random_op(state, rng)
        if exists_for(state, op):
            return op


def run_on_model(spec: Spec, seed: int, steps: int) -> list[tuple[o.Op, o.Completion]]:
    """The program of `seed` answered by the model's ideal broker: its expected trace. Raises
    AssertionError when the model rejects its own answer (the generator leaves the program out)."""
    return run_random_program(spec, seed, steps, draw=next_op)


def run_closed_loop(target, spec: Spec, seed: int, steps: int, topic: str) -> tuple[list[tuple[o.Op, o.Completion]], str | None]:
    """The program of `seed` run on `target` (reset to `topic`), each op drawn from what the target
    delivered: its history and, when it stopped early, why (a violation, an op the target could
    not perform). An op that raises is in the history as a `fail` with `TargetError: ...`."""
    rng = random.Random(seed)
    deterministic = is_deterministic(target)
    try:
        target.reset(spec, topic)
    except Exception as error:  # noqa: BLE001 - a target that cannot start the program
        first = next_op(initial(spec), rng)
        return [(first, o.fail(f"TargetError: reset: {type(error).__name__}: {error}", at=0))], "reset failed"
    verdict, history, at = start(spec), [], 0
    state = initial(spec)
    for _ in range(steps):
        op = next_op(state, rng)
        if isinstance(op, o.Receive) and not deterministic:
            op = replace(op, timeout_ms=SLOW_RECEIVE_MS if pick_delivery(state, op.consumer) else FAST_RECEIVE_MS)
        try:
            completion = target.invoke(op)
        except Exception as error:  # noqa: BLE001 - recorded; nothing after it would mean anything
            history.append((op, o.fail(f"TargetError: {type(error).__name__}: {error}", at=at)))
            return history, "the target could not perform an op"
        history.append((op, completion))
        at = max(at, completion.at)
        try:
            verdict = apply(verdict, op, completion)
        except Exception as error:  # noqa: BLE001 - a malformed answer (impossible times): check says so
            return history, f"{type(error).__name__}: {error}"
        if not verdict.ok:
            return history, f"violation: {verdict.violation.guarantee.value}"
        state = _next_state(state, op, completion, verdict)
    return history, None


def _next_state(state: State, op: o.Op, completion: o.Completion, verdict) -> State:
    """The state the next op is drawn from: the model's own choice where the target made it too
    (so on the model the recording is the generated program), else the same one of the possible
    states on every run (not the set's iteration order, which changes with the hash seed)."""
    chosen = step_decided(state, op, completion)
    if chosen in verdict.states:
        return chosen
    return min(verdict.states, key=repr)
