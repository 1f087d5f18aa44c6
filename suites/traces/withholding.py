"""A non-deterministic target for the closed-loop tests, loaded as
`suites.traces.withholding:withholding`: the model's broker, except that every other receive that
the ideal broker would answer with a message answers with nothing (as a real receive does when
the message is not in the receiver queue yet), so its deliveries come a step later than the
model's ideal broker's, in another order against the program's steps. Like the Python client's
driver, it refuses an acknowledge, a nack or a seek of a message the consumer does not hold
(KeyError: the driver keeps each consumer's received messages by id)."""

from __future__ import annotations

from fixtures.targets.model_target import ModelTarget
from model import ops as o
from model.state import HELD


class Withholding(ModelTarget):
    name = "withholding"
    deterministic = False

    def reset(self, spec, program_id: str) -> None:
        super().reset(spec, program_id)
        self.withheld = 0

    def answer(self, op: o.Op) -> o.Completion:
        completion = super().answer(op)
        if isinstance(op, o.Receive) and isinstance(completion.value, o.Delivery):
            self.withheld += 1
            if self.withheld % 2:
                return o.ok(None, at=completion.at)
        return completion

    def invoke(self, op: o.Op) -> o.Completion:
        if isinstance(op, (o.Acknowledge, o.AcknowledgeCumulative, o.NegativeAcknowledge, o.Seek)):
            held = {m.id for m in self.state.messages if m.status is HELD and m.holder == op.consumer}
            if op.message not in held:
                raise KeyError(f"{op.consumer} never received {op.message}")
        return super().invoke(op)


def withholding() -> Withholding:
    return Withholding()
