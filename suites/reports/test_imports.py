"""The reports package's modules depend on each other one way: no import cycle, counting imports
made at call time or only for type checking, and each module imports on its own in a fresh
interpreter (so none works only because another was imported first)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import reports

PACKAGE = Path(reports.__file__).parent
MODULES = sorted(f"reports.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))


def imports_of(path: Path) -> set[str]:
    """The reports modules `path` imports anywhere in it (top level, in a function, under TYPE_CHECKING)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n in MODULES}
    return found


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph`, as the modules along it, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == "open":
                return path[path.index(imported):] + [imported]
            if imported not in state and (found := visit(imported)):
                return found
        state[module] = "done"
        path.pop()
        return None

    return next((found for m in sorted(graph) if m not in state and (found := visit(m))), None)


def graph_of(folder: Path) -> dict[str, set[str]]:
    return {f"reports.{p.stem}": imports_of(p) - {f"reports.{p.stem}"} for p in folder.glob("*.py")
            if p.stem not in ("__init__", "__main__")}


def test_the_reports_modules_import_each_other_one_way():
    found = cycle(graph_of(PACKAGE))
    assert found is None, "import cycle: " + " -> ".join(found)


def test_the_cycle_finder_finds_a_cycle_through_a_type_checking_import(tmp_path):
    (tmp_path / "markdown.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                          "    from reports.gate import Judgement\n")
    (tmp_path / "gate.py").write_text("from reports.markdown import gate_markdown\n")
    assert cycle(graph_of(tmp_path)) == ["reports.gate", "reports.markdown", "reports.gate"]


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_on_its_own(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True,
                          cwd=PACKAGE.parent, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
