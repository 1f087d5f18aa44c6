"""The state's `with_` (model/state.py): a faster `dataclasses.replace`, and nothing else.

Copying a state is the model's hottest call; `with_` sets each slot directly instead of going
through the generated `__init__`. These tests hold it to `dataclasses.replace` on every field of
every record, on unknown fields, and on whole random programs.
"""

import dataclasses

import pytest

from model.ops import MessageId
from model.simulate import run_random_program
from model.spec import Spec, SubscriptionType
from model.state import Consumer, Message, State, Status, initial

SAMPLES = {
    Message: Message(id=MessageId(3, 1), key="k", status=Status.HELD, holder="c1", count_hi=2),
    Consumer: Consumer(name="c1", pending_acks=(("individual", MessageId(1)),)),
    State: initial(Spec(subscription_type=SubscriptionType.KEY_SHARED)),
}
OTHER = {int: 7, bool: True, str: "x", tuple: (MessageId(9),)}


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
