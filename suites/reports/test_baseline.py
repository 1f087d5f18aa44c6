"""Accepted divergences match what was accepted (reports/signatures.py, reports/baseline.py): a new
bug in a cell with an accepted one is new; `python -m reports.gate accept` adds an entry from a
run's summary and refuses a cell or guarantee the run did not fail; old entries without a
signature still match, with a warning to re-accept them."""

from __future__ import annotations

import json

import pytest

from reports import gate
from reports.baseline import load_baseline
from reports.signatures import detail_class, program_shape, signature
from suites.reports.samples import result, save, summary
from suites.reports.test_gate import ENTRY, run_gate, write_baseline

M1_LOST = signature("drained every consumer, yet m1 never came", ["send"] * 2 + ["subscribe"] + ["receive"] * 4)
M2_LOST = signature("drained every consumer, yet m2 never came", ["send"] * 3 + ["subscribe"] + ["receive"] * 3)


def lost(sig: dict, detail: str = "drained every consumer, yet m1 never came"):
    return result("seek", "Exclusive", "failed", guarantee="no-loss", detail=detail, signature=sig)


def test_a_signature_keeps_the_detail_class_and_the_program_shape():
    assert detail_class("c0 received m2.2 for the first time after m13 (count 4)") == \
        "c# received m# for the first time after m# (count #)"
    assert program_shape(["send", "send", "subscribe", "receive", "receive", "tick", "receive"]) == \
        "send×2 subscribe receive+ tick+ receive+"
    assert M1_LOST["detail"] == M2_LOST["detail"] and M1_LOST["program"] != M2_LOST["program"]


def test_a_loss_of_several_messages_is_of_the_class_of_a_loss_of_one():
    """How many messages one fault takes depends on the program (a batch, a nack that came twice),
    not on the fault: a list of message ids reads as one."""
    assert detail_class("drained every consumer, yet m1.0, m1.1, m1.2 never came") == \
        detail_class("drained every consumer, yet m3 never came") == "drained every consumer, yet m# never came"
    assert detail_class("c0 received m2 after m1, m0") == "c# received m# after m#"
    # The same for a cursor's entries, ranges and a topic's entries.
    assert detail_class("broker cursor markDelete=-1 deleted=(1..2], (3..4] read=1 acknowledges [0, 2]; its entries "
                        "0=m0, 1=m2") == detail_class("broker cursor markDelete=-1 deleted=(5..6] read=1 acknowledges "
                                                      "[7]; its entries 0=m3") == \
        "broker cursor (state) acknowledges [#]; its entries m#"


def test_a_cursor_acknowledging_the_same_class_in_another_state_is_of_one_class():
    """Whether an ack the model did not allow landed in markDeletePosition or in an individually
    deleted range depends on the acks before it (KD-33's dead-lettered m2 of multi_topics
    [Shared-2-dlq1], seen both ways): the cursor's state reads as one; what it acknowledges
    against what was allowed does not."""
    as_mark_delete = "topic 0: broker cursor markDelete=0 deleted=none read=1 acknowledges [0]; allowed: at least [], " \
                     "at most []; its entries 0=m0"
    as_range = "topic 0: broker cursor markDelete=-1 deleted=(0..1] read=0 acknowledges [1]; allowed: at least [], " \
               "at most []; its entries 0=m0, 1=m2"
    assert detail_class(as_mark_delete) == detail_class(as_range) == \
        "topic #: broker cursor (state) acknowledges [#]; allowed: at least [], at most []; its entries m#"
    short = "topic 0: broker cursor markDelete=-1 deleted=none read=0 acknowledges []; allowed: at least [0], at most [0]"
    assert detail_class(short) != detail_class(as_range)


def test_an_entry_accepted_with_a_list_of_messages_matches_a_loss_of_one(tmp_path):
    """A baseline written before lists read as one still matches (its detail is read as it would
    be written now)."""
    old = {**M1_LOST, "detail": "drained every consumer, yet m#, m#, m# never came"}
    entry = {**ENTRY, "area": "seek", "spec_id": "Exclusive", "signature": {"detail": old["detail"]}}
    code, text = run_gate(tmp_path, summary(lost(M1_LOST)), entry)
    assert code == 0 and "1 accepted" in text


def test_another_fault_in_an_accepted_cell_is_new(tmp_path):
    entry = {**ENTRY, "area": "seek", "spec_id": "Exclusive", "signature": M1_LOST}
    code, text = run_gate(tmp_path, summary(lost(M1_LOST)), entry)
    assert code == 0 and "1 accepted" in text
    code, text = run_gate(tmp_path, summary(lost(M2_LOST, "drained every consumer, yet m2 never came")), entry)
    assert code == 1
    assert "| seek | Exclusive | `no-loss` | drained every consumer, yet m2 never came |" in text
    assert "accepted with another signature: program is `send×3 subscribe receive+`" in text
    assert "with another signature (listed as new)" in text  # the accepted one is not confirmed either


def test_an_old_entry_without_a_signature_still_matches_and_asks_to_be_re_accepted(tmp_path, capsys):
    code, text = run_gate(tmp_path, summary(lost(M2_LOST)), {**ENTRY, "area": "seek", "spec_id": "Exclusive"})
    assert code == 0 and "1 accepted" in text
    assert "### Baseline entries without a signature (re-accept them)" in text
    assert "warning: baseline entry seek [Exclusive] no-loss has no signature" in capsys.readouterr().err


def accept(tmp_path, *args: str) -> int:
    return gate.main(["accept", *args, "--results", str(tmp_path / "summary.json"),
                      "--baseline", str(tmp_path / "baseline.json"), "--reason", "a client bug",
                      "--evidence", "apache/pulsar#1"])


def test_accept_records_the_failure_with_its_signature_and_the_gate_then_passes(tmp_path):
    save(tmp_path, summary(lost(M1_LOST), result("seek", "Shared", "passed")))
    write_baseline(tmp_path, {**ENTRY, "area": "seek", "spec_id": "Exclusive"}, description="kept")
    assert accept(tmp_path, "seek", "Exclusive", "no-loss") == 0
    raw = json.loads((tmp_path / "baseline.json").read_text())
    assert raw["description"] == "kept"
    assert raw["accepted"] == [{"area": "seek", "spec_id": "Exclusive", "guarantee": "no-loss",
                                "reason": "a client bug", "evidence": "apache/pulsar#1", "target": "pulsar",
                                "signature": M1_LOST}]  # the unsigned entry for the same cell is replaced
    results = str(tmp_path / "summary.json")
    assert gate.main(["--results", results, "--baseline", str(tmp_path / "baseline.json")]) == 0
    save(tmp_path, summary(lost(M2_LOST, "drained every consumer, yet m2 never came")))
    assert gate.main(["--results", results, "--baseline", str(tmp_path / "baseline.json")]) == 1


def test_accept_by_the_detail_alone(tmp_path):
    save(tmp_path, summary(lost(M1_LOST)))
    assert accept(tmp_path, "seek", "Exclusive", "no-loss", "--match", "detail", "--any-target") == 0
    (entry,) = load_baseline(tmp_path / "baseline.json").accepted
    assert entry.signature == {"detail": M1_LOST["detail"]} and entry.target is None
    save(tmp_path, summary(lost(M2_LOST, "drained every consumer, yet m2 never came"), target="model"))
    assert gate.main(["--results", str(tmp_path / "summary.json"), "--baseline",
                      str(tmp_path / "baseline.json")]) == 0


@pytest.mark.parametrize("cell, message", [
    (("seek_", "Exclusive", "no-loss"), "no area 'seek_' in this run; did you mean 'seek'?"),
    (("seek", "Exclsive", "no-loss"), "seek has no spec id 'Exclsive' in this run; did you mean 'Exclusive'?"),
    (("seek", "Exclusive", "no-lost"), "did not break 'no-lost' in this run; did you mean 'no-loss'?"),
    (("seek", "Shared", "no-loss"), "seek [Shared] did not fail in this run (passed)"),
], ids=["area-typo", "spec-typo", "guarantee-typo", "passed-cell"])
def test_accept_refuses_what_the_run_did_not_fail(tmp_path, capsys, cell, message):
    save(tmp_path, summary(lost(M1_LOST), result("seek", "Shared", "passed")))
    assert accept(tmp_path, *cell) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "baseline.json").exists()


def test_a_malformed_signature_is_a_clear_error(tmp_path, capsys):
    save(tmp_path, summary(lost(M1_LOST)))
    write_baseline(tmp_path, {**ENTRY, "signature": {"detial": "x"}})
    assert gate.main(["--results", str(tmp_path / "summary.json"), "--baseline",
                      str(tmp_path / "baseline.json")]) == 2
    assert "\"signature\" must be an object with text parts among detail, program" in capsys.readouterr().err


def test_of_two_entries_that_match_the_one_that_also_matches_the_program_gives_the_reason(tmp_path):
    by_detail = {**ENTRY, "area": "seek", "spec_id": "Exclusive", "reason": "a race of the broker",
                 "signature": {"detail": M1_LOST["detail"]}}
    by_shape = {**by_detail, "reason": "a client bug with this program's shape", "signature": M1_LOST}
    for entries in ((by_detail, by_shape), (by_shape, by_detail)):
        code, text = run_gate(tmp_path, summary(lost(M1_LOST)), *entries)
        assert code == 0 and "a client bug with this program's shape" in text.split("### Accepted")[1]
    code, text = run_gate(tmp_path, summary(lost(M2_LOST)), by_detail, by_shape)
    assert code == 0 and "a race of the broker" in text.split("### Accepted")[1]
