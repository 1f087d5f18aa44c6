"""The kit installed from its wheel, as a user installs it: one package name, a command and a
pytest plugin, usable from any folder, its state outside site-packages.

The wheel is built by the project's own backend (pulsar_ack_conformance/build_backend.py) and
installed without its dependencies into a fresh virtual environment that borrows this one's
(a path file), so that the test needs no network. The user's folder has a `model/` and a
`fixtures/` package of its own: they must keep working beside the kit, and the kit beside them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from pulsar_ack_conformance.build_backend import rewrite

ROOT = Path(__file__).resolve().parents[2]


def test_imports_of_the_top_level_packages_are_rewritten_under_the_kit_s_name():
    source = ("from model.spec import Spec\nimport model.nondet\nimport model.smt as smt  # solver\n"
              "    from fixtures import options\nimport models\nfrom modelling import x\nfrom . import y\n")
    assert rewrite(source) == (
        "from pulsar_ack_conformance.model.spec import Spec\n"
        "from pulsar_ack_conformance import model; import pulsar_ack_conformance.model.nondet\n"
        "import pulsar_ack_conformance.model.smt as smt # solver\n"
        "    from pulsar_ack_conformance.fixtures import options\nimport models\nfrom modelling import x\n"
        "from . import y\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with the kit's wheel in it; returns its bin folder."""
    scratch = tmp_path_factory.mktemp("install")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(scratch / "wheel"),
                            str(ROOT)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next((scratch / "wheel").glob("pulsar_ack_conformance-*.whl"))
    venv.EnvBuilder(with_pip=False).create(scratch / "venv")
    python = scratch / "venv" / "bin" / "python"
    site = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())
    # this environment's packages (the kit's dependencies), after the new one's own
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return python.parent


@pytest.fixture
def user_folder(tmp_path) -> Path:
    """A user's project with packages named like the kit's: `model` and `fixtures`."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("WHO = 'the user'\n")
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "__init__.py").write_text("")
    (tmp_path / "test_users_own.py").write_text("import model\n\n\ndef test_own_model():\n"
                                                "    assert model.WHO == 'the user'\n")
    return tmp_path


def _run(bin_folder: Path, folder: Path, *command: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GITHUB_STEP_SUMMARY", "VIRTUAL_ENV")}
    env["XDG_CACHE_HOME"] = str(folder / "cache")
    return subprocess.run([str(bin_folder / command[0]), *command[1:]], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_installed_command_runs_the_suites_beside_a_user_s_own_model_and_fixtures(installed, user_folder):
    done = _run(installed, user_folder, "pulsar-ack-conformance", "run", "--target", "model", "-k", "individual_ack",
                "-q")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((user_folder / "reports" / "out" / "summary.json").read_text())
    assert summary["totals"]["passed"] == 5 and summary["run"]["target"] == "model"
    assert "Warning" not in done.stdout
    gate = _run(installed, user_folder, "pulsar-ack-conformance", "gate")  # the kit's own baseline
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "pulsar_ack_conformance/reports/baseline.json" in gate.stderr
    own = _run(installed, user_folder, "python", "-m", "pytest", "-q", "test_users_own.py")
    assert own.returncode == 0, own.stdout + own.stderr
    elsewhere = user_folder / "elsewhere"
    elsewhere.mkdir()
    unknown = _run(installed, elsewhere, "python", "-c", "import model")
    assert unknown.returncode != 0 and "No module named 'model'" in unknown.stderr  # one name installed


def test_the_installed_plugin_gives_pytest_the_kit_s_options_and_its_state_is_a_user_cache(installed, user_folder):
    done = _run(installed, user_folder, "python", "-m", "pytest", "--help")
    assert "--target=TARGET" in done.stdout and "--auth-token-file" in done.stdout
    state = _run(installed, user_folder, "python", "-c",
                 "from pulsar_ack_conformance.fixtures.broker.config import state_root; print(state_root())")
    assert state.stdout.strip() == str(user_folder / "cache" / "pulsar-ack-conformance")


def test_hints_name_the_command_a_user_of_the_installed_kit_types(installed, user_folder):
    """A gate's "re-accept it with" or a broker's "stop it first" names the installed command."""
    said = _run(installed, user_folder, "python", "-c",
                "from pulsar_ack_conformance.fixtures.kit import command; "
                "print(command('reports.gate'), command('fixtures.broker'), command('traces'), sep='|')")
    assert said.stdout.split() and said.stdout.strip().split("|") == [
        "pulsar-ack-conformance gate", "pulsar-ack-conformance broker", "python -m pulsar_ack_conformance.traces"]
    from fixtures.kit import command

    assert command("reports.gate") == "python -m reports.gate"  # in the clone, what its README says


def test_the_github_actions_example_uses_only_what_the_installed_kit_has(installed, user_folder):
    """examples/github-actions/: every option its kit commands pass is one the kit knows."""
    workflow = (ROOT / "examples" / "github-actions" / "pulsar-ack-conformance.yml").read_text()
    commands = re.findall(r"pulsar-ack-conformance (run|gate)((?:[^\n]*\\\n)*[^\n]*)", workflow)
    assert {kind for kind, _ in commands} == {"run", "gate"}
    helps = {"run": _run(installed, user_folder, "python", "-m", "pytest", "--help").stdout,
             "gate": _run(installed, user_folder, "pulsar-ack-conformance", "gate", "--help").stdout}
    for kind, arguments in commands:
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-m)\b", arguments):
            assert option in helps[kind], f"pulsar-ack-conformance {kind}: {option} is not an option of the kit"


SHIPPED = """
import types, zipfile
from pulsar_ack_conformance.traces.session import ship_packages
added = []
ship_packages(types.SimpleNamespace(sparkContext=types.SimpleNamespace(applicationId="app-1", addPyFile=added.append)))
names = zipfile.ZipFile(added[0]).namelist()
print(sorted({name.split('/')[0] for name in names}), 'pulsar_ack_conformance/model/spec.py' in names)
"""


def test_the_code_shipped_to_spark_executors_is_the_installed_kit_under_its_name(installed, user_folder):
    """A cluster master's executors import what the driver imports: `pulsar_ack_conformance.model...`."""
    done = _run(installed, user_folder, "python", "-c", SHIPPED)
    assert done.stdout.split() == ["['pulsar_ack_conformance']", "True"], done.stdout + done.stderr
