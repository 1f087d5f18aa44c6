"""A typed outcome a replay does not repeat is still the verdict.

Against a real broker Hypothesis replays a failing program, and the replay need not fail again: a
client whose driver died (ClientCrashed) gets a fresh driver, a broker that was unreachable answers.
Hypothesis then raises its own complaint about the replay: FlakyFailure, or a bare
FlakyStrategyDefinition when the first run stopped where earlier programs had drawn more (a crash
during the reset of a program, before its first step). The runner raises what it first saw
instead, so the cell reads `unknown (client crashed)` with the crash's detail, not
`unknown (harness error)` (reports/vocabulary.py). Shown with the reference model as a target that
fails once and then behaves, as a driver that died once does: no broker needed.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import Phase, settings
from hypothesis.errors import Flaky

from fixtures.targets.driver_target import ClientCrashed
from fixtures.targets.model_target import ModelTarget
from model import ops as o
from model.spec import Spec, SubscriptionType
from reports.vocabulary import CLIENT_CRASHED, UNREACHABLE, kind_of_error
from suites.machines import run_conformance

SPEC = Spec(subscription_type=SubscriptionType.SHARED, max_redeliver_count=1)
KINDS = ("send", "subscribe", "receive", "acknowledge", "negative_acknowledge")
# What a check gets on a broker (fixtures/hypothesis_profiles.py: settings_for): no shrinking.
ON_A_BROKER = settings(settings.get_profile("ci"), max_examples=12, stateful_step_count=25,
                       phases=[Phase.explicit, Phase.reuse, Phase.generate])


class _FailsOnce(ModelTarget):
    """The model as a non-deterministic target that raises once, in program `program` (1-based)
    at its `step`-th op (0: in its reset), and behaves from then on."""

    deterministic = False

    def __init__(self, *, program: int, step: int, error: str) -> None:
        super().__init__(seed=0)
        self.program, self.step, self.error = program, step, error
        self.programs, self.failed, self.spec, self.history = 0, False, SPEC, []

    def reset(self, spec: Spec, program_id: str) -> None:
        self.programs += 1
        self.spec, self.history = spec, []
        self._maybe_fail("reset")
        super().reset(spec, program_id)

    def invoke(self, op: o.Op) -> o.Completion:
        self._maybe_fail(op)
        completion = super().invoke(op)
        self.history.append((op, completion))
        return completion

    def _maybe_fail(self, during) -> None:
        if self.failed or self.programs < self.program:
            return
        in_reset = during == "reset"
        if self.step == 0 and not in_reset or self.step > 0 and (in_reset or len(self.history) + 1 < self.step):
            return
        self.failed = True
        if self.error == "crash":
            raise ClientCrashed(client="model 0", reason="was killed by SIGSEGV (signal 11)",
                                stderr="driver: dying by segv", op=during, spec=self.spec,
                                history=self.history, target="model")
        raise ConnectionRefusedError(111, "Connection refused")


@pytest.mark.parametrize("program, step, error, kind", [
    (3, 0, "crash", CLIENT_CRASHED),   # in a later program's reset: Hypothesis raised a bare FlakyStrategyDefinition
    (1, 4, "crash", CLIENT_CRASHED),   # mid-program: Hypothesis raised FlakyFailure
    (3, 0, "refused", UNREACHABLE),    # an unreachable broker that answers the replay
], ids=["crash-in-reset", "crash-mid-program", "unreachable-in-reset"])
def test_an_outcome_the_replay_does_not_repeat_is_raised_not_hypothesis_complaint(program, step, error, kind):
    ids = (f"once-{n}" for n in itertools.count())
    target = _FailsOnce(program=program, step=step, error=error)
    with pytest.raises(BaseException) as caught:
        run_conformance(target, SPEC, lambda: next(ids), kinds=KINDS, settings_=ON_A_BROKER)
    assert target.failed
    assert not isinstance(caught.value, Flaky), f"Hypothesis' complaint, not the outcome: {caught.value!r}"
    assert kind_of_error(caught.value) == kind
    assert isinstance(caught.value.__cause__, Flaky)  # the replay's complaint stays as the cause
    if error == "crash":
        assert str(caught.value).startswith("client crashed: model 0 was killed by SIGSEGV (signal 11)")
