"""Every proof of the project, each with the guarantee (model/guarantees.py) it supports, and for
each guarantee without a proof the reason there is none.

`PROOFS` is the one list the proofs' test runs (suites/invariants/test_proofs.py) and the table of
guarantees reads: a proof function of the encodings' modules that is not listed here fails that
test, and so does a guarantee that is neither proved by some proof nor given a reason in
`NO_PROOF_BECAUSE`. A proof supports its guarantee for the encoding it is stated over (the cursor,
model/smt/cursor_proofs.py; one message's redelivery counter, model/smt/counter.py); the fidelity
tests (suites/invariants/test_fidelity.py) hold the encodings to the Python model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from model.guarantees import Guarantee
from model.smt import counter, cursor_proofs
from model.smt.induction import ProofResult


@dataclass(frozen=True, slots=True, kw_only=True)
class Proof:
    """A one-step inductive proof: `prove()` returns Proved(property=name), Refuted or Unknown."""

    name: str
    guarantee: Guarantee
    prove: Callable[[], ProofResult]
    doc: str


PROOFS: tuple[Proof, ...] = (
    Proof(name="holes_normalized", guarantee=Guarantee.CURSOR, prove=cursor_proofs.prove_holes_normalized,
          doc="the individually deleted ranges lie above markDeletePosition without touching it, and batch "
              "indexes and the read position stay in normal form, after every op"),
    Proof(name="acked_exactly", guarantee=Guarantee.CURSOR, prove=cursor_proofs.prove_acked_exactly,
          doc="an entry reads as acknowledged (at or below markDeletePosition, or in a deleted range) exactly "
              "when the acks, seeks and crashes so far specify it"),
    Proof(name="mark_delete_monotone", guarantee=Guarantee.CURSOR, prove=cursor_proofs.prove_mark_delete_monotone,
          doc="markDeletePosition never moves back, except by a seek (to its target) and a crash (not below "
              "what was persisted)"),
    Proof(name="cumulative_acks_prefix", guarantee=Guarantee.CURSOR, prove=cursor_proofs.prove_cumulative_acks_prefix,
          doc="acknowledge_cumulative of an entry acknowledges every entry up to it"),
    Proof(name="backlog", guarantee=Guarantee.CURSOR, prove=cursor_proofs.prove_backlog,
          doc="the broker's backlog (entries after markDeletePosition minus the deleted ranges) counts the "
              f"unacknowledged entries, on topics of up to {cursor_proofs.BACKLOG_BOUND} entries"),
    Proof(name="acked_survives_unload", guarantee=Guarantee.NO_REDELIVERY_AFTER_ACK,
          prove=cursor_proofs.prove_acked_survives_unload,
          doc="a topic unload or graceful restart keeps every acknowledged entry, and reading starts again "
              "after markDeletePosition"),
    Proof(name="unacked_read_again", guarantee=Guarantee.NO_LOSS, prove=cursor_proofs.prove_unacked_read_again,
          doc="an unacknowledged entry stays unacknowledged until an ack or a seek names it, and every rewind, "
              "unload, crash and seek reads again from at or before it"),
    Proof(name="redelivery_count", guarantee=Guarantee.REDELIVERY_COUNT, prove=counter.prove_redelivery_count,
          doc="a message's redelivery count grows by one per redelivery on Shared/Key_Shared, is kept by a "
              "close, is 0 again after the last consumer's close and a reopen, and is always 0 on "
              "Exclusive/Failover"),
    Proof(name="dead_letter", guarantee=Guarantee.DEAD_LETTER, prove=counter.prove_dead_letter,
          doc="a redelivery request sends the message to the dead-letter topic exactly when the count it was "
              "delivered with reached max_redeliver_count on Shared/Key_Shared, and nothing else does"),
)


NO_PROOF_BECAUSE: Mapping[Guarantee, str] = MappingProxyType({
    Guarantee.NO_DUPLICATE_WITHOUT_CAUSE:
        "A property of dispatch across consumers (a message one consumer holds is not sent to another without "
        "a cause); the counter's encoding has no consumers and takes 'only an available message is received' "
        "as a precondition, so a proof there would restate its assumption.",
    Guarantee.NO_PHANTOM:
        "A property of what the dispatcher sends, which no encoding models; the cursor's encoding only ranges "
        "over published entries by its precondition.",
    Guarantee.ORDER:
        "A property of the order of each consumer's first deliveries, across consumers and redeliveries; the "
        "encodings have no dispatch, only where the cursor reads again.",
    Guarantee.CUMULATIVE_REFUSED_ON_SHARED:
        "The refusal of one call by subscription type, decided before any state changes: a precondition of "
        "the op with nothing carried from step to step to induct on, and the cursor's encoding has no "
        "subscription type.",
    Guarantee.EXCLUSIVE:
        "A refusal at subscribe (ConsumerBusy) decided by the consumers connected, which no encoding models; "
        "there is no state to carry from step to step.",
    Guarantee.KEY_SHARED_STICKINESS:
        "A property of dispatch order across consumers (which consumer a key's messages go to as consumers "
        "come and go), not of one message or the cursor.",
    Guarantee.ACK:
        "A property of the reply a connected consumer's acknowledge gets, not of the state it leaves (the "
        "cursor's part is proved under cursor).",
    Guarantee.SUBSCRIBE:
        "A property of the reply to subscribe by subscription type, with no state carried from step to step.",
    Guarantee.RECEIVER_QUEUE:
        "A property of flow control between the dispatcher and each consumer (permits, receiver queues), "
        "which no encoding models: neither the cursor nor one message's counter has consumers.",
    Guarantee.RECONSUME_LATER:
        "A property of a client call and of the broker's delayed delivery across two topics (the copy's "
        "window), which no encoding models: the cursor's has one topic and no clock, the counter's one message.",
})
