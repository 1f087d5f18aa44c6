"""A baseline entry is a client's finding (reports/baseline.py, reports/gate.py): an entry with
`client` accepts a failure only in a run of that client (and version, with `name==version`), so
the Rust client's accepted finding is a new divergence when the Python client shows it; an entry
without `client` matches every client; `accept` records the client the run drove."""

from __future__ import annotations

import json

import pytest

from reports import gate
from reports.baseline import load_baseline
from reports.signatures import signature
from suites.reports.samples import result, save, summary
from suites.reports.test_gate import ROOT, run_gate, write_baseline

PYTHON, RUST, RUST_NEXT = ("python", "3.13.0"), ("rust", "6.9.1"), ("rust", "6.9.2")
WHOLE_BATCH = signature("the cursor has m#.# acknowledged, which no ack covers",
                        ["send", "subscribe", "receive", "acknowledge", "close"])
CELL = {"area": "individual_ack", "spec_id": "Shared", "guarantee": "cursor", "target": "pulsar",
        "reason": "KD-18: the Rust client acknowledges a whole batch", "evidence": "KNOWN_DIVERGENCES.md KD-18",
        "signature": WHOLE_BATCH}


def failing(detail: str = "the cursor has m0.1 acknowledged, which no ack covers"):
    return result("individual_ack", "Shared", "failed", guarantee="cursor", detail=detail, signature=WHOLE_BATCH)


def test_a_rust_finding_is_accepted_for_rust_and_new_for_python(tmp_path):
    entry = {**CELL, "client": "rust"}
    code, text = run_gate(tmp_path, summary(failing(), client=RUST), entry)
    assert code == 0 and "0 new divergence(s) · 1 accepted" in text
    assert "`cursor` (client rust): KD-18" in text
    code, text = run_gate(tmp_path, summary(failing(), client=PYTHON), entry)
    assert code == 1 and "| individual_ack | Shared | `cursor` |" in text and "not in the baseline" in text
    assert "### Baseline entries for other clients (not in this run)" in text
    assert "- **rust**: 1: individual_ack [Shared] `cursor`" in text


def test_an_entry_without_a_client_matches_every_client(tmp_path):
    for client in (PYTHON, RUST, None):
        code, text = run_gate(tmp_path, summary(failing(), client=client), CELL)
        assert code == 0 and "1 accepted" in text, client


def test_an_entry_with_a_version_matches_that_version_only(tmp_path):
    entry = {**CELL, "client": "rust==6.9.1"}
    code, _ = run_gate(tmp_path, summary(failing(), client=RUST), entry)
    assert code == 0
    code, text = run_gate(tmp_path, summary(failing(), client=RUST_NEXT), entry)
    assert code == 1 and "- **rust==6.9.1**: 1:" in text


def test_an_entry_for_a_client_that_did_not_run_is_not_in_this_run_nor_passed(tmp_path):
    code, text = run_gate(tmp_path, summary(result("individual_ack", "Shared", "passed"), client=PYTHON),
                          {**CELL, "client": "rust"}, args=("--fail-on-fixed",))
    assert code == 0
    assert "0 not shown" in text and "1 for other clients" in text and "### Not shown" not in text
    code, text = run_gate(tmp_path, summary(result("individual_ack", "Shared", "passed"), client=RUST),
                          {**CELL, "client": "rust"})
    assert "1 not shown" in text and "`cursor` (client rust): now passed" in text


def accept(tmp_path, *args: str) -> int:
    return gate.main(["accept", "individual_ack", "Shared", "cursor", *args,
                      "--results", str(tmp_path / "summary.json"), "--baseline", str(tmp_path / "baseline.json"),
                      "--reason", "KD-18", "--evidence", "a run"])


@pytest.mark.parametrize("args, client", [((), "rust"), (("--client-version",), "rust==6.9.1"),
                                          (("--any-client",), None)], ids=["name", "version", "any"])
def test_accept_writes_the_client_the_run_drove(tmp_path, args, client):
    save(tmp_path, summary(failing(), client=RUST))
    assert accept(tmp_path, *args) == 0
    (entry,) = json.loads((tmp_path / "baseline.json").read_text())["accepted"]
    assert entry.get("client") == client
    save(tmp_path, summary(failing(), client=PYTHON))
    assert gate.main(["--results", str(tmp_path / "summary.json"), "--baseline",
                      str(tmp_path / "baseline.json")]) == (0 if client is None else 1)


def test_accept_from_a_run_without_a_client_applies_to_any(tmp_path):
    save(tmp_path, summary(failing(), target="model"))
    assert accept(tmp_path) == 0
    (entry,) = load_baseline(tmp_path / "baseline.json").accepted
    assert entry.client is None


def test_accepting_an_any_client_entry_again_from_a_run_gives_it_that_client(tmp_path, capsys):
    save(tmp_path, summary(failing(), client=RUST))
    write_baseline(tmp_path, CELL, {**CELL, "spec_id": "Exclusive", "client": "java"})
    assert accept(tmp_path) == 0
    entries = load_baseline(tmp_path / "baseline.json").accepted
    assert [(e.spec_id, e.client) for e in entries] == [("Exclusive", "java"), ("Shared", "rust")]
    assert "replacing the entry for target pulsar, client any" in capsys.readouterr().out


def test_one_cell_may_be_accepted_for_two_clients(tmp_path):
    write_baseline(tmp_path, {**CELL, "client": "rust"}, {**CELL, "client": "java"})
    assert [e.client for e in load_baseline(tmp_path / "baseline.json").accepted] == ["rust", "java"]


@pytest.mark.parametrize("client, message", [
    (7, "\"client\" must be a client's name"), ("", "\"client\" must be a client's name"),
    ("rust==", "\"client\" must be a client's name"), ("rust 6.9.1", "\"client\" must be a client's name"),
], ids=["number", "empty", "no-version", "space"])
def test_a_malformed_client_is_a_clear_error(tmp_path, capsys, client, message):
    save(tmp_path, summary(failing(), client=RUST))
    write_baseline(tmp_path, {**CELL, "client": client})
    assert gate.main(["--results", str(tmp_path / "summary.json"), "--baseline",
                      str(tmp_path / "baseline.json")]) == 2
    assert message in capsys.readouterr().err


def test_the_same_entry_twice_for_one_client_is_refused(tmp_path, capsys):
    save(tmp_path, summary(failing(), client=RUST))
    write_baseline(tmp_path, {**CELL, "client": "rust"}, {**CELL, "client": "rust"})
    assert gate.main(["--results", str(tmp_path / "summary.json"), "--baseline",
                      str(tmp_path / "baseline.json")]) == 2
    assert "accepted more than once: individual_ack [Shared] cursor (client rust)" in capsys.readouterr().err


def test_the_shipped_rust_findings_are_accepted_for_rust_only(tmp_path):
    """Every Rust entry of reports/baseline.json, as the failure it accepts: accepted in a run of the
    Rust client, a new divergence in a Python client's run of the same cells."""
    shipped = load_baseline(ROOT / "reports" / "baseline.json")
    rust = [e for e in shipped.accepted if e.client == "rust"]
    assert rust
    failures = {(e.area, e.spec_id): result(e.area, e.spec_id, "failed", guarantee=e.guarantee,
                                             detail=e.evidence.rpartition("profile): ")[2], signature=e.signature)
                for e in rust}
    (tmp_path / "baseline.json").write_text((ROOT / "reports" / "baseline.json").read_text())
    for client, verdict in ((RUST, 0), (PYTHON, 1)):
        save(tmp_path, summary(*failures.values(), client=client))
        code = gate.main(["--results", str(tmp_path / "summary.json"), "--baseline", str(tmp_path / "baseline.json")])
        text = (tmp_path / "gate.md").read_text()
        assert code == verdict, client
        assert f"{len(failures) if verdict else 0} new divergence(s)" in text, client


def test_match_none_accepts_any_failure_of_the_guarantee_in_the_cell_for_that_client(tmp_path, capsys):
    """A client finding that breaks a guarantee in many ways (KD-18) is accepted by cell and guarantee:
    the entry's signature is {} and replaces the cell's narrower entries; no warning, as for an
    entry older than signatures; another client's run of the cell is still new."""
    save(tmp_path, summary(failing(), client=RUST))
    write_baseline(tmp_path, {**CELL, "client": "rust"})
    assert accept(tmp_path, "--match", "none") == 0
    (entry,) = json.loads((tmp_path / "baseline.json").read_text())["accepted"]
    assert entry["signature"] == {} and entry["client"] == "rust"
    other = failing("the cursor has m3 acknowledged, which no ack covers")
    other = result("individual_ack", "Shared", "failed", guarantee="cursor", detail=other.violations[0].detail,
                   signature=signature("markDelete=# acknowledges [#, #]", ["send", "acknowledge"]))
    for client, verdict in ((RUST, 0), (PYTHON, 1)):
        save(tmp_path, summary(other, client=client))
        assert gate.main(["--results", str(tmp_path / "summary.json"), "--baseline",
                          str(tmp_path / "baseline.json")]) == verdict
    assert "warning" not in capsys.readouterr().err
