"""The Python client (pulsar-client 3.13, the C++ client 4.2.0 underneath) behind the driver protocol.

Model message ids travel in the payload ("3", or "3.1" for entry 3, batch index 1: drivers.wire),
so every delivery maps back to the model; a send replies with the broker's position of its entry
(ledger, entry), from which the suite translates the cursor it reads through the admin API.
Client errors are replies: `fail` when the client refused the op (ConsumerBusy, a cumulative ack
on Shared), `info` when its effect is unknown (a timeout, any other client error).
"""

from __future__ import annotations

import importlib.metadata
import logging
import queue
import re
import threading
import time

import pulsar

from drivers import wire
from drivers.python.client import client_certificates, new_client
from fixtures.credentials import NONE, Credentials, CredentialsError, redact_url
from model import ops as o
from model.spec import InitialPosition, Spec, SubscriptionType

CONSUMER_TYPES = {
    SubscriptionType.EXCLUSIVE: pulsar.ConsumerType.Exclusive,
    SubscriptionType.FAILOVER: pulsar.ConsumerType.Failover,
    SubscriptionType.SHARED: pulsar.ConsumerType.Shared,
    SubscriptionType.KEY_SHARED: pulsar.ConsumerType.KeyShared,
}
REFUSALS = (pulsar.CumulativeAcknowledgementNotAllowedError, pulsar.ConsumerBusy)
# No ack receipts, nack backoff or ack grouping time.
CAPABILITIES = ("batch_index_ack", "receiver_queue_0", "ack_timeout", "dead_letter_policy",
                "redeliver_unacknowledged", "seek_by_id", "redelivery_count", "partitioned", "partitioned_seek",
                "multi_topics", "topics_pattern")
RECEIVE_TIMEOUT_MS = 100  # a receive request without `ms`
HELLO_TIMEOUT_S = 5  # the hello's lookup with credentials (PROTOCOL.md: refusals within seconds)
HELLO_PROBE_TOPIC = "conformance-hello-probe"  # looked up, never created


class _PendingReceive:
    """`receive(timeout)` for a zero-queue consumer, whose timed receive the C++ client refuses
    (InvalidConfiguration): one blocking receive waits in a thread (it is what sends the broker a
    permit for one message); a receive that times out leaves it waiting, and the next receive
    takes what it got. Closing the consumer ends the wait."""

    def __init__(self, consumer: pulsar.Consumer) -> None:
        self.consumer = consumer
        self.results: queue.Queue = queue.Queue()
        self.waiting = False

    def receive(self, timeout_ms: int) -> pulsar.Message | None:
        if not self.waiting:
            self.waiting = True
            threading.Thread(target=self._wait, name="zero-queue-receive", daemon=True).start()
        try:
            result = self.results.get(timeout=timeout_ms / 1000)
        except queue.Empty:
            return None
        self.waiting = False
        if isinstance(result, BaseException):
            raise result
        return result

    def _wait(self) -> None:
        try:
            self.results.put(self.consumer.receive())
        except pulsar.PulsarException as error:
            self.results.put(error)


class PythonDriver:
    """One client for the driver's life (a new one after a program with a dead-letter policy),
    one program at a time: `reset` closes the last program's consumers and producers."""

    def __init__(self) -> None:
        self.service_url = ""
        self.credentials = NONE
        self.send_timeout_ms: int | None = None  # the hello's; None: the client's default (30 s)
        self._client: pulsar.Client | None = None
        self.spec = Spec()
        self.topic = self.subscription = ""
        self.topics: list[str] = []  # a consumer of several topics: theirs (the reset's), else none
        self.pattern: str | None = None
        # Per (topic, batched): a program sends through two producers of each topic it sends to.
        self._producers: dict[tuple[str, bool], pulsar.Producer] = {}
        self._consumers: dict[str, pulsar.Consumer] = {}
        self._zero_queue: dict[str, _PendingReceive] = {}
        self._received: dict[o.MessageId, pulsar.Message] = {}

    # -- lifecycle --------------------------------------------------------------------------------
    def hello(self, request: dict) -> dict:
        self.service_url = str(request["service_url"])
        self.credentials = Credentials.from_wire(request.get("auth"))
        if request.get("send_timeout_ms") is not None:
            self.send_timeout_ms = int(request["send_timeout_ms"])
        try:
            self._client = self._new_client()
        except CredentialsError as error:
            return wire.error("UnsupportedSetting", str(error))
        if not self.credentials.empty:
            refused = self._refused()
            if refused is not None:
                return refused
        capabilities = [*CAPABILITIES, *(["tls_client_cert"] if client_certificates() else [])]
        return {"client": "python", "version": importlib.metadata.version("pulsar-client"),
                "ops": [k for k in wire.CLIENT_OPS if k != "reconsume_later"],  # the C++ client has no retry topic
                "capabilities": capabilities}

    def _refused(self) -> dict | None:
        """With credentials, one lookup at the hello, so that refused ones are said now (PROTOCOL.md).
        The C++ client does not say a token was refused: it reconnects until the operation times
        out (apache/pulsar-client-cpp#227), so a lookup that times out is that refusal as far as
        can be told; an untrusted certificate is a ConnectError at once."""
        probe = new_client(self.service_url, self.credentials, operation_timeout_seconds=HELLO_TIMEOUT_S)
        try:
            probe.get_topic_partitions(f"persistent://public/default/{HELLO_PROBE_TOPIC}")
            return None
        except pulsar.Timeout:
            return wire.error("AuthenticationError", f"authentication failed, or the broker did not answer within "
                                                     f"{HELLO_TIMEOUT_S} s: the C++ client reconnects and says "
                                                     "nothing else when its token is refused")
        except pulsar.ConnectError as error:
            return wire.error("TlsError" if self.service_url.startswith("pulsar+ssl://") else "ConnectError",
                              f"cannot connect to {redact_url(self.service_url)}: {error}")
        except pulsar.PulsarException:
            return None  # answered: the credentials were taken, what the lookup says is the first op's to find
        finally:
            probe.close()

    def reset(self, request: dict) -> dict:
        self._close_program()
        self.spec = wire.spec_of_wire(request["spec"])
        self.topic, self.subscription = str(request["topic"]), str(request["subscription"])
        self.topics = [str(t) for t in request.get("topics") or ()]
        self.pattern = request.get("topics_pattern")
        return wire.ok()

    def close(self) -> None:
        self._close_program()
        if self._client is not None:
            self._client.close()
            self._client = None

    def _new_client(self) -> pulsar.Client:
        return new_client(self.service_url, self.credentials)

    def _close_program(self) -> None:
        for consumer in self._consumers.values():
            try:
                consumer.close()
            except pulsar.PulsarException:
                pass
        for producer in self._producers.values():
            try:
                producer.close()
            except pulsar.PulsarException:
                pass
        self._consumers, self._zero_queue, self._received, self._producers = {}, {}, {}, {}
        if self.spec.max_redeliver_count is not None and self._client is not None:
            # A program with a dead-letter policy gets a client of its own, closed before the suite
            # deletes its topic: closing the client closes the dead-letter producers its consumers
            # made in the background. With one client for a whole run, the C++ client (pulsar-client
            # 3.13) died of a segmentation fault in long runs of the dead-letter check, in subscribe
            # and receive, and once in a client thread while the topic was being deleted.
            self._client.close()
            self._client = self._new_client()

    # -- ops --------------------------------------------------------------------------------------
    def perform(self, request: dict) -> dict:
        try:
            return self._perform(request)
        except REFUSALS as error:
            return wire.failed("fail", type(error).__name__, str(error))
        except pulsar.PulsarException as error:
            return wire.failed("info", type(error).__name__, str(error))

    def _perform(self, request: dict) -> dict:
        kind = request.get("op")
        name = request.get("consumer")
        if kind == "send":
            topic = self.topics[int(request["topic"])] if self.topics else self.topic
            return self._send(topic, int(request["entry"]), tuple(request.get("keys") or (None,)),
                              bool(request.get("batched")))
        if kind == "receive":
            return self._receive(name, request.get("ms") or RECEIVE_TIMEOUT_MS)
        if kind == "subscribe":
            self._consumers[name] = self._subscribe(name)
            if self.spec.subscription_type is SubscriptionType.EXCLUSIVE:
                self._close_taken_over(name)
        elif kind == "acknowledge":
            self._consumers[name].acknowledge(self._received[wire.message_of(request)])
        elif kind == "acknowledge_cumulative":
            self._consumers[name].acknowledge_cumulative(self._received[wire.message_of(request)])
        elif kind == "negative_acknowledge":
            self._consumers[name].negative_acknowledge(self._received[wire.message_of(request)])
        elif kind == "redeliver_unacknowledged_messages":
            self._consumers[name].redeliver_unacknowledged_messages()
        elif kind == "close":
            self._zero_queue.pop(name, None)  # its waiting receive ends with AlreadyClosed
            self._consumers.pop(name).close()
        elif kind == "seek":
            self._consumers[name].seek(self._received[wire.message_of(request)].message_id())
        elif kind == "tick":
            time.sleep(int(request.get("ms") or 0) / 1000)
        else:
            return wire.error("UnknownOp", f"unknown op {kind!r} (known: {', '.join(wire.CLIENT_OPS)})")
        return wire.ok()

    def _close_taken_over(self, holder: str) -> None:
        """A newcomer got the Exclusive subscription (after an unload, the old holder may lose the
        race to reconnect). The old consumers' clients keep reconnecting and could win it back on
        the next reopen; the model has them gone, so they are closed, as an application that saw
        them lose the subscription would."""
        for name in [n for n in self._consumers if n != holder]:
            try:
                self._consumers.pop(name).close()
            except pulsar.PulsarException:
                pass  # it was not connected: nothing to flush

    def _send(self, topic: str, entry: int, keys: tuple[str | None, ...], batched: bool) -> dict:
        if not batched:
            producer = self._producers.get((topic, False))
            if producer is None:
                producer = self._producers[(topic, False)] = self._client.create_producer(topic, **self._send_timeout())
            key = keys[0]
            try:
                sent = producer.send(wire.payload(entry), partition_key=key) if key else \
                    producer.send(wire.payload(entry))
            except pulsar.Timeout:
                self._drop_producer(topic, batched=False)
                raise
            return wire.ok(position=[sent.ledger_id(), sent.entry_id()], **_partition(sent))
        producer = self._producers.get((topic, True))
        if producer is None:
            producer = self._producers[(topic, True)] = self._client.create_producer(
                topic, batching_enabled=True, batching_max_messages=1000,
                batching_max_publish_delay_ms=60_000, block_if_queue_full=True, **self._send_timeout(),
                batching_type=pulsar.BatchingType.KeyBased
                if self.spec.subscription_type is SubscriptionType.KEY_SHARED else pulsar.BatchingType.Default)
        results = []
        for index, key in enumerate(keys):
            callback = lambda result, mid: results.append((result, mid))  # noqa: E731
            if key:
                producer.send_async(wire.payload(entry, index), callback, partition_key=key)
            else:
                producer.send_async(wire.payload(entry, index), callback)
        try:
            producer.flush()
        except pulsar.Timeout:
            self._drop_producer(topic, batched=True)
            raise
        deadline = time.monotonic() + 30
        while len(results) < len(keys) and time.monotonic() < deadline:
            time.sleep(0.001)
        ids = [mid for result, mid in results if result == pulsar.Result.Ok]
        if len(results) < len(keys) or any(result == pulsar.Result.Timeout for result, _ in results):
            self._drop_producer(topic, batched=True)
        if len(ids) != len(keys) or len({(i.ledger_id(), i.entry_id()) for i in ids}) != 1:
            return wire.failed("info", "BatchNotOneEntry", f"batch of {len(keys)} was not published as one entry: "
                                                           f"{results}")
        return wire.ok(position=[ids[0].ledger_id(), ids[0].entry_id()], **_partition(ids[0]))

    def _send_timeout(self) -> dict:
        return {} if self.send_timeout_ms is None else {"send_timeout_millis": self.send_timeout_ms}

    def _drop_producer(self, topic: str, *, batched: bool) -> None:
        """Close the producer whose send timed out; the program's next send makes a new one. A C++
        producer that reconnected while its topic was being unloaded may be left on the closed topic,
        its sends never answered and later unloads not reaching it (KD-40,
        suites/plumbing/test_producer_left_on_a_closed_topic.py). What the timed-out send did stays
        unknown (`info`); the producer is not what the suite checks."""
        producer = self._producers.pop((topic, batched))
        try:
            producer.close()
        except pulsar.PulsarException:
            pass  # the broker may not know it any more

    def _subscribe(self, name: str) -> pulsar.Consumer:
        spec = self.spec
        dead_letter = (pulsar.ConsumerDeadLetterPolicy(spec.max_redeliver_count)
                       if spec.max_redeliver_count is not None else None)
        topic = re.compile(self.pattern) if self.pattern else self.topics or self.topic
        return self._client.subscribe(
            topic, self.subscription, consumer_type=CONSUMER_TYPES[spec.subscription_type], consumer_name=name,
            receiver_queue_size=spec.receiver_queue_size, negative_ack_redelivery_delay_ms=spec.nack_delay_ms,
            unacked_messages_timeout_ms=spec.ack_timeout_ms, batch_index_ack_enabled=spec.client_batch_index_ack,
            dead_letter_policy=dead_letter,
            initial_position=pulsar.InitialPosition.Earliest
            if spec.initial_position is InitialPosition.EARLIEST else pulsar.InitialPosition.Latest,
        )

    def _receive(self, name: str, timeout_ms: int) -> dict:
        try:
            if self.spec.receiver_queue_size == 0:
                pending = self._zero_queue.setdefault(name, _PendingReceive(self._consumers[name]))
                message = pending.receive(timeout_ms)
                if message is None:
                    return wire.ok()
            else:
                message = self._consumers[name].receive(timeout_ms)
        except pulsar.Timeout:
            return wire.ok()
        message_id = wire.payload_id(message.data())
        self._received[message_id] = message
        return wire.delivered(message_id, message.redelivery_count(), message.partition_key() or None)



def _partition(message_id: pulsar.MessageId) -> dict:
    """A send's partition, for the reply: none on a topic without partitions (the C++ client says -1)."""
    partition = message_id.partition()
    return {"partition": partition} if partition >= 0 else {}
