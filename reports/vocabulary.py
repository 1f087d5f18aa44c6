"""The verdicts a conformance cell can have, and why one is unknown.

A verdict separates what Pulsar did from what the harness could not do:

- `passed`: every program the test ran conformed;
- `failed`: a guarantee was broken, with the history and reproduction that show it;
- `unknown`: the harness could not tell, for a typed reason (`UNKNOWN_KINDS`): the broker was
  unreachable, an op or the test timed out, the solver hit its limit, the run was interrupted,
  the client under test crashed (its driver died: that is a finding about the client, never a
  broken guarantee), or the harness itself raised;
- `not applicable`: the client lacks an op or capability the check needs, or the target cannot run
  the spec (a pytest skip with its reason).

Only `passed` and `failed` say something about Pulsar; `unknown` is never a pass. Summaries written
before these words existed said `skipped` for not applicable and carried no reason kind: they read
back with `skipped` taken as `not applicable` and the kind inferred from the reason's text.
"""

from __future__ import annotations

PASSED, FAILED, UNKNOWN, NOT_APPLICABLE = "passed", "failed", "unknown", "not applicable"
OUTCOMES = (PASSED, FAILED, UNKNOWN, NOT_APPLICABLE)
LEGACY_OUTCOMES = {"skipped": NOT_APPLICABLE}

UNREACHABLE, TIMED_OUT, SOLVER_LIMIT = "unreachable", "timed out", "solver limit"
INTERRUPTED, CLIENT_CRASHED, HARNESS_ERROR = "interrupted", "client crashed", "harness error"
UNKNOWN_KINDS = (UNREACHABLE, TIMED_OUT, SOLVER_LIMIT, INTERRUPTED, CLIENT_CRASHED, HARNESS_ERROR)

# Exception class names (anywhere in the class's MRO) and what they say about the run: the Python
# client's pulsar.Timeout and ConnectError, the standard library's, Hypothesis's deadline, a target
# past its per-op deadline (fixtures/targets/deadline.py).
_TIMEOUTS = ("Timeout", "TimeoutError", "TimeoutExpired", "DeadlineExceeded", "TargetTimedOut")
_UNREACHABLE = ("ConnectError", "ConnectionError", "ConnectionRefusedError", "TargetUnreachable")
_INTERRUPTS = ("KeyboardInterrupt", "Interrupted", "Exit")


def kind_of_error(error: BaseException | None) -> str:
    """Why a test that raised `error` (not a conformance failure) is unknown."""
    if error is None:
        return HARNESS_ERROR
    if getattr(error, "crashed_client", False):
        return CLIENT_CRASHED
    names = {cls.__name__ for cls in type(error).__mro__}
    text = str(error)
    if names & set(_INTERRUPTS):
        return INTERRUPTED
    if names & set(_UNREACHABLE) or any(word in text for word in ("Connection refused", ": ConnectError:")) \
            or "unreachable" in text.lower():
        return UNREACHABLE
    if names & set(_TIMEOUTS) or ": Timeout:" in text:
        return TIMED_OUT
    return HARNESS_ERROR


def kind_of_reason(reason: str | None) -> str:
    """The kind of an unknown verdict recorded without one (a summary older than the kinds)."""
    text = (reason or "").lower()
    if text.startswith("client crashed"):
        return CLIENT_CRASHED
    if "could not decide" in text or "solver" in text:
        return SOLVER_LIMIT
    if "interrupted" in text or "did not finish" in text:
        return INTERRUPTED
    if "connection refused" in text or "unreachable" in text or "connecterror" in text:
        return UNREACHABLE
    if "timeout" in text or "timed out" in text:
        return TIMED_OUT
    return HARNESS_ERROR


def verdict_word(outcome: str, kind: str | None = None) -> str:
    """`unknown: client crashed`, `not applicable`, `passed`: the outcome with the kind of an unknown."""
    return f"{outcome}: {kind}" if outcome == UNKNOWN and kind else outcome
