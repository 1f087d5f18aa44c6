"""What the broker tests that check their own history against the model share
(suites/broker/test_seek_to_a_batch_index.py, test_java_redeliver_after_seek.py): a client's target
on the session's broker, each op logged with its completion, and a drain."""

from __future__ import annotations

from fixtures.targets.loader import pulsar_target
from model import ops as o


def client_target(name: str, pulsar_broker):
    """A module fixture's body: the target of client `name` on the session's broker, closed after."""
    target = pulsar_target(pulsar_broker.service_url, pulsar_broker.admin_url, controller=pulsar_broker.controller,
                           client=name, version=pulsar_broker.version)
    yield name, target
    target.close()


class Logged:
    """The target, keeping each op and its completion for the model to check."""

    def __init__(self, target):
        self.target, self.history = target, []

    @classmethod
    def fresh(cls, target, spec, names, *ops: o.Op) -> Logged:
        """The target on a new topic of the test's (`names`), checked under `spec`, with `ops` done."""
        target.reset(spec, names.topic().rsplit("/", 1)[1])
        logged = cls(target)
        for op in ops:
            logged.invoke(op)
        return logged

    def invoke(self, op: o.Op) -> o.Completion:
        completion = self.target.invoke(op)
        self.history.append((op, completion))
        return completion

    def placed(self) -> dict[int, int]:
        """Each sent entry's partition (or its topic, for a consumer of several topics), as the
        sends' completions named it."""
        sends = [c for op, c in self.history if isinstance(op, o.Send) and c.outcome is o.Outcome.OK]
        return {entry: c.partition for entry, c in enumerate(sends)}

    def forged(self, message: o.MessageId, consumer: str, *, redelivery_count: int = 0) -> list:
        """The history with one more receive of `message` by `consumer`, a millisecond after its end:
        what a test asks the model to refuse."""
        return self.history + [(o.Receive(consumer=consumer),
                                o.ok(o.Delivery(message=message, redelivery_count=redelivery_count),
                                     at=self.history[-1][1].at + 1))]


def received(target, consumer: str) -> list[o.MessageId]:
    """What `consumer` receives until a receive waits 1 s for nothing."""
    got = []
    while (delivery := target.invoke(o.Receive(consumer=consumer, timeout_ms=1000)).value) is not None:
        got.append(delivery.message)
    return got
