"""The state of one topic and one subscription, as a value: messages, consumers, cursor, clock.

The state is an abstraction chosen so that the model accepts everything a real broker may do
without forking on every dispatch decision:

- Which consumer a fresh message is dispatched to (Shared), or whether it already sits in a
  consumer's receiver queue, is not tracked: an AVAILABLE message may be received by any consumer
  allowed to have it. What the application has received is tracked exactly (HELD by a consumer).
- An ack is first *pending* (the client groups acks for 100 ms and sends them without receipt);
  it is *confirmed* when something proves it reached the broker: the consumer's close (which
  flushes), a seek (which flushes), or a cursor read that shows it.
- A redelivery that the client or broker will make inside a time window (nack, ack timeout) is
  kept as the window; the delivery may be observed anywhere inside it.
- A redelivery count is kept as the interval of values the next delivery may carry.

Remaining choices (which pending acks reached the broker, what a crash kept) are forks: the
non-deterministic layer (model/nondet.py) works on sets of these states.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from enum import StrEnum
from operator import attrgetter

from model.cursor import Cursor
from model.ops import MessageId
from model.records import copier, maker
from model.spec import Spec


class Status(StrEnum):
    AVAILABLE = "available"  # the broker may dispatch it (never delivered, or back for redelivery)
    HELD = "held"  # handed to a consumer's application, not acknowledged
    ACKED = "acked"  # acknowledged by the application (pending or confirmed on the broker)


# The statuses as plain names for the step functions, which test a status in every scan of the
# messages: in Python 3.11 an enum member looked up on its class costs about 70 ns (the enum
# type's `__getattr__` hook bypasses the interpreter's attribute cache), a module name 5 ns.
AVAILABLE, HELD, ACKED = Status.AVAILABLE, Status.HELD, Status.ACKED


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of the topic as the model knows it. Each field says what in the broker or the
    client it stands for; the model keeps a bound or a flag where Pulsar's own state is hidden."""

    id: MessageId
    key: str | None = None
    status: Status = Status.AVAILABLE
    # The consumer whose application holds it (HELD): the message is in that consumer's pending
    # acks on the broker (Consumer.pendingAcks) and in its client's unacked-message tracker.
    holder: str | None = None
    delivered: bool = False
    # Never dispatched to anyone as far as the model can tell: not in any receiver queue nor in the
    # dispatcher's replay queue (messagesToRedeliver), so its first delivery must come in publish
    # order. False once it may have sat in a receiver queue that was handed back (a consumer's
    # close, a rewind, a reopened topic) or its batch entry was redelivered.
    never_dispatched: bool = True
    ack_confirmed: bool = False
    # Deliveries that may still come beyond the one the model owes: a copy in a receiver queue
    # (the client's incomingMessages) when the message was dispatched again, a copy in the replay
    # queue of a rewind, a redelivery of an acked message whose ack had not reached the broker
    # (the ack grouping tracker had not flushed it), one more per repeated rewind.
    extra_deliveries: int = 0
    # The redelivery window of a HELD message: the client's NegativeAcksTracker (nack delay) or
    # UnAckedMessageTracker (ack timeout) asks the broker to redeliver it no earlier than
    # `redelivery_from`, and it is certainly back (AVAILABLE) at `redelivery_by`.
    redelivery_from: int | None = None
    redelivery_by: int | None = None
    # With an ack timeout, while nothing else asked for it: when the UnAckedMessageTracker's own
    # timeout for it runs out (received at t: t + ack timeout). On Exclusive and Failover another
    # held message's timeout may bring it sooner (`redelivery_from`), until that one is acked.
    timeout_from: int | None = None
    # The redelivery count the next delivery may carry, as an interval: the broker's redelivery
    # tracker (InMemoryRedeliveryTracker, Shared and Key_Shared) counts per entry.
    count_lo: int = 0
    count_hi: int = 0
    # The count of the copy the application received last (what the client's dead-letter check
    # compares; copies still to come may carry another one).
    held_count: int = 0
    # The lowest count an older copy still to come may carry below `count_lo`: a copy another
    # consumer's application got and may hand back (its close), or one dispatched after the
    # redelivery tracker forgot the message (an ack or a batch-index ack). Such a copy keeps its
    # count whatever later requests added (the model keeps one holder). 1 << 30: none.
    older_copy_count: int = 1 << 30
    # Received by one consumer while another's application held it: the broker may have it in
    # either consumer's pending acks, so a nack or redeliver from the one the model has as holder
    # may be ignored by the broker (it only redelivers what is pending on the asking consumer).
    held_by_two_consumers: bool = False
    # Failover: the connected consumers whose application received a copy since the message was
    # last handed back (a consumer that leaves takes its copy with it).
    copy_receivers: frozenset[str] = frozenset()
    serial: int = 0  # order of publication among sends and subscribes
    # The consumer whose seek targeted this message (or a later index of its batch): that
    # consumer's client skips it, so it is not owed while that consumer is connected.
    skipped_by: str | None = None
    # Failover: unacknowledged when the active consumer changed again within the failover delay;
    # the broker may not redeliver it until the next rewind (KNOWN_DIVERGENCES.md KD-11).
    stalled: bool = False
    # Marked ACKED because the client may have sent it to the dead-letter topic (a copy with the
    # limiting count may have reached the receiver queue): unsure, not an application's ack.
    dead_letter_unsure: bool = False
    # Held across a reconnect (an unload, a restart, a cut) in a copy at the dead-letter limit: the
    # client's record that it may dead-letter the message may or may not have outlived the
    # reconnect, so a nack of it may dead-letter it or ask for a plain redelivery, which the new
    # dispatcher counts from 0 (shown by suites/broker/test_dead_letter_across_a_reconnect.py).
    # A copy received at the limit again makes a fresh record.
    dead_letter_record_stale: bool = False
    # Sent to the dead-letter topic by its client, which acknowledges it once that send completes:
    # at some moment after, or never (a close or a crash first); a cursor read may show the ack
    # or not, and not showing it settles nothing (shown by history
    # broker-dead-letter-ack-after-a-cursor-read.redelivery_count_and_dead_letter-Shared-dlq1).
    dead_lettered: bool = False
    # Acknowledged by a client that crashed before the ack was known to reach the broker (one of
    # the extra deliveries is this doubt): nothing of that client is left to hand a copy out, so a
    # copy that comes proves the ack lost, and a cursor read settles it either way.
    ack_in_doubt: bool = False
    # Acknowledged while its consumer lost its connection or was reconnecting: the client may have
    # dropped the ack (model/transitions/reconnect.py), so the message may come again, as often as
    # the broker redelivers, until a cursor read settles it; a flush does not prove it arrived.
    ack_may_be_dropped: bool = False
    # A batch index acknowledged without batch-index acks, on a copy of its batch older than one that
    # reached the application since: the client acks the entry once every index of one copy is
    # acked, and this ack went to the older copy's acker, which may never be whole, so whether the
    # entry is ever acked is open (model/transitions/receive.py) until a cursor read shows it.
    ack_on_older_copy: bool = False
    # Received again by this consumer's application after the ack, the ack not yet confirmed:
    # should a cursor read show the ack lost, this consumer holds the message (its copy came from
    # a cursor without the ack), and it is not owed again.
    copy_held_by: str | None = None
    # The consumer whose seek to a later index of its batch acknowledged it for the subscription
    # with the seek's ack set (`Spec.seek_sends_batch_index`): the broker filters it from every
    # dispatch of the entry, but keeps that ack set in memory only, so a reopened topic dispatches it
    # again (shown by suites/broker/test_seek_to_a_batch_index.py), and that consumer's client skips
    # it as before its start message id.
    acked_by_seek: str | None = None
    # A reconsume_later copy on the retry letter topic (ops.RetryCopy): the broker's delayed
    # delivery tracker dispatches it no earlier than `deliver_from` and certainly by `deliver_by`;
    # 0 for a message published without a delay. Its first delivery may come after later messages.
    deliver_from: int = 0
    deliver_by: int = 0

    # with_(**changes): `dataclasses.replace(self, **changes)`, made fast by model.records (set below).

    @staticmethod
    def published(message_id: MessageId, key: str | None, serial: int) -> Message:
        """A message just sent: `Message(id=..., key=..., serial=...)`, fast (every send makes one)."""
        return _make_message(id=message_id, key=key, serial=serial)


@dataclass(frozen=True, slots=True, kw_only=True)
class Consumer:
    name: str
    connected: bool = True
    # Highest entry this consumer received as a first delivery: first deliveries come in order.
    last_first_delivery: int = -1
    # Acks called but not yet confirmed on the broker, in call order: (kind, message).
    pending_acks: tuple[tuple[str, MessageId], ...] = ()
    serial: int = 0  # order of subscription among sends and subscribes
    # With ack receipts: the broker disconnected it (an unload, a restart, a crash, a seek) and the
    # model cannot tell when its client is back; an acknowledge made meanwhile returns without a
    # receipt (the Java client asks for one only on a connection).
    reconnecting: bool = False
    # The serial when the model last learned it was back from a disconnection (reconnect.py, `back`):
    # it rejoined the dispatcher at some moment before, maybe after a key was bound to another
    # consumer (model/transitions/consumers.py, `bind_key`).
    back_serial: int = -1

    # with_(**changes): `dataclasses.replace(self, **changes)`, made fast by model.records (set below).


@dataclass(frozen=True, slots=True, kw_only=True)
class State:
    spec: Spec
    now: int = 0
    messages: tuple[Message, ...] = ()  # in publish order, which is id order (lookups bisect)
    entries: tuple[int, ...] = ()  # batch size per entry (0 = not batched)
    consumers: tuple[Consumer, ...] = ()
    cursor: Cursor = Cursor()
    # Failover: no dispatch before this time (the broker's delay after an active-consumer change).
    paused_until: int = 0
    serial: int = 0  # sends and subscribes so far
    # Exclusive/Failover: a rewind requested to land inside this window (nack, ack timeout,
    # redeliver): whatever is unacknowledged when it lands comes again.
    rewind_window: tuple[int, int] | None = None
    # How many rewinds that window holds: each one the broker serves re-dispatches everything
    # unacknowledged, so each may deliver a message once more (shown by
    # suites/model/test_fidelity_broker.py::test_each_exclusive_rewind_on_its_way_delivers_the_backlog_once_more).
    rewinds: int = 0
    # Rewinds still to be asked when the consumers are back from a disconnection, each to deliver
    # everything unacknowledged once more (model/transitions/reopen.py): they join the window above
    # once no consumer may be reconnecting.
    rewinds_at_reconnect: int = 0
    reopened_serial: int = 0  # the serial of the last unload, restart or crash
    # The network's delay each way from a slow_network op on: what a client's timer asks for (a
    # redelivery, a rewind) reaches the broker this much after the window the model gives it.
    latency_ms: int = 0
    # The serial of the last event that closed the consumers' connections (those and a seek): a
    # message published from then on came to a consumer over its new connection.
    disconnected_serial: int = 0
    # Key_Shared: (key, owner, may_also_receive): the key stays with the consumer it was
    # dispatched to (the sticky-key dispatcher's hash range) while that consumer is connected; it
    # may go only to a consumer in may_also_receive: one that joined after the key was bound (the
    # dispatcher's recently joined consumers, PIP-379's draining hashes), or its previous owner,
    # which may still have messages of the key in its receiver queue.
    key_owners: tuple[tuple[str | None, str, tuple[str, ...]], ...] = ()

    # with_(**changes): `dataclasses.replace(self, **changes)`, made fast by model.records (set below).

    # -- lookups --------------------------------------------------------------------------------
    def message(self, message_id: MessageId) -> Message | None:
        at = _position(self.messages, message_id)
        return None if at is None else self.messages[at]

    def entry_messages(self, entry: int) -> tuple[Message, ...]:
        """The messages of one entry (one, or a batch's indexes)."""
        messages = self.messages
        return messages[bisect_left(messages, (entry, -1), key=_ID):bisect_left(messages, (entry + 1, -1), key=_ID)]

    def consumer(self, name: str) -> Consumer | None:
        for consumer in self.consumers:
            if consumer.name == name and consumer.connected:
                return consumer
        return None

    def connected(self) -> tuple[Consumer, ...]:
        return tuple([c for c in self.consumers if c.connected])

    def active_consumer(self) -> str | None:
        """Exclusive: the consumer holding the subscription. Failover: the one the model target
        dispatches to (the earliest connected); the broker's own pick hashes the consumers' names,
        so the checks in model/checks.py do not rely on it."""
        connected = self.connected()
        return connected[0].name if connected else None

    def key_owner(self, key: str | None) -> str | None:
        for bound_key, owner, _ in self.key_owners:
            if bound_key == key:
                return owner
        return None


Message.with_, Consumer.with_, State.with_ = copier(Message), copier(Consumer), copier(State)
_make_message = maker(Message)
_ID = attrgetter("id")


def initial(spec: Spec) -> State:
    return State(spec=spec)


def _position(messages: tuple[Message, ...], message_id: MessageId) -> int | None:
    at = bisect_left(messages, message_id, key=_ID)
    return at if at < len(messages) and messages[at].id == message_id else None


def replace_message(state: State, message: Message) -> State:
    at = _position(state.messages, message.id)
    if at is None:
        return state
    return state.with_(messages=state.messages[:at] + (message,) + state.messages[at + 1:])


def replace_messages(state: State, changed: dict[MessageId, Message]) -> State:
    if not changed:
        return state
    return state.with_(messages=tuple(changed.get(m.id, m) for m in state.messages))


def replace_consumer(state: State, consumer: Consumer) -> State:
    return state.with_(consumers=tuple(consumer if c.name == consumer.name and c.connected else c
                                       for c in state.consumers))
