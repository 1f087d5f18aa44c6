"""The timeline picture (reports/timeline.py): one mark per event, in the right lane, with the cursor
drawn as markDelete, deleted ranges and holes."""

from __future__ import annotations

import re

from model import cursor as cur
from model import ops as o
from model.history import event_of
from reports.timeline import layout, legend_svg, render, timeline_svg
from suites.reports.samples import SHARED, lost_message_failure

M0, M1, M2 = o.MessageId(0), o.MessageId(1), o.MessageId(2)


def events(history):
    return [event_of("p", SHARED, i, op, c) for i, (op, c) in enumerate(history)]


# Two consumers; m0 is nacked by c0 and comes back to c1 with count 1; the cursor has a hole at m1.
HISTORY = events([
    (o.Send(keys=("k0",)), o.ok((M0,))),
    (o.Send(), o.ok((M1,))),
    (o.Send(keys=("a", "b"), batched=True), o.ok((o.MessageId(2, 0), o.MessageId(2, 1)))),
    (o.Subscribe(consumer="c0"), o.ok()),
    (o.Subscribe(consumer="c1"), o.ok()),
    (o.Receive(consumer="c0"), o.ok(o.Delivery(message=M0, redelivery_count=0))),
    (o.NegativeAcknowledge(consumer="c0", message=M0), o.ok()),
    (o.Tick(ms=150), o.ok(at=150)),
    (o.Receive(consumer="c1"), o.ok(o.Delivery(message=M0, redelivery_count=1), at=150)),
    (o.Acknowledge(consumer="c1", message=M0), o.ok(at=150)),
    (o.Receive(consumer="c1"), o.ok(o.Delivery(message=o.MessageId(2, 0), redelivery_count=0), at=150)),
    (o.Receive(consumer="c1"), o.ok(o.Delivery(message=o.MessageId(2, 1), redelivery_count=0), at=150)),
    (o.Acknowledge(consumer="c1", message=o.MessageId(2, 0)), o.ok(at=150)),
    (o.Acknowledge(consumer="c1", message=o.MessageId(2, 1)), o.ok(at=150)),
    (o.ReadCursor(), o.ok(cur.from_acknowledged({0, 2}), at=250)),
    (o.Receive(consumer="c0"), o.ok(None, at=260)),
    (o.Close(consumer="c0"), o.ok(at=260)),
    (o.Subscribe(consumer="c2"), o.fail("ConsumerBusy", at=260)),
])


def test_every_event_is_drawn_once():
    svg = timeline_svg(HISTORY)
    assert len(re.findall(r'<g class="ev"', svg)) == len(HISTORY)
    assert sorted(int(s) for s in re.findall(r'<g class="ev" data-step="(\d+)"', svg)) == list(range(len(HISTORY)))


def test_marks_are_in_the_lane_of_their_actor():
    timeline = layout(HISTORY)
    assert timeline.lanes == ("producer", "c0", "c1", "c2", "broker")
    lanes = {m.step: m.lane for m in timeline.marks}
    assert [lanes[i] for i in (0, 1, 2)] == ["producer"] * 3
    assert lanes[5] == "c0" and lanes[8] == "c1" and lanes[7] == "broker" and lanes[17] == "c2"
    kinds = [m.kind for m in timeline.marks]
    assert kinds.count("delivery") == 4 and kinds.count("empty") == 1 and kinds.count("acknowledge") == 3
    empty = re.search(r'<g class="ev" data-step="15" data-kind="empty">.*?</g>', render(timeline)).group(0)
    assert 'r="3"' in empty  # nothing came: a small hollow dot, not a message


def test_sends_name_their_entry_and_key_and_deliveries_their_redelivery():
    timeline = layout(HISTORY)
    sends = [m for m in timeline.marks if m.kind == "send"]
    assert [(m.label, m.note) for m in sends] == [("m0", "k0"), ("m1", ""), ("m2×2", "")]
    again = [m for m in timeline.marks if m.redelivery]
    assert [(m.step, m.label, m.note) for m in again] == [(8, "m0", "rc=1")]
    assert timeline.links == ((5, "c0", 8, "c1", again[0].color),)
    assert len(re.findall(r'class="redelivery"', render(timeline))) == 1


def test_the_cursor_read_draws_mark_delete_deleted_entries_and_holes():
    timeline = layout(HISTORY)
    (read,) = timeline.reads
    assert (read.mark_delete, read.ranges, read.entries) == (0, ((1, 2),), 3)
    svg = render(timeline)
    assert len(re.findall(r'class="entry acked"', svg)) == 1  # m0, at markDelete
    assert len(re.findall(r'class="entry hole"', svg)) == 1  # m1: unacked below the deleted m2
    assert len(re.findall(r'class="entry deleted"', svg)) == 1  # m2
    assert 'md=0' in svg and 'class="mark-delete"' in svg


def test_connected_time_is_a_band_per_consumer_and_a_failed_op_is_marked():
    timeline = layout(HISTORY)
    assert timeline.sessions == (("c0", 3, 16), ("c1", 4, 17))
    (busy,) = [m for m in timeline.marks if m.failed]
    assert (busy.step, busy.kind, busy.note) == (17, "subscribe", "fail")


def test_the_time_axis_labels_each_new_time_once():
    svg = timeline_svg(HISTORY)
    axis = re.findall(r'<text x="[\d.]+" y="32" text-anchor="middle" fill="#333">(\d+)</text>', svg)
    assert axis == ["0", "150", "250", "260"]


def test_a_violation_found_by_the_drain_check_gets_its_own_column():
    failure = lost_message_failure()
    history = events(failure.history)
    svg = timeline_svg(history, violation=("no-loss", failure.violation.detail, True))
    assert "✗ broke no-loss" in svg and "drain check" in svg
    width = int(re.search(r'<svg class="timeline" width="(\d+)"', svg).group(1))
    plain = int(re.search(r'<svg class="timeline" width="(\d+)"', timeline_svg(history)).group(1))
    assert width > plain


def test_the_picture_is_plain_inline_svg():
    for svg in (timeline_svg(HISTORY), legend_svg()):
        assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
        assert "http" not in svg and "<script" not in svg and "href" not in svg
