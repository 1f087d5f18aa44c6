"""Third-party targets for the record tests, loaded as `suites.traces.faulty:<factory>`.

`accepts_cumulative` is the model with one broken answer: it accepts acknowledge_cumulative on
Shared and Key_Shared, where the client refuses it. `cannot_seek` raises on every seek, as a
target that cannot perform an op would. `crashes_once` is the model, except that it kills its
process once, mid-recording, after the first chunk is finished (see CRASH_MARKER).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fixtures.targets.model_target import ModelTarget
from model import ops as o


class AcceptsCumulative(ModelTarget):
    name = "accepts-cumulative"

    def answer(self, op: o.Op) -> o.Completion:
        completion = super().answer(op)
        if isinstance(op, o.AcknowledgeCumulative) and completion.outcome is o.Outcome.FAIL:
            return o.ok(at=completion.at)
        return completion


class CannotSeek(ModelTarget):
    name = "cannot-seek"

    def invoke(self, op: o.Op) -> o.Completion:
        if isinstance(op, o.Seek):
            raise RuntimeError("seek is not supported")
        return super().invoke(op)


class CrashesOnce(ModelTarget):
    name = "crashes-once"

    def reset(self, spec, program_id: str) -> None:
        if CRASH_MARKER.exists():
            out = Path(CRASH_MARKER.read_text())
            if any((out / "events").rglob("chunk-*.parquet")):
                CRASH_MARKER.unlink(missing_ok=True)
                os._exit(3)
        super().reset(spec, program_id)


# Holds the recording's path: the target crashes at the first program it starts once a chunk of
# that recording is finished, and only once (the marker is removed first).
CRASH_MARKER = Path(tempfile.gettempdir()) / "traces-test-crash-once"


def accepts_cumulative() -> AcceptsCumulative:
    return AcceptsCumulative()


def cannot_seek() -> CannotSeek:
    return CannotSeek()


def crashes_once() -> CrashesOnce:
    return CrashesOnce()
