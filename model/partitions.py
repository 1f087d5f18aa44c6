"""A partitioned topic: one topic without partitions per partition, side by side.

To the broker a topic of N partitions is N topics (`<topic>-partition-<i>`), each with its own
managed ledger, cursor, dispatcher and redelivery tracker; the client's multi-topics consumer keeps
one consumer per partition under it, with its own receiver queue and grouped acks
(MultiTopicsConsumerImpl in the Java and C++ clients). So the model of a partitioned topic is N
models of a topic (`PartitionedState.parts`), and a program's op goes where the client sends it:

- a send, to the partition its completion names (the producer's router picked it; the broker's
  message id carries it);
- a receive that returns a message, to that message's partition (the multi-topics consumer hands
  out what any partition's consumer received, in no order across partitions); one that returns
  nothing returned nothing from every partition;
- an acknowledge, acknowledge_cumulative or negative_acknowledge, to the partition of the message
  it names: a cumulative ack acknowledges that partition's messages up to it, and no other
  partition's (shown by suites/broker/test_partitioned_topic.py::
  test_a_cumulative_ack_acknowledges_its_own_partition_only);
- a seek, to the partition of the message it names, which the multi-topics consumer's partition
  consumer seeks alone (the Java client's MultiTopicsConsumerImpl.seekAsync of a TopicMessageId,
  the C++ client's seekAsync); the other partitions keep their cursors, and what they had
  dispatched is owed as before (the Java and C++ clients drop it from their receiver queue: KD-44);
- a cursor read, to every partition, each with its own cursor: the read's value is one cursor per
  partition, in their order, each in the partition's own entries (the admin API's internalStats
  of each partition's topic);
- every other op (subscribe, close, redeliver_unacknowledged_messages, a tick, an unload, a client
  crash), to every partition; an op that names no partition moves every partition's clock.

A program numbers its entries once, in send order, whatever their partition (m0, m1, ...); each
partition's state numbers its own from 0, and this module translates both ways.

A consumer of several topics without partitions (`Spec.multi_topics`, the client's
`ConsumerBuilder.topics` or `topicsPattern`) is the same multi-topics consumer over topics the
program names (`<topic>-0`, `<topic>-1`, ...; each send goes to the one the suite's router picks,
as a partitioned producer's would), so it is modelled as a partitioned topic is, its topics in
the partitions' place.

A consumer with a retry letter topic (`Spec.retry_letter_topic`, the client's `enableRetry`) is a
multi-topics consumer too, over two topics: the topic (0) and `<topic>-<subscription>-RETRY` (1,
`RETRY`), so it is modelled as the same two cursors side by side. Every send goes to the topic; a
reconsume_later goes to its message's topic as the ack its client sends, and, unless the message
was reconsumed `Spec.max_reconsumes` times already (then its copy goes to the dead-letter topic), to
the retry letter topic as a copy (`o.RetryCopy`), a new program entry numbered with the sends. The
Java client subscribes to the retry topic as Shared (`Spec.retry_subscription_shared`).

One rule ties the partitions together: on Exclusive and Failover the multi-topics consumer keeps
one unacked-message tracker for all of them, and one partition's ack timeout rewinds every
partition (`_timeouts_elsewhere`). Every other op is judged partition by partition.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

from model import ops as o
from model.guarantees import Guarantee
from model.checks import check_reconsume_later
from model.spec import Spec, SubscriptionType
from model.state import HELD, State, initial as initial_topic
from model.transitions.redelivery import timed_out_elsewhere
from model.violations import Violation

# Ops that name a message: they go to its partition.
NAMING = (o.Acknowledge, o.AcknowledgeCumulative, o.NegativeAcknowledge, o.Seek)
_WAIT = o.Tick(ms=0)


class NotModelled(ValueError):
    """An op the model does not yet say anything of on a partitioned topic."""


# Not slotted: its view is cached on the instance.
@dataclass(frozen=True, kw_only=True)
class PartitionedState:
    """The states each partition may be in. No observation ties one partition's state to
    another's (each op is judged partition by partition, and so is the drain), so the states the
    topic may be in are every combination of these: kept apart, the uncertainty of N partitions
    adds up instead of multiplying."""

    spec: Spec
    parts: tuple[frozenset[State], ...]
    # Per program entry, in send order: (its partition, its entry in that partition).
    placed: tuple[tuple[int, int], ...] = ()
    # Per program entry: how many times the message it is a copy of was reconsumed (0: sent).
    reconsumed: tuple[int, ...] = ()

    @property
    def now(self) -> int:
        return max(state.now for part in self.parts for state in part)

    @property
    def paused_until(self) -> int:
        return max(state.paused_until for part in self.parts for state in part)

    def with_(self, *, now: int) -> PartitionedState:
        """Every partition's states with their clock at `now` (what the drain asks of a Failover pause)."""
        return replace(self, parts=tuple(frozenset(state.with_(now=now) for state in part) for part in self.parts))

    def entries_of(self, partition: int) -> tuple[int, ...]:
        """The program's entries on `partition`, in order."""
        return self._entries[partition]

    @cached_property
    def _entries(self) -> tuple[tuple[int, ...], ...]:
        found: list[list[int]] = [[] for _ in range(self.spec.topics)]
        for g, (p, _) in enumerate(self.placed):
            found[p].append(g)
        return tuple(map(tuple, found))

    def local(self, message: o.MessageId) -> tuple[int, o.MessageId] | None:
        """A program's message as (partition, the partition's message id); None if never published."""
        if not 0 <= message.entry < len(self.placed):
            return None
        partition, entry = self.placed[message.entry]
        return partition, o.MessageId(entry, message.index)

    def program_id(self, partition: int, message: o.MessageId) -> o.MessageId:
        return o.MessageId(self.entries_of(partition)[message.entry], message.index)

    @cached_property
    def first(self) -> tuple[State, ...]:
        """One possible state per partition (the first of each)."""
        return tuple(next(iter(part)) for part in self.parts)

    @cached_property
    def view(self) -> State:
        """One topic's state that holds every partition's messages under the program's ids, for
        what picks a program's next op (model/vocabulary.py, suites/generation.py) and how long a
        drain waits: never for a verdict, which every partition's own states give."""
        parts = self.first
        renumber = [self.entries_of(p) for p in range(len(parts))]
        messages = sorted((m.with_(id=o.MessageId(renumber[p][m.id.entry], m.id.index))
                           for p, part in enumerate(parts) for m in part.messages), key=lambda m: m.id)
        consumers = []
        for consumer in parts[0].consumers:
            pending = tuple((kind, o.MessageId(renumber[p][m.entry], m.index))
                            for p, part in enumerate(parts) for c in part.consumers
                            if c.name == consumer.name and c.connected == consumer.connected
                            for kind, m in c.pending_acks)
            consumers.append(consumer.with_(pending_acks=pending))
        holes = next((part.cursor for part in parts if part.cursor.individually_deleted or part.cursor.batch_deleted),
                     parts[0].cursor)
        return parts[0].with_(
            now=self.now, messages=tuple(messages), entries=tuple(parts[p].entries[k] for p, k in self.placed),
            consumers=tuple(consumers), cursor=holes, paused_until=self.paused_until,
            rewind_window=next((part.rewind_window for part in parts if part.rewind_window is not None), None))


def view(state: State | PartitionedState) -> State:
    return state.view if type(state) is PartitionedState else state


RETRY = 1  # the retry letter topic's place among a retry consumer's topics


def topic_spec(spec: Spec, partition: int) -> Spec:
    """The spec of one of the consumer's topics, judged as a topic alone."""
    topic = spec.with_(partitions=0, multi_topics=0, topics_pattern=False, retry_letter_topic=False,
                       parent_queue_size=parent_queue_size(spec))
    if spec.retry_letter_topic and partition == RETRY and spec.retry_subscription_shared:
        topic = topic.with_(subscription_type=SubscriptionType.SHARED)
    return topic


def parent_queue_size(spec: Spec) -> int:
    """What a multi-topics consumer's own queue may hold, all of it from one topic (Spec.multi_topics_queue)."""
    if not (spec.multi_topics_queue and spec.topics):
        return 0
    return max(2, spec.receiver_queue_size, spec.topics) + spec.topics - 1


def initial(spec: Spec) -> PartitionedState:
    return PartitionedState(spec=spec, parts=tuple(frozenset({initial_topic(topic_spec(spec, p))})
                                                   for p in range(spec.topics)))


Outcomes = Callable[[object], tuple]  # a partition's step result, its questions decided (model/nondet.py)


def step(state: PartitionedState, op: o.Op, completion: o.Completion, *, core: Callable, outcomes: Outcomes,
         decided: bool = False) -> tuple[PartitionedState | Violation, ...]:
    """The states the partitions may be in after `op` (`core`: model.transitions.step; `outcomes`:
    the non-deterministic layer's decision of a result), or the violations of the partition whose
    states all ruled it out. `decided`: one state per partition, the first outcome of its first
    state (what a single-state driver keeps)."""
    if isinstance(op, o.ReadCursor) and state.spec.retry_letter_topic:
        raise NotModelled("a cursor read of a consumer with a retry letter topic is not modelled yet (model/partitions.py)")
    if isinstance(op, o.ReconsumeLater):
        return _reconsume_later(state, op, completion, core=core, outcomes=outcomes, decided=decided)
    routed = _route(state, op, completion)
    if isinstance(routed, Violation):
        return (routed,)
    target, local_op, local_completion, placed = routed
    reconsumed = state.reconsumed + (0,) * (len(placed) - len(state.placed))
    parts = []
    elsewhere = _timeouts_elsewhere(state, completion.at)
    for p, part in enumerate(state.parts):
        part = frozenset(_timed_out(each, elsewhere, p) for each in part) if elsewhere else part
        if isinstance(op, o.ReadCursor):
            taken = (op, _cursor_of(completion, p, len(state.parts)))
        elif target is None:
            taken = (op, completion)
        elif p == target:
            taken = (local_op, local_completion)
        else:
            taken = (_WAIT, o.ok(at=completion.at))
        survivors, violations = _apply(part, *taken, core=core, outcomes=outcomes, decided=decided)
        if not survivors:
            return tuple(in_program_terms(state, p, v) for v in violations)
        parts.append(survivors)
    return (PartitionedState(spec=state.spec, parts=tuple(parts), placed=placed, reconsumed=reconsumed),)


def _cursor_of(completion: o.Completion, partition: int, parts: int) -> o.Completion:
    """A cursor read's completion as `partition` sees it: its own cursor, or nothing read."""
    value = completion.value
    if isinstance(value, tuple) and len(value) == parts:
        return replace(completion, value=value[partition])
    return replace(completion, value=None)


def _apply(part: frozenset[State], op: o.Op, completion: o.Completion, *, core: Callable, outcomes: Outcomes,
           decided: bool) -> tuple[frozenset[State], list[Violation]]:
    """The states one partition may be in after `op`, and the violations of those that ruled it out."""
    survivors, violations = [], []
    for each in ((next(iter(part)),) if decided else part):
        for result in outcomes(core(each, op, completion)):
            (violations if isinstance(result, Violation) else survivors).append(result)
    return frozenset(survivors[:1] if decided else survivors), violations


def _reconsume_later(state: PartitionedState, op: o.ReconsumeLater, completion: o.Completion, *, core: Callable,
                     outcomes: Outcomes, decided: bool) -> tuple[PartitionedState | Violation, ...]:
    """The ack on the message's topic and, unless it goes to the dead-letter topic, its copy on the
    retry letter topic. The client publishes the copy with `deliverAfter(delay)` from its own clock,
    after the call and before its return, and the broker's tracker dispatches what is due within
    one tick (AbstractDelayedDeliveryTracker.getCutoffTime): the copy comes between the call plus
    the delay less a tick and the return plus the delay plus a tick."""
    if not state.spec.retry_letter_topic:
        raise ValueError("reconsume_later on a consumer without a retry letter topic: the program is malformed")
    found = state.local(op.message)
    if found is None:
        raise ValueError(f"reconsume_later of {op.message}, which no send published: the program is malformed")
    problem = check_reconsume_later(state.first[found[0]], op, completion)
    if problem is not None:
        return (problem,)
    p, local = found
    times = state.reconsumed[op.message.entry] + 1
    copied = copies(state.spec, state.reconsumed[op.message.entry])
    placed, reconsumed = state.placed, state.reconsumed
    copy = None
    if copied:
        key = state.first[p].message(local).key
        copy = retry_copy(state.spec, key, invoked=state.now, at=completion.at, delay_ms=op.delay_ms)
        placed, reconsumed = placed + ((RETRY, len(state.entries_of(RETRY))),), reconsumed + (times,)
    parts = []
    for q, part in enumerate(state.parts):
        taken = []
        if copy is not None and q == RETRY:
            taken.append((copy, completion))
        taken.append((replace(op, message=local), completion) if q == p else (_WAIT, o.ok(at=completion.at)))
        for each_op, each_completion in taken:
            part, violations = _apply(part, each_op, each_completion, core=core, outcomes=outcomes, decided=decided)
            if not part:
                return tuple(in_program_terms(state, q, v) for v in violations)
        parts.append(part)
    return (PartitionedState(spec=state.spec, parts=tuple(parts), placed=placed, reconsumed=reconsumed),)


def copies(spec: Spec, reconsumed: int) -> bool:
    """Whether a reconsume_later of a message reconsumed `reconsumed` times publishes a copy: past
    `Spec.max_reconsumes` it goes to the dead-letter topic instead (RECONSUMETIMES > the limit)."""
    return reconsumed < spec.max_reconsumes


def retry_copy(spec: Spec, key: str | None, *, invoked: int, at: int, delay_ms: int) -> o.RetryCopy:
    """The copy a reconsume_later called at `invoked` and returned at `at` publishes. Without a
    delay the client sets no deliverAfter, and a retry topic read as Exclusive or Failover has no
    delayed delivery tracker (PersistentDispatcherSingleActiveConsumer): either way the copy is
    dispatched as any message."""
    if not delay_ms or topic_spec(spec, RETRY).subscription_type.single_active_consumer:
        return o.RetryCopy(key=key, deliver_from=0, deliver_by=0)
    tick = spec.delayed_delivery_tick_ms
    return o.RetryCopy(key=key, deliver_from=invoked + delay_ms - tick, deliver_by=at + delay_ms + tick)


def _timeouts_elsewhere(state: PartitionedState, at: int) -> tuple[tuple[int, str, tuple[int, int]], ...]:
    """(partition, consumer, window) of the ack timeouts that run out by `at` (in any state a
    partition may be in) on Exclusive and Failover: the multi-topics consumer's tracker asks
    every partition to redeliver when one of its messages times out."""
    spec = state.spec
    if spec.ack_timeout_ms is None or not spec.subscription_type.single_active_consumer:
        return ()
    # The timer runs out between the timeout counted from the receive's start and one tick after
    # the timeout counted from its reply: the message's own window.
    return tuple({(p, m.holder, (m.timeout_from, m.redelivery_by))
                  for p, part in enumerate(state.parts) for each in part for m in each.messages
                  if m.status is HELD and m.timeout_from is not None and each.now < m.timeout_from <= at})


def _timed_out(state: State, elsewhere, partition: int) -> State:
    """`state` of `partition` with the rewinds other partitions' timeouts ask of it."""
    for p, consumer, window in elsewhere:
        if p != partition:
            state = timed_out_elsewhere(state, consumer, window)
    return state


def _route(state: PartitionedState, op: o.Op, completion: o.Completion):
    """(the partition that takes `op`, or None for all; the op and completion in its terms; the
    placement after it), or a violation."""
    placed = state.placed
    if isinstance(op, o.Send) and completion.outcome is o.Outcome.OK and state.spec.retry_letter_topic:
        return 0, op, completion, placed + ((0, len(state.entries_of(0))),)  # the producer's topic
    if isinstance(op, o.Subscribe) and completion.outcome is not o.Outcome.OK and state.spec.retry_letter_topic:
        # The multi-topics consumer is not made when one topic refuses it (an Exclusive holder's
        # topic): the retry topic, Shared, sees nothing.
        return 0, op, completion, placed
    if isinstance(op, o.Send) and completion.outcome is o.Outcome.OK:
        p = completion.partition
        if p is None or not 0 <= p < state.spec.routed_topics:
            raise ValueError(f"a send among {state.spec.routed_topics} topics completed with partition {p!r}: "
                             "the target must say which partition (or which of the topics) it published to")
        entry = len(state.entries_of(p))
        return p, op, completion, placed + ((p, entry),)
    if isinstance(op, o.Receive) and isinstance(completion.value, o.Delivery):
        delivery = completion.value
        found = state.local(delivery.message)
        if found is None:
            return Violation(guarantee=Guarantee.NO_PHANTOM, detail=f"{op.consumer} received {delivery.message}, "
                                                                    "never published")
        p, local = found
        return p, op, replace(completion, value=replace(delivery, message=local)), placed
    if isinstance(op, NAMING):
        found = state.local(op.message)
        if found is None:
            raise ValueError(f"{type(op).__name__} of {op.message}, which no send published: the program is malformed")
        p, local = found
        return p, replace(op, message=local), completion, placed
    return None, op, completion, placed


_ID = re.compile(r"\bm(\d+)(?=\b|\.)")


def in_program_terms(state: PartitionedState, partition: int, violation: Violation) -> Violation:
    """A partition's violation with its message ids as the program numbers them, and its partition named."""
    entries = state.entries_of(partition)

    def renumber(found: re.Match) -> str:
        k = int(found.group(1))
        return f"m{entries[k]}" if k < len(entries) else found.group(0)

    if state.spec.retry_letter_topic:
        where = "the retry letter topic" if partition == RETRY else "the topic"
    else:
        where = f"topic {partition}" if state.spec.multi_topics else f"partition {partition}"
    detail = _ID.sub(renumber, violation.detail)
    if violation.guarantee is Guarantee.CURSOR:
        # A cursor's entries are the partition's own: say which program message each one is.
        detail += "; its entries " + ", ".join(f"{k}=m{e}" for k, e in enumerate(entries))
    return replace(violation, detail=f"{where}: {detail}")


def route_send(op: o.Send, partitions: int, sent: int) -> int:
    """The partition an ideal producer sends to, after `sent` entries: by its key's hash, else round
    robin over the sends."""
    key = op.keys[0]
    if key is not None:
        return zlib.crc32(key.encode()) % partitions
    return sent % partitions

