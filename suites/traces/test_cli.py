"""`python -m traces`: the jobs from the command line, their exit status, and their error messages
(bad input and refused outputs exit 2 with one `error:` message, never a traceback)."""

from __future__ import annotations

import pytest

from traces.cli import main

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def small(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "corpus"
    assert main(["generate", "--out", str(path), "--programs", "3", "--steps", "8", "--matrix",
                 "subscription_type=Exclusive", "-q"]) == 0
    return path


def test_validate_accepts_a_generated_corpus(small):
    assert main(["validate", str(small), "-q"]) == 0


def test_diff_of_a_corpus_with_itself_finds_nothing(small, tmp_path):
    assert main(["diff", str(small), str(small), "--out", str(tmp_path / "d"), "--fail-on-divergence", "-q"]) == 0
    assert (tmp_path / "d" / "report.html").exists()


def test_existing_output_exits_2(small, capsys):
    assert main(["generate", "--out", str(small), "--programs", "1", "--steps", "2", "-q"]) == 2
    assert "already exists; refusing to overwrite it" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["validate", "/nonexistent/corpus"], "not found"),
    (["record", "--corpus", "x", "--out", "y", "--target", "pulsar"], "needs --service-url and --admin-url"),
    (["record", "--corpus", "x", "--out", "y", "--target", "nonsense"], "expected model, pulsar or package.module"),
    (["generate", "--out", "z", "--matrix", "subscription_type=Queue"], "not one of"),
    (["check", "x", "--out", "y", "--fail-on-change"], "go with --against"),
    (["compare", "/nonexistent/a", "/nonexistent/b", "--out", "c"], "not the output of `traces check`"),
])
def test_bad_input_exits_2_with_one_message(argv, message, capsys):
    assert main([*argv, "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_a_concurrency_below_one_is_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["record", "--corpus", "x", "--out", "y", "--concurrency", "0"])
    assert exited.value.code == 2 and "expected a positive number, got 0" in capsys.readouterr().err


@pytest.mark.parametrize("argv, asked", [([], 5_000), (["--send-timeout-ms", "30000"], 30_000)])
def test_record_gives_the_clients_its_send_timeout(argv, asked, monkeypatch):
    """`record`'s send timeout reaches the target, which the loader builds with it (the drivers'
    hello: drivers/PROTOCOL.md), so that a producer left on a closed topic (KD-40) costs 5 s a send,
    not the clients' 30 s."""
    import fixtures.targets.loader as loader
    import traces.cli as cli
    from traces.jobs import record

    recorded, built = [], []
    monkeypatch.setattr(cli, "_session", lambda args: None)
    monkeypatch.setattr(record, "run", lambda spark, corpus, out, *, target, **options: recorded.append(target))
    monkeypatch.setattr(loader, "load_target", lambda name, **context: built.append(context))
    assert main(["record", "--corpus", "x", "--out", "y", "--target", "pulsar", "--service-url", "pulsar://h:6650",
                 "--admin-url", "http://h:8080", *argv, "-q"]) == 0
    recorded[0].build()
    assert recorded[0].send_timeout_ms == asked and built[0]["send_timeout_ms"] == asked
