"""The history event schema (model/history.py): what a recorded history keeps, and what a
malformed line is told."""

import json

import pytest

from model import cursor as cur
from model import ops as o
from model.history import MalformedEvent, completion_of, event_of, from_json_line, op_of, spec_id, spec_of, spec_json, \
    to_json_line
from model.spec import Spec, SubscriptionType

SPEC = Spec(subscription_type=SubscriptionType.KEY_SHARED, max_redeliver_count=2)


def line(op, completion, spec=SPEC):
    return to_json_line(event_of("p-1", spec, 3, op, completion))


@pytest.mark.parametrize("op, completion", [
    (o.Receive(consumer="c0", timeout_ms=300), o.ok(o.Delivery(message=o.MessageId(2, 1), redelivery_count=1), at=9)),
    (o.Receive(consumer="c1"), o.ok(None, at=4)),
    (o.Tick(ms=150), o.ok(at=160)),
    (o.Seek(consumer="c0", message=o.MessageId(4)), o.ok(at=1)),
    (o.ReadCursor(), o.ok(cur.from_acknowledged({5, 6}, mark_delete=2), at=7)),
    # One cursor per partition (or topic) of a consumer of several, each in its own entries.
    (o.ReadCursor(), o.ok((cur.from_acknowledged({3}, mark_delete=1), cur.Cursor()), at=7)),
    (o.AcknowledgeCumulative(consumer="c0", message=o.MessageId(1)), o.fail("CumulativeAcknowledgementNotAllowedError")),
])
def test_an_event_round_trips_what_the_model_checks(op, completion):
    event = from_json_line(line(op, completion))
    assert op_of(event) == op
    assert completion_of(event) == completion


def test_the_spec_id_ignores_fields_left_at_their_default():
    """A field added to Spec later keeps the ids of corpora written before it."""
    assert spec_id(Spec()) != spec_id(SPEC)
    trimmed = {k: v for k, v in json.loads(spec_json(SPEC)).items() if k != "ack_timeout_tick_ms"}
    assert spec_of(json.dumps(trimmed)) == SPEC  # an older spec text without a newer field


def test_a_field_the_spec_no_longer_has_reads_at_the_value_it_always_held():
    """Stored histories keep every field of the spec they ran under, one retired since among them."""
    older = {**json.loads(spec_json(SPEC)), "dlq_deliveries_are_max_plus_one": True}
    assert spec_of(json.dumps(older)) == SPEC
    with pytest.raises(MalformedEvent, match="dlq_deliveries_are_max_plus_one other than True"):
        spec_of(json.dumps({**older, "dlq_deliveries_are_max_plus_one": False}))


@pytest.mark.parametrize("change, message", [
    ({"step": "3"}, "step must be an integer"),
    ({"step": True}, "step must be an integer"),
    ({"entry": 1.5}, "entry must be an integer"),
    ({"keys": "k0"}, "keys must be a list"),
    ({"batched": 1}, "batched must be true or false"),
    ({"outcome": "maybe"}, "outcome must be ok, fail or info"),
    ({"spec": "{"}, "spec is not JSON"),
    ({"spec": '{"colour": 1}'}, "unknown fields ['colour']"),
    ({"spec": '{"subscription_type": "Queue"}'}, "spec: "),
    ({"cursor": "three"}, "cursor must read like"),
    ({"program_id": None}, "program_id must be a string"),
])
def test_a_malformed_event_says_what_is_wrong(change, message):
    raw = json.loads(line(o.ReadCursor(), o.ok(cur.Cursor())))
    raw.update(change)
    with pytest.raises(MalformedEvent, match=message.replace("[", r"\[").replace("]", r"\]")):
        from_json_line(json.dumps(raw), where="h.jsonl:4: ")
