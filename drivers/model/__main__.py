"""`python -m drivers.model`: the reference model as a driver process (the protocol's self-test).

It answers every client op from the model target (fixtures/targets/model_target.py), so a run of
the conformance machine through the driver machinery passes without a broker: what fails there is
the protocol, not Pulsar. `--lacks CAPABILITY` leaves a capability out of its hello (to see a check
reported as not applicable); `--die-after N` makes it die mid-program (drivers/serve.py).
"""

from __future__ import annotations

import importlib.metadata

from drivers import wire
from drivers.serve import main
from fixtures.targets.model_target import ModelTarget
from model import ops as o


class ModelDriver:
    def __init__(self, lacks: tuple[str, ...] = ()) -> None:
        self.lacks = lacks
        self.target = ModelTarget()

    def hello(self, request: dict) -> dict:
        try:
            version = importlib.metadata.version("pulsar-ack-conformance")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        # It seeks as the default spec's client does (the entry only): it declares no behaviour.
        return {"client": "model", "version": version, "clock": "logical", "ops": list(wire.CLIENT_OPS),
                "capabilities": [c for c in wire.CAPABILITIES if c not in self.lacks and c not in wire.BEHAVIOURS]}

    def reset(self, request: dict) -> dict:
        self.target.reset(wire.spec_of_wire(request["spec"]), str(request["topic"]).rsplit("/", 1)[-1])
        return wire.ok()

    def perform(self, request: dict) -> dict:
        op = wire.op_of_request(request)
        completion = self.target.invoke(op)
        if request.get("topic") is not None and completion.partition != request["topic"]:
            # The model target routes a send itself (model.partitions.route_send), as the suite does.
            return wire.error("ProtocolError", f"send to topic {request['topic']}, which the model routes to "
                                               f"{completion.partition}: the suite and the model disagree")
        return {**self._reply(op, completion), "at": completion.at}  # the model's logical clock

    @staticmethod
    def _reply(op: o.Op, completion: o.Completion) -> dict:
        if completion.outcome is not o.Outcome.OK:
            error_class, _, message = (completion.error or "").partition(": ")
            return wire.failed(completion.outcome.value, error_class, message)
        value = completion.value
        if isinstance(value, o.Delivery):
            return wire.delivered(value.message, value.redelivery_count, value.key)
        if isinstance(op, o.Send) and value:
            # The model's ledger is 0, its entries in order; a partitioned topic's send names its partition.
            partition = {} if completion.partition is None else {"partition": completion.partition}
            return wire.ok(position=[0, value[0].entry], **partition)
        return wire.ok()

    def close(self) -> None:
        pass


def _arguments(parser) -> None:
    parser.add_argument("--lacks", action="append", default=[], choices=sorted(wire.CAPABILITIES),
                        help="leave this capability out of the hello reply (repeatable)")


if __name__ == "__main__":
    main(lambda args: ModelDriver(tuple(args.lacks)), "the reference model as a conformance driver", _arguments)
