"""A client crash: `kill -9` of the process that holds the program's consumers and producer.

The broker sees the connection close (ServerCnx.channelInactive) and removes every consumer of the
client, as at a close but with nothing flushed first (model/transitions/consumers.py, `leave`):

- acks the client's grouping tracker still held are lost with it, those it had sent are in the
  cursor, and nothing tells which: each ack not known to have reached the broker is in doubt (its
  message may come once more, an ack with a receipt may not) until a cursor read settles it or the
  message comes again, which proves the ack lost: it is unacknowledged from then on, held by the
  consumer that got it (model/transitions/receive.py); a
  partial batch ack the client kept (no batch-index acks) is certainly lost, and its entry comes
  back whole;
- everything the client held unacknowledged, received or still in its receiver queue, goes back
  to the subscription (each consumer's pendingAcks is replayed), and so do the messages its nack
  and ack-timeout trackers were about to ask for;
- with its last consumer gone the dispatcher clears its redelivery tracker and rewinds to
  markDeletePosition + 1 at the next subscribe (PersistentDispatcherMultipleConsumers.removeConsumer
  and addConsumer): what comes back carries redelivery count 0. A crash is not counted as a
  redelivery, so a message that kills its consumer never reaches the dead-letter topic this way
  (KD-30; apache/pulsar#8722, open; shown by suites/broker/test_client_crash.py::
  test_a_crashed_clients_messages_come_back_with_the_count_started_again_at_zero).

The program's producer goes too; the sends completed before the crash are on the topic.
"""

from __future__ import annotations

from model import ops as o
from model.state import ACKED, State, replace_messages
from model.transitions.consumers import leave
from model.violations import Result


def crash_client(state: State, op: o.CrashClient, completion: o.Completion) -> Result:
    """Every connected consumer leaves at once, its pending acks in doubt rather than flushed
    (shown by suites/broker/test_client_crash.py::test_an_ack_still_grouped_at_a_client_crash_is_lost
    and ::test_an_ack_the_broker_had_stays_after_a_client_crash). So is the ack the client made of
    a message it sent to the dead-letter topic (shown by history
    broker-dead-letter-ack-lost-at-a-client-crash.dead_letter_by_nack-Shared-dlq2). A batch
    message's ack is left to `leave`, which knows whether its entry comes back whole."""
    in_doubt = {m.id: m.with_(extra_deliveries=m.extra_deliveries + 1, ack_in_doubt=True) for m in state.messages
                if m.status is ACKED and not m.ack_confirmed and m.id.index < 0}
    state = replace_messages(state, in_doubt).with_(consumers=tuple(c.with_(pending_acks=()) for c in state.consumers))
    return leave(state, frozenset(c.name for c in state.connected()), owed_entries=None)

