"""The model's checks (model/checks.py) and their map to the guarantees (`RULES`).

Every guarantee of model/guarantees.py has at least one named check, every `check_*` function
serves one, and each check, on a small state crafted to break its guarantee, returns a violation
naming that guarantee (so a check filed under the wrong guarantee fails here). The deterministic
core never asks the solver: only model/nondet.py imports model.smt.
"""

import ast
import inspect
from pathlib import Path

import pytest

from model import checks
from model import ops as o
from model.checks import RULES
from model.cursor import Cursor
from model.guarantees import Guarantee
from model.spec import Spec, SubscriptionType
from model.state import Consumer, Message, State, Status
from model.violations import Violation

M0, M1 = o.MessageId(0), o.MessageId(1)
SHARED, EXCLUSIVE, KEY_SHARED = Spec(), Spec(subscription_type=SubscriptionType.EXCLUSIVE), \
    Spec(subscription_type=SubscriptionType.KEY_SHARED)


def _state(spec: Spec, *messages: Message, consumers: tuple[str, ...] = ("c0",), **fields) -> State:
    return State(spec=spec, messages=messages, entries=tuple(0 for _ in messages),
                 consumers=tuple(Consumer(name=c, serial=i + 1) for i, c in enumerate(consumers)), **fields)


def _held(message_id: o.MessageId = M0, **fields) -> Message:
    return Message(id=message_id, status=Status.HELD, holder="c0", delivered=True, **fields)


def _crafted_cases():
    """For each check, the arguments of an observation that breaks its guarantee."""
    dlq = Spec(max_redeliver_count=1)
    yield checks.check_no_phantom, (_state(SHARED), "c0", M1)
    yield checks.check_dead_letter, (_state(dlq, _held()), _held(), 2)
    yield checks.check_no_duplicate_without_cause, (_state(SHARED, _held()), _held(), "c1")
    acked = Message(id=M0, status=Status.ACKED, delivered=True, ack_confirmed=True)
    yield checks.check_no_redelivery_after_ack, (_state(SHARED, acked), acked, "c0")
    ahead = Consumer(name="c0", last_first_delivery=checks.order_key(M1))
    yield checks.check_order, (_state(SHARED, Message(id=M0)), Message(id=M0), ahead)
    keyed = Message(id=M0, key="k")
    owned = _state(KEY_SHARED, keyed, consumers=("c0", "c1"), key_owners=(("k", "c0", ()),))
    yield checks.check_key_shared_stickiness, (owned, keyed, "c1")
    yield checks.check_redelivery_count, (_state(EXCLUSIVE, _held()), _held(), 1)
    yield checks.check_exclusive, (_state(EXCLUSIVE), "c1")
    yield checks.check_subscribe, (_state(SHARED, consumers=()), "c0", o.fail("ConsumerBusy"))
    yield checks.check_ack, (_state(SHARED, _held()), o.Acknowledge(consumer="c0", message=M0), o.fail("Timeout"))
    yield (checks.check_cumulative_refused_on_shared,
           (_state(SHARED, _held()), o.AcknowledgeCumulative(consumer="c0", message=M0), o.ok()))
    unacked = _state(SHARED, _held())
    yield checks.check_cursor, (unacked, Cursor(mark_delete=0), checks.cursor_bounds(unacked, flushed=unacked))
    yield checks.check_no_loss, (_state(SHARED, Message(id=M0)),)
    queue_of_one = Spec(receiver_queue_size=1)
    yield checks.check_receiver_queue, (_state(queue_of_one, Message(id=M0), Message(id=M1), consumers=("c0", "c1")),
                                        frozenset({"c0"}))
    delayed = Message(id=M0, deliver_from=3000, deliver_by=5000)
    yield checks.check_reconsume_delay, (_state(SHARED, delayed, now=2999), delayed)
    yield (checks.check_reconsume_later,
           (_state(SHARED, _held()), o.ReconsumeLater(consumer="c0", message=M0), o.info("Timeout")))


CASES = dict(_crafted_cases())
RULE_PAIRS = [(guarantee, check) for guarantee, rules in RULES.items() for check in rules]


def test_every_guarantee_has_a_rule():
    assert [g for g in Guarantee if not RULES.get(g)] == []


def test_every_check_serves_a_guarantee_and_has_a_crafted_case():
    named = {f for name, f in inspect.getmembers(checks, inspect.isfunction) if name.startswith("check_")}
    assert named == {check for _, check in RULE_PAIRS}
    assert named == set(CASES)


@pytest.mark.parametrize(("guarantee", "check"), RULE_PAIRS, ids=[f"{g}-{c.__name__}" for g, c in RULE_PAIRS])
def test_a_check_names_its_guarantee(guarantee, check):
    violation = check(*CASES[check])
    assert isinstance(violation, Violation), f"{check.__name__} allowed the crafted observation"
    assert violation.guarantee is guarantee, violation.describe()


def test_the_drain_checks_allow_a_state_with_nothing_owed():
    assert checks.check_no_loss(_state(SHARED, _held())) is None
    roomy = _state(SHARED, Message(id=M0), consumers=("c0", "c1"))
    assert checks.check_receiver_queue(roomy, frozenset({"c0"})) is None


def test_only_the_non_deterministic_layer_imports_the_solver():
    model_dir = Path(checks.__file__).parent
    importers = []
    for path in sorted(model_dir.rglob("*.py")):
        if path.parent.name == "smt" or path.name == "nondet.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(name == "z3" or name.startswith(("model.smt", "z3.")) for name in names):
                importers.append(str(path.relative_to(model_dir)))
    assert importers == []
