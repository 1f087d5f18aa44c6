"""The model's fast record copies and constructors (model/records.py), and nothing else.

Copying a state is the model's hottest call; `with_` and the makers build a record without the
frozen `__init__`'s per-field `object.__setattr__`. These tests hold `with_` to
`dataclasses.replace` on every field of every record, on unknown fields and on whole random
programs, and each maker to its class's constructor; and the order of the messages, by id, that
the state's lookups rely on.
"""

import dataclasses
import random

import pytest

from model import ops as o
from model.cursor import Cursor, _make_cursor
from model.ops import MessageId
from model.records import copier, maker
from model.simulate import _make_delivery, respond, run_random_program
from model.spec import Spec, SubscriptionType
from model.state import Consumer, Message, State, Status, _make_message, initial
from model.nondet import step_decided
from model.vocabulary import random_op

SAMPLES = {
    Message: Message(id=MessageId(3, 1), key="k", status=Status.HELD, holder="c1", count_hi=2),
    Consumer: Consumer(name="c1", pending_acks=(("individual", MessageId(1)),)),
    State: initial(Spec(subscription_type=SubscriptionType.KEY_SHARED)),
}
OTHER = {MessageId: MessageId(9), int: 7, bool: True, str: "x", tuple: (MessageId(9),)}


def _another(value):
    for kind, other in OTHER.items():
        if isinstance(value, kind) and value != other:
            return other
    return None if value is not None else "x"


@pytest.mark.parametrize("record", list(SAMPLES), ids=lambda c: c.__name__)
def test_with_equals_replace_on_every_field(record):
    sample = SAMPLES[record]
    for field in dataclasses.fields(record):
        changes = {field.name: _another(getattr(sample, field.name))}
        copy = sample.with_(**changes)
        assert type(copy) is record
        assert copy == dataclasses.replace(sample, **changes)
        assert getattr(copy, field.name) == changes[field.name]
        assert copy is not sample
    assert sample.with_() == sample


@pytest.mark.parametrize("record", list(SAMPLES), ids=lambda c: c.__name__)
def test_with_an_unknown_field_raises_like_replace(record):
    with pytest.raises(TypeError):
        SAMPLES[record].with_(no_such_field=1)


def test_a_copy_is_still_frozen_and_hashes_like_the_original():
    state = SAMPLES[State].with_(now=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.now = 6
    assert hash(state) == hash(dataclasses.replace(SAMPLES[State], now=5))


@pytest.mark.parametrize("kind", list(SubscriptionType))
def test_programs_run_the_same_with_replace(kind, monkeypatch):
    spec = Spec(subscription_type=kind)
    fast = [run_random_program(spec, seed, 40) for seed in range(15)]
    for record in SAMPLES:
        monkeypatch.setattr(record, "with_", lambda self, **changes: dataclasses.replace(self, **changes))
    assert [run_random_program(spec, seed, 40) for seed in range(15)] == fast


MADE = {
    Message: (_make_message, {"id": MessageId(2, 0), "key": "k1", "serial": 3}),
    o.Completion: (o._make_completion, {"outcome": o.Outcome.FAIL, "at": 7, "error": "ConsumerBusy"}),
    o.Delivery: (_make_delivery, {"message": MessageId(4), "redelivery_count": 2}),
    Cursor: (_make_cursor, {"mark_delete": 3, "individually_deleted": ((4, 6),), "read_position": 7}),
}


@pytest.mark.parametrize("record", list(MADE), ids=lambda c: c.__name__)
def test_a_maker_builds_what_the_constructor_builds(record):
    make, arguments = MADE[record]
    made = make(**arguments)
    assert type(made) is record
    assert made == record(**arguments) and hash(made) == hash(record(**arguments))
    required = {f.name: arguments[f.name] for f in dataclasses.fields(record) if f.default is dataclasses.MISSING}
    assert make(**required) == record(**required)  # the defaults are the class's
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.__setattr__(dataclasses.fields(record)[0].name, None)
    with pytest.raises(TypeError):
        make(no_such_field=1)


def test_records_the_fast_paths_cannot_copy_are_refused():
    @dataclasses.dataclass(frozen=True, slots=True)
    class WithFactory:
        items: list = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True)
    class WithoutSlots:
        x: int = 0

    @dataclasses.dataclass(frozen=True, slots=True)
    class Derived(o.Delivery):
        extra: int = 0

    for record in (WithFactory, WithoutSlots, Derived):
        for fast in (copier, maker):
            with pytest.raises(TypeError, match="only a slotted dataclass of its own"):
                fast(record)


@pytest.mark.parametrize("kind", list(SubscriptionType))
def test_a_states_messages_stay_in_id_order(kind):
    """state.message, entry_messages and replace_message bisect the messages by id."""
    for seed in range(40):
        rng, state = random.Random(seed), initial(Spec(subscription_type=kind))
        for _ in range(60):
            op = random_op(state, rng)
            state = step_decided(state, op, respond(state, op, rng))
            ids = [m.id for m in state.messages]
            assert ids == sorted(ids) and len(set(ids)) == len(ids)
