"""Short human descriptions of ops, completions and states, used in shrunk failures and reports."""

from __future__ import annotations

from model import cursor as cur
from model import ops as o
from model.state import State, Status


def describe_op(op: o.Op) -> str:
    match op:
        case o.Send(keys=keys, batched=True):
            return f"send batch of {len(keys)} (keys {list(keys)})"
        case o.Send(keys=(key,)):
            return "send" if key is None else f"send key={key}"
        case o.Subscribe(consumer=c):
            return f"{c}: subscribe"
        case o.Receive(consumer=c):
            return f"{c}: receive"
        case o.Acknowledge(consumer=c, message=m):
            return f"{c}: acknowledge {m}"
        case o.AcknowledgeCumulative(consumer=c, message=m):
            return f"{c}: acknowledge_cumulative {m}"
        case o.NegativeAcknowledge(consumer=c, message=m):
            return f"{c}: negative_acknowledge {m}"
        case o.ReconsumeLater(consumer=c, message=m, delay_ms=ms):
            return f"{c}: reconsume_later {m}" + (f" after {ms} ms" if ms else "")
        case o.RedeliverUnacknowledgedMessages(consumer=c):
            return f"{c}: redeliver_unacknowledged_messages"
        case o.Close(consumer=c):
            return f"{c}: close"
        case o.Seek(consumer=c, message=m):
            return f"{c}: seek {m}"
        case o.Tick(ms=ms):
            return f"wait {ms} ms"
        case o.Unload():
            return "unload topic"
        case o.Restart():
            return "restart broker"
        case o.Crash():
            return "crash broker (kill -9)"
        case o.CrashClient():
            return "crash client (kill -9)"
        case o.CutNetwork(ms=ms):
            return f"cut the network for {ms} ms"
        case o.StallNetwork(ms=ms):
            return f"stall the network for {ms} ms"
        case o.SlowNetwork(ms=ms):
            return f"slow the network down by {ms} ms each way"
        case o.ReadCursor():
            return "read cursor"
    raise TypeError(f"unknown op {op!r}")


def describe_completion(completion: o.Completion) -> str:
    value = completion.value
    if completion.outcome is not o.Outcome.OK:
        return f"{completion.outcome.value} ({completion.error})"
    if value is None:
        return "ok"
    if isinstance(value, o.Delivery):
        return f"ok {value.message} redelivery_count={value.redelivery_count}"
    if isinstance(value, cur.Cursor) or (value and isinstance(value, tuple) and isinstance(value[0], cur.Cursor)):
        return f"ok {cur.describe_read(value)}"
    if isinstance(value, str):
        return f"ok ({value})"
    return f"ok {', '.join(map(str, value))}"


def describe_state(state: State) -> str:
    by_status = {status: [str(m.id) for m in state.messages if m.status is status] for status in Status}
    held = ", ".join(f"{m.id}@{m.holder}" for m in state.messages if m.status is Status.HELD) or "-"
    consumers = ", ".join(c.name for c in state.connected()) or "-"
    unsure = [str(m.id) for m in state.messages if m.dead_letter_unsure]
    maybe = f" maybe-dead-lettered=[{', '.join(unsure)}]" if unsure else ""
    return (f"t={state.now}ms consumers=[{consumers}] available=[{', '.join(by_status[Status.AVAILABLE])}] "
            f"held=[{held}] acked=[{', '.join(by_status[Status.ACKED])}]{maybe} cursor: {cur.describe(state.cursor)}")
