"""A client crash in the timeline picture (reports/timeline.py): drawn on the producer lane, the
client's process being gone, and ending every consumer's connected band there."""

from __future__ import annotations

from model import ops as o
from model.history import event_of
from model.spec import Spec
from reports.timeline import FAIL, layout, timeline_html

HISTORY = [(o.Send(), o.ok()), (o.Subscribe(consumer="c0"), o.ok()), (o.Subscribe(consumer="c1"), o.ok()),
           (o.CrashClient(), o.ok()), (o.Subscribe(consumer="c0"), o.ok()), (o.Send(), o.ok())]


def test_a_client_crash_is_drawn_on_the_producer_lane_and_ends_every_consumers_band():
    events = [event_of("p", Spec(), i, op, c) for i, (op, c) in enumerate(HISTORY)]
    timeline = layout(events)
    crash = next(m for m in timeline.marks if m.step == 3)
    assert (crash.lane, crash.kind, crash.color) == ("producer", "crash", FAIL)
    assert sorted(timeline.sessions) == [("c0", 1, 3), ("c0", 4, 5), ("c1", 2, 3)]
    assert 'data-kind="crash"' in timeline_html(events)
