"""A history drawn as a picture: one lane per actor over time, the broker's cursor underneath.

`layout(events)` reads a history (model/history.py events, in step order) into a `Timeline`: one
column per event; a producer lane with the sends (each entry in its own colour, its key under it);
one lane per consumer with its subscribe, receives (message and redelivery count; a second ring
and a dashed link from the previous delivery when the message comes again), acks, cumulative
acks, nacks, redelivery requests, seeks and close, the consumer's connected time as a band; a
client crash on the producer lane, ending every consumer's band; a broker lane for waits, unloads,
restarts and crashes; and, for every cursor read, a column of the
topic's entries: acknowledged up to markDeletePosition, individually deleted above it, the holes
between, with markDeletePosition as a line across reads. `render(timeline)` draws it as inline SVG
(no scripts, no external references; each event is a `<g class="ev">` with a tooltip);
`timeline_html` puts it in a box that scrolls sideways with the lane names drawn apart over its
left edge (`names_svg`, sticky), so that a long history keeps saying whose lane is whose.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from model import ops as o
from model.describe import describe_completion, describe_op
from model.history import Event, completion_of, cursor_of, op_of

COL, LEFT, RIGHT, TOP, LANE, CELL = 46, 104, 36, 52, 58, 15
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2", "#edc948", "#9c755f",
           "#ff9da7", "#8cd17d", "#499894", "#d37295")
ACK, NACK, SEEK, BROKER, FAIL = "#2e7d32", "#e65100", "#6a1b9a", "#455a64", "#c62828"
CONSUMER_OPS = {"subscribe", "receive", "acknowledge", "acknowledge_cumulative", "negative_acknowledge",
                "redeliver_unacknowledged_messages", "close", "seek", "reconsume_later"}
BROKER_OPS = {"tick", "unload", "restart", "crash", "cut_network", "stall_network", "slow_network"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Mark:
    step: int
    lane: str
    kind: str  # the event's op, or "delivery" / "empty" for a receive that got a message / nothing
    label: str = ""
    note: str = ""
    color: str = "#333"
    failed: bool = False  # the completion was fail or info
    redelivery: bool = False
    title: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CursorRead:
    step: int
    entries: int  # entries published by then
    mark_delete: int
    ranges: tuple[tuple[int, int], ...]  # individually deleted, (lower, upper]
    title: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    steps: int
    lanes: tuple[str, ...]
    marks: tuple[Mark, ...]
    reads: tuple[CursorRead, ...]
    links: tuple[tuple[int, str, int, str, str], ...]  # (from step, lane, to step, lane, colour)
    sessions: tuple[tuple[str, int, int], ...]  # (consumer, first step, last step) while connected
    times: tuple[int, ...]
    entries: int
    violation: tuple[str, str, bool] | None = None  # guarantee, detail, found by the final drain check


def colour(entry: int | None) -> str:
    return "#999" if entry is None or entry < 0 else PALETTE[entry % len(PALETTE)]


def message_text(entry: int | None, index: int | None) -> str:
    return "?" if entry is None else str(o.MessageId(entry, -1 if index is None else index))


def story(events) -> list[str]:
    """Each event as a line: `c0: receive -> ok m2 redelivery_count=0 @0ms` (sends name their entry)."""
    lines, entry = [], 0
    for event in events:
        if event.op == "send" and event.outcome == "ok":
            result = f"ok m{entry}" + (f" ({event.sent} messages)" if event.batched else "")
            entry += 1
        else:
            result = describe_completion(completion_of(event))
        lines.append(f"{describe_op(op_of(event))} -> {result} @{event.at}ms")
    return lines


def layout(events, *, violation: tuple[str, str, bool] | None = None) -> Timeline:
    events = list(events)
    consumers = list(dict.fromkeys(e.consumer for e in events if e.op in CONSUMER_OPS and e.consumer))
    lanes = ["producer", *consumers] + (["broker"] if any(e.op in BROKER_OPS for e in events) else [])
    titles = story(events)
    marks, reads, links, sessions = [], [], [], []
    entry, last_delivery, connected = 0, {}, {}
    for i, (e, title) in enumerate(zip(events, titles)):
        failed = e.outcome != "ok"
        title = f"{i}. {title}" + (f" ({e.error})" if e.error and not failed else "")
        if e.op == "send":
            key = (e.keys or (None,))[0] if not e.batched else None
            label = f"m{entry}" + (f"×{len(e.keys or ())}" if e.batched else "")
            marks.append(Mark(step=i, lane="producer", kind="send", label=label, title=title, failed=failed,
                              note="" if key is None else str(key), color=colour(None if failed else entry)))
            entry += 0 if failed else 1
        elif e.op == "read_cursor":
            cursor = cursor_of(e.cursor) if e.cursor is not None else None
            if isinstance(cursor, tuple):
                # One cursor per partition, each in its own entries: the lanes draw one topic's.
                marks.append(Mark(step=i, lane="broker" if "broker" in lanes else "producer", kind="read_cursor",
                                  label="cursors", failed=False, title=title, color=colour(None)))
            elif cursor is not None:
                reads.append(CursorRead(step=i, entries=entry, mark_delete=cursor.mark_delete,
                                        ranges=tuple(cursor.individually_deleted), title=title))
            else:
                marks.append(Mark(step=i, lane="broker" if "broker" in lanes else "producer", kind="read_cursor",
                                  label="cursor?", failed=True, title=title, color=FAIL))
        elif e.op == "crash_client":
            # The client's process is gone: its producer (this lane) and every consumer's session.
            marks.append(Mark(step=i, lane="producer", kind="crash", label="client crash", failed=failed,
                              title=title, color=FAIL))
            sessions += [(c, start, i) for c, start in connected.items()]
            connected.clear()
        elif e.op in BROKER_OPS:
            label = f"+{e.ms}ms" if e.op == "tick" else e.op
            marks.append(Mark(step=i, lane="broker", kind=e.op, label=label, failed=failed, title=title,
                              color=FAIL if e.op == "crash" else BROKER))
        elif e.op == "receive" and e.delivered_entry is not None:
            mid = (e.delivered_entry, e.delivered_index)
            again = mid in last_delivery
            if again:
                links.append((last_delivery[mid][0], last_delivery[mid][1], i, e.consumer, colour(e.delivered_entry)))
            last_delivery[mid] = (i, e.consumer)
            count = e.redelivery_count or 0
            marks.append(Mark(step=i, lane=e.consumer, kind="delivery", title=title, redelivery=again,
                              label=message_text(*mid), note=f"rc={count}" if count or again else "",
                              color=colour(e.delivered_entry)))
        else:
            marks.append(_consumer_mark(i, e, title, failed))
            if e.op == "subscribe" and not failed:
                connected[e.consumer] = i
            if e.op == "close" and e.consumer in connected:
                sessions.append((e.consumer, connected.pop(e.consumer), i))
    sessions += [(c, start, len(events) - 1) for c, start in connected.items()]
    entries = max([entry] + [r.mark_delete + 1 for r in reads] + [hi + 1 for r in reads for _, hi in r.ranges])
    return Timeline(steps=len(events), lanes=tuple(lanes), marks=tuple(marks), reads=tuple(reads),
                    links=tuple(links), sessions=tuple(sessions), times=tuple(e.at for e in events),
                    entries=entries, violation=violation)


def _consumer_mark(i: int, e: Event, title: str, failed: bool) -> Mark:
    message = message_text(e.entry, e.index) if e.entry is not None else ""
    kinds = {
        "subscribe": ("sub", ACK if not failed else FAIL), "close": ("close", "#222"),
        "acknowledge": (f"ack {message}", ACK), "acknowledge_cumulative": (f"ack≤{message}", ACK),
        "negative_acknowledge": (f"nack {message}", NACK), "redeliver_unacknowledged_messages": ("redeliver", NACK),
        "seek": (f"seek {message}", SEEK), "receive": ("", "#999"),
        "reconsume_later": (f"retry {message}" + (f" +{e.ms}ms" if e.ms else ""), NACK),
    }
    label, color = kinds.get(e.op, (e.op, "#333"))
    kind = "empty" if e.op == "receive" else e.op
    note = e.outcome if failed else ""
    return Mark(step=i, lane=e.consumer or "producer", kind=kind, label=label, note=note, color=color,
                failed=failed, title=title)


# -- drawing -------------------------------------------------------------------------------------
def _frame(timeline: Timeline) -> tuple[int, int, dict[str, int], int]:
    """The picture's width and height, each lane's y, and the top of the cursor panel."""
    extra = 1 if timeline.violation and timeline.violation[2] else 0
    width = LEFT + (timeline.steps + extra) * COL + RIGHT
    lanes_bottom = TOP + len(timeline.lanes) * LANE
    panel_top = lanes_bottom + 26
    panel_bottom = panel_top + timeline.entries * CELL if timeline.reads else lanes_bottom
    height = panel_bottom + (34 if timeline.violation else 14)
    lane_y = {lane: TOP + k * LANE + LANE // 2 for k, lane in enumerate(timeline.lanes)}
    return width, height, lane_y, panel_top


def render(timeline: Timeline, *, names: bool = True) -> str:
    """The picture; `names=False` leaves out the left column's words (lane names, axis and cursor
    labels), which `names_svg` draws apart so that a page can keep them in view."""
    columns = timeline.steps + (1 if timeline.violation and timeline.violation[2] else 0)
    width, height, lane_y, panel_top = _frame(timeline)
    out = [f'<svg class="timeline" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="timeline of {timeline.steps} events" font-family="DejaVu Sans, Arial, sans-serif" '
           f'font-size="10">', f'<rect width="{width}" height="{height}" fill="#fff"/>']
    out += _violation_band(timeline, lane_y, height, columns)
    out += _axes(timeline, lane_y, width)
    if names:
        out += _names(timeline, lane_y, panel_top)
    for consumer, start, end in timeline.sessions:
        y = lane_y[consumer]
        out.append(f'<rect class="session" x="{_x(start)}" y="{y - 13}" width="{_x(end) - _x(start)}" height="26" '
                   f'rx="6" fill="#e8f0fe"/>')
    for a, lane_a, b, lane_b, color in timeline.links:
        x1, y1, x2, y2 = _x(a), lane_y[lane_a], _x(b), lane_y[lane_b]
        out.append(f'<path class="redelivery" d="M{x1},{y1} C{(x1 + x2) / 2},{y1 + 24} {(x1 + x2) / 2},{y2 + 24} '
                   f'{x2},{y2}" fill="none" stroke="{color}" stroke-width="1.5" stroke-dasharray="4 3" opacity="0.8"/>')
    raised: dict[str, tuple[int, bool]] = {}  # lane -> (step, raised) of its last labelled mark
    for mark in sorted(timeline.marks, key=lambda m: m.step):
        before = raised.get(mark.lane)
        lift = bool(mark.label) and mark.kind != "send" and before is not None and before == (mark.step - 1, False)
        if mark.label and mark.kind != "send":
            raised[mark.lane] = (mark.step, lift)
        out.append(_mark(mark, _x(mark.step), lane_y[mark.lane], lift=lift))
    if timeline.reads:
        out += _cursor_panel(timeline, panel_top)
    out.append("</svg>")
    return "\n".join(out)


def names_svg(timeline: Timeline) -> str:
    """The left column of `render`'s picture alone (lane names, axis and cursor labels) on white,
    as wide as the margin left of the first step: drawn over the picture, it stays in view while
    the picture scrolls under it."""
    _, height, lane_y, panel_top = _frame(timeline)
    return (f'<svg class="lane-names" width="{LEFT}" height="{height}" viewBox="0 0 {LEFT} {height}" role="img" '
            f'aria-label="lanes" font-family="DejaVu Sans, Arial, sans-serif" font-size="10" '
            f'style="position: sticky; left: 0; z-index: 1; flex: none; margin-right: -{LEFT}px">'
            f'<rect width="{LEFT - 4}" height="{height}" fill="#fff" opacity="0.94"/>'
            f'<line x1="{LEFT - 4}" y1="0" x2="{LEFT - 4}" y2="{height}" stroke="#e0e0e0"/>'
            + "".join(_names(timeline, lane_y, panel_top)) + "</svg>")


def _names(timeline: Timeline, lane_y: dict[str, int], panel_top: int) -> list[str]:
    out = ['<text x="8" y="16" fill="#666">step</text>', '<text x="8" y="32" fill="#666">time (ms)</text>']
    out += [f'<text class="lane" x="8" y="{y + 4}" font-size="12" font-weight="bold" fill="#222">{escape(lane)}</text>'
            for lane, y in lane_y.items()]
    if timeline.reads:
        out.append(f'<text x="8" y="{panel_top - 10}" font-size="12" font-weight="bold" fill="#222">cursor</text>')
        out += [f'<text x="{LEFT - 10}" y="{panel_top + e * CELL + 10}" text-anchor="end" fill="{colour(e)}" '
                f'font-weight="bold">m{e}</text>' for e in range(timeline.entries)]
    return out


def _x(step: int) -> float:
    return LEFT + step * COL + COL / 2


def _axes(timeline: Timeline, lane_y: dict[str, int], width: int) -> list[str]:
    out, previous = [], None
    for i, at in enumerate(timeline.times):
        out.append(f'<text x="{_x(i)}" y="16" text-anchor="middle" fill="#666">{i}</text>')
        if at != previous:
            out.append(f'<text x="{_x(i)}" y="32" text-anchor="middle" fill="#333">{at}</text>')
            out.append(f'<line x1="{_x(i) - COL / 2}" y1="36" x2="{_x(i) - COL / 2}" y2="{TOP - 4}" stroke="#bbb"/>')
            previous = at
    for lane, y in lane_y.items():
        out.append(f'<line x1="{LEFT - 6}" y1="{y}" x2="{width - RIGHT + 10}" y2="{y}" stroke="#ccc"/>')
    return out


def _violation_band(timeline: Timeline, lane_y: dict[str, int], height: int, columns: int) -> list[str]:
    if not timeline.violation:
        return []
    guarantee, detail, drained = timeline.violation
    step = columns - 1
    x = _x(step)
    anchor = "end" if step > 3 else "start"
    text_x = x + COL / 2 if anchor == "end" else x - COL / 2
    label = "drain check" if drained else ""
    return [f'<rect class="violation" x="{x - COL / 2}" y="{TOP - 6}" width="{COL}" height="{height - TOP}" '
            f'fill="{FAIL}" opacity="0.12"><title>{escape(detail)}</title></rect>',
            f'<text x="{x}" y="{TOP - 8}" text-anchor="middle" fill="{FAIL}" font-size="9">{label}</text>',
            f'<text x="{text_x}" y="{height - 10}" text-anchor="{anchor}" fill="{FAIL}" font-size="12" '
            f'font-weight="bold">✗ broke {escape(guarantee)}</text>']


def _mark(mark: Mark, x: float, y: int, *, lift: bool = False) -> str:
    """One event's shape, its label above (`lift`: higher, when the previous column's label is in the
    way), its note below, and its tooltip."""
    body = {
        "send": lambda: (f'<rect x="{x - 18}" y="{y - 9}" width="36" height="18" rx="4" fill="{mark.color}"'
                         f'{_dash(mark)}/><text x="{x}" y="{y + 4}" text-anchor="middle" fill="#fff" '
                         f'font-weight="bold">{escape(mark.label)}</text>'),
        "delivery": lambda: ((f'<circle cx="{x}" cy="{y}" r="12" fill="none" stroke="{mark.color}" '
                              f'stroke-width="2"/>' if mark.redelivery else "")
                             + f'<circle cx="{x}" cy="{y}" r="8" fill="{mark.color}"/>'),
        "empty": lambda: f'<circle cx="{x}" cy="{y}" r="3" fill="#fff" stroke="#aaa"/>',
        "subscribe": lambda: f'<path d="M{x - 7},{y - 8} L{x + 8},{y} L{x - 7},{y + 8} Z" fill="{mark.color}"/>',
        "close": lambda: f'<rect x="{x - 6}" y="{y - 6}" width="12" height="12" fill="{mark.color}"/>',
        "acknowledge": lambda: (f'<path d="M{x - 7},{y} L{x - 2},{y + 6} L{x + 8},{y - 7}" fill="none" '
                                f'stroke="{mark.color}" stroke-width="3"/>'),
        "acknowledge_cumulative": lambda: (f'<path d="M{x - 8},{y - 2} L{x - 4},{y + 6} L{x + 2},{y - 7} '
                                           f'M{x - 1},{y + 1} L{x + 2},{y + 6} L{x + 9},{y - 7}" fill="none" '
                                           f'stroke="{mark.color}" stroke-width="2.5"/>'),
        "negative_acknowledge": lambda: (f'<path d="M{x - 6},{y - 6} L{x + 6},{y + 6} M{x + 6},{y - 6} '
                                         f'L{x - 6},{y + 6}" stroke="{mark.color}" stroke-width="3"/>'),
        "redeliver_unacknowledged_messages": lambda: (
            f'<path d="M{x + 7},{y} A7,7 0 1,1 {x},{y - 7}" fill="none" stroke="{mark.color}" stroke-width="2.5"/>'
            f'<path d="M{x - 2},{y - 11} L{x + 3},{y - 7} L{x - 2},{y - 3}" fill="{mark.color}"/>'),
        "seek": lambda: (f'<path d="M{x},{y - 8} L{x + 8},{y} L{x},{y + 8} L{x - 8},{y} Z" fill="#fff" '
                         f'stroke="{mark.color}" stroke-width="2.5"/>'),
        "tick": lambda: (f'<path d="M{x - 6},{y - 8} L{x + 6},{y - 8} L{x - 6},{y + 8} L{x + 6},{y + 8} Z" '
                         f'fill="none" stroke="{mark.color}" stroke-width="2"/>'),
        "crash": lambda: (f'<path d="M{x + 2},{y - 10} L{x - 6},{y + 1} L{x},{y + 1} L{x - 2},{y + 10} '
                          f'L{x + 6},{y - 2} L{x},{y - 2} Z" fill="{mark.color}"/>'),
    }.get(mark.kind, lambda: (f'<circle cx="{x}" cy="{y}" r="8" fill="#fff" stroke="{mark.color}" '
                              f'stroke-width="2.5"/>'))()
    labels = ""
    if mark.label and mark.kind != "send":
        labels += (f'<text x="{x}" y="{y - (25 if lift else 15)}" text-anchor="middle" fill="{mark.color}" '
                   f'font-weight="bold">{escape(mark.label)}</text>')
    if mark.note:
        colour_ = FAIL if mark.failed else "#444"
        labels += f'<text x="{x}" y="{y + 22}" text-anchor="middle" fill="{colour_}">{escape(mark.note)}</text>'
    if mark.failed:
        labels += f'<circle cx="{x}" cy="{y}" r="14" fill="none" stroke="{FAIL}" stroke-dasharray="2 2"/>'
    return (f'<g class="ev" data-step="{mark.step}" data-kind="{mark.kind}"><title>{escape(mark.title)}</title>'
            f'{body}{labels}</g>')


def _dash(mark: Mark) -> str:
    return f' stroke="{FAIL}" stroke-dasharray="3 2"' if mark.failed else ""


def _cursor_panel(timeline: Timeline, top: int) -> list[str]:
    bottom = top + timeline.entries * CELL
    out = [f'<line x1="{LEFT - 6}" y1="{top - 4}" x2="{LEFT + timeline.steps * COL}" y2="{top - 4}" stroke="#ccc"/>']
    line = []
    for read in timeline.reads:
        x = _x(read.step)
        cells = []
        for e in range(read.entries):
            y = top + e * CELL
            state = _entry_state(read, e)
            fill, stroke = {"acked": ("#2e7d32", "#1b5e20"), "deleted": ("#a5d6a7", "#2e7d32"),
                            "hole": ("#fff3e0", "#e65100"), "unacked": ("#fff", "#bbb")}[state]
            cells.append(f'<rect class="entry {state}" x="{x - 9}" y="{y + 1}" width="18" height="{CELL - 2}" '
                         f'fill="{fill}" stroke="{stroke}"/>')
        md_y = top + (read.mark_delete + 1) * CELL
        line.append((x, md_y))
        out.append(f'<g class="ev" data-step="{read.step}" data-kind="read_cursor"><title>{escape(read.title)}</title>'
                   f'{"".join(cells)}<text x="{x}" y="{top - 8}" text-anchor="middle" fill="#1b5e20">'
                   f'md={read.mark_delete}</text></g>')
    path = " ".join((f"M{x - 11},{y}" if k == 0 else f"H{x - 11} V{y}") + f" H{x + 11}"
                    for k, (x, y) in enumerate(line))
    out.append(f'<path class="mark-delete" d="{path}" fill="none" stroke="#1b5e20" stroke-width="2.5"/>')
    out.append(f'<line x1="{LEFT - 6}" y1="{bottom + 2}" x2="{LEFT + timeline.steps * COL}" y2="{bottom + 2}" '
               f'stroke="#eee"/>')
    return out


def _entry_state(read: CursorRead, entry: int) -> str:
    """acked (at or below markDelete), deleted (in an individually deleted range), hole (unacked
    below a deleted range), unacked."""
    if entry <= read.mark_delete:
        return "acked"
    if any(lo < entry <= hi for lo, hi in read.ranges):
        return "deleted"
    if read.ranges and entry < read.ranges[-1][1]:
        return "hole"
    return "unacked"


def timeline_svg(events, *, violation: tuple[str, str, bool] | None = None) -> str:
    return render(layout(events, violation=violation))


def timeline_html(events, *, violation: tuple[str, str, bool] | None = None) -> str:
    """The picture in a box that scrolls sideways, its lane names kept in view over it."""
    timeline = layout(events, violation=violation)
    return ('<div class="scroll timeline-scroll"><div style="display: flex; width: max-content">'
            f'{names_svg(timeline)}{render(timeline, names=False)}</div></div>')


LEGEND = (("send", "send: entry (key below)"), ("delivery", "received (rc = redelivery count)"),
          ("redelivery", "received again (dashed: from before)"), ("empty", "receive: nothing came"),
          ("acknowledge", "acknowledge"), ("acknowledge_cumulative", "acknowledge_cumulative"),
          ("negative_acknowledge", "negative_acknowledge"), ("redeliver_unacknowledged_messages", "redeliver unacked"),
          ("seek", "seek"), ("subscribe", "subscribe (band: connected)"), ("close", "close"), ("tick", "wait"))


def legend_svg() -> str:
    """A key to the marks and the cursor cells, drawn with the same shapes."""
    row, per_row, col = 30, 4, 280
    rows = (len(LEGEND) + per_row - 1) // per_row + 1
    width, height = per_row * col, rows * row + 8
    out = [f'<svg class="legend" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="legend" font-family="DejaVu Sans, Arial, sans-serif" font-size="11">']
    for k, (kind, text) in enumerate(LEGEND):
        x, y = 20 + (k % per_row) * col, 18 + (k // per_row) * row
        mark = Mark(step=0, lane="", kind="delivery" if kind == "redelivery" else kind, redelivery=kind == "redelivery",
                    label="m0" if kind == "send" else "", color={"acknowledge": ACK, "acknowledge_cumulative": ACK,
                                                                 "negative_acknowledge": NACK, "seek": SEEK,
                                                                 "redeliver_unacknowledged_messages": NACK,
                                                                 "subscribe": ACK, "close": "#222",
                                                                 "tick": BROKER, "empty": "#999"}.get(kind, colour(0)))
        out.append(_mark(mark, x, y).replace('class="ev"', 'class="key"'))
        out.append(f'<text x="{x + 22}" y="{y + 4}">{escape(text)}</text>')
    y = 12 + (rows - 1) * row
    for k, (state, text) in enumerate((("acked", "cursor: acked up to markDelete"),
                                       ("deleted", "individually deleted"),
                                       ("hole", "hole: unacked below a deleted one"), ("unacked", "unacked"))):
        fill, stroke = {"acked": ("#2e7d32", "#1b5e20"), "deleted": ("#a5d6a7", "#2e7d32"),
                        "hole": ("#fff3e0", "#e65100"), "unacked": ("#fff", "#bbb")}[state]
        x = 20 + k * col
        out.append(f'<rect x="{x - 9}" y="{y}" width="18" height="{CELL - 2}" fill="{fill}" stroke="{stroke}"/>'
                   f'<text x="{x + 16}" y="{y + 10}">{escape(text)}</text>')
    out.append("</svg>")
    return "\n".join(out)
