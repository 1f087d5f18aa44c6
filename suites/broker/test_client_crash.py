"""What a client crash leaves on the broker: `kill -9` of the client's process, then a new client.

Each test runs a short program through the Python client's driver process, in lock-step with the
model (which must accept every observation; model/transitions/client_crash.py names these tests),
has the suite kill the process (`crash_client`), lets the next client's consumer subscribe, and
states what the broker did. Observed on Pulsar 4.0.7:

- the crashed client's unacknowledged messages, received or still in its receiver queue, all come
  back to the next consumer with redelivery count 0, even one the broker had counted once: the
  dispatcher clears its redelivery tracker when the last consumer of the subscription goes, so a
  message that kills its client is never counted towards the dead-letter topic
  (apache/pulsar#8722, open since 2020; apache/pulsar#23944);
- an ack the broker had (the cursor showed it) stays: its message does not come back;
- an ack still in the client's grouping tracker (acknowledge, then the crash at once) is lost
  with the process: its message comes back.
"""

import pytest

from fixtures.targets.driver_target import PYTHON_DRIVER, DriverProcess, DriverTarget
from fixtures.targets.lockstep import Lockstep
from fixtures.targets.pulsar_target import BrokerSide
from model import cursor as cur
from model import ops as o
from model.spec import Spec, SubscriptionType

pytestmark = pytest.mark.broker

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=200)
KEY_SHARED = SHARED.with_(subscription_type=SubscriptionType.KEY_SHARED)
EXCLUSIVE = SHARED.with_(subscription_type=SubscriptionType.EXCLUSIVE)
GROUPED_TRIES = 3  # programs that ack then crash at once: the client's 100 ms flush timer may fire between
m = o.MessageId


@pytest.fixture
def crashable(pulsar_broker):
    """The Python client in a driver process of its own, on the session's broker."""
    target = DriverTarget(lambda: DriverProcess(PYTHON_DRIVER), service_url=pulsar_broker.service_url,
                          credentials=pulsar_broker.credentials,
                          broker=BrokerSide(pulsar_broker.admin_url, credentials=pulsar_broker.credentials))
    yield target
    target.close()


def _program(target, observed, names, spec, suffix=""):
    return Lockstep(observed(target), spec, names.topic().rsplit("/", 1)[1] + suffix)


def _crash_and_come_back(run):
    """The client is killed; the next one's consumer c0 subscribes and takes everything."""
    assert run.do(o.CrashClient()).outcome is o.Outcome.OK, "the broker kept the dead client's consumers"
    assert run.do(o.Subscribe(consumer="c0")).outcome is o.Outcome.OK
    return sorted((d.message, d.redelivery_count) for d in run.drain("c0"))


@pytest.mark.parametrize("spec", [SHARED, KEY_SHARED], ids=["Shared", "Key_Shared"])
@pytest.mark.guarantee("redelivery-count", "no-loss")
def test_a_crashed_clients_messages_come_back_with_the_count_started_again_at_zero(crashable, observed, names, spec):
    run = _program(crashable, observed, names, spec)
    for _ in range(3):
        run.do(o.Send(keys=("k",)))
    run.do(o.Subscribe(consumer="c0"))
    assert run.receive("c0", timeout_ms=2000).message == m(0)
    run.do(o.NegativeAcknowledge(consumer="c0", message=m(0)))
    counted = {(d.message, d.redelivery_count) for d in run.drain("c0")}
    assert (m(0), 1) in counted, "the nack's redelivery is counted"
    # c0 holds m0 (count 1), m1 and m2 (count 0) unacknowledged.
    assert _crash_and_come_back(run) == [(m(0), 0), (m(1), 0), (m(2), 0)]


@pytest.mark.guarantee("no-redelivery-after-ack", "cursor")
def test_an_ack_the_broker_had_stays_after_a_client_crash(crashable, observed, names):
    run = _program(crashable, observed, names, EXCLUSIVE)
    for _ in range(3):
        run.do(o.Send())
    run.do(o.Subscribe(consumer="c0"))
    assert [d.message for d in run.drain("c0")] == [m(0), m(1), m(2)]
    run.do(o.Acknowledge(consumer="c0", message=m(0)))
    run.do(o.Tick(ms=300))  # the client's grouping timer (100 ms) sends it
    assert run.do(o.ReadCursor()).value.acknowledged(3) == {0}
    assert _crash_and_come_back(run) == [(m(1), 0), (m(2), 0)]
    assert run.do(o.ReadCursor()).value.acknowledged(3) == {0}


def _two_received_and_m0_acked(crashable, observed, names, attempt):
    run = _program(crashable, observed, names, SHARED, f"-{attempt}")
    for _ in range(2):
        run.do(o.Send())
    run.do(o.Subscribe(consumer="c0"))
    assert [d.message for d in run.drain("c0")] == [m(0), m(1)]
    run.do(o.Acknowledge(consumer="c0", message=m(0)))
    return run


@pytest.mark.guarantee("no-loss", "cursor")
def test_an_ack_still_grouped_at_a_client_crash_is_lost(crashable, observed, names):
    kept = []
    for attempt in range(GROUPED_TRIES):
        run = _two_received_and_m0_acked(crashable, observed, names, attempt)
        back = _crash_and_come_back(run)  # the crash follows the acknowledge at once
        if back == [(m(0), 0), (m(1), 0)]:
            assert not run.do(o.ReadCursor()).value.acknowledged(2)
            return
        kept.append(back)
    pytest.fail(f"in {GROUPED_TRIES} programs the ack made just before the crash reached the broker: {kept}")


@pytest.mark.guarantee("no-loss", "no-redelivery-after-ack")
def test_a_message_whose_ack_was_lost_at_a_crash_comes_back_until_acked(crashable, observed, names):
    """Once it came back, the lost ack is gone for good: the message is unacknowledged like any
    other, and comes again after a close without an ack and after a second crash."""
    for attempt in range(GROUPED_TRIES):
        run = _two_received_and_m0_acked(crashable, observed, names, attempt)
        run.do(o.Acknowledge(consumer="c0", message=m(1)))
        if [d for d, _ in _crash_and_come_back(run)] != [m(0), m(1)]:
            continue  # the client's flush timer sent an ack before the crash
        run.do(o.Close(consumer="c0"))
        run.do(o.Subscribe(consumer="c0"))
        assert [d.message for d in run.drain("c0")] == [m(0), m(1)], "a close gives back what c0 held"
        assert [d for d, _ in _crash_and_come_back(run)] == [m(0), m(1)], "and so does a second crash"
        run.do(o.Acknowledge(consumer="c0", message=m(0)))
        run.do(o.Tick(ms=300))
        assert run.do(o.ReadCursor()).value.acknowledged(2) == {0}
        return
    pytest.fail(f"in {GROUPED_TRIES} programs an ack made just before the crash reached the broker")
