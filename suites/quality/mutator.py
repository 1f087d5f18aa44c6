"""Mutants of the model target, made mechanically from the model's rule code.

A mutant is the model with one small change in one rule: a condition negated or one of its
operands dropped, a bound shifted by one, a state update skipped, two choices swapped, a field of
a record forgotten. The rule code is the step functions (model/transitions/) and the ideal broker
(model/simulate.py: `respond` and what it calls). Which mutants the conformance catalog catches
measures the suite's power without anyone choosing the faults (suites/quality/mutation.py).

A mutant must not change the checker, which keeps the real `model`: so the model is not mutated in
place (as mutmut or cosmic-ray do) but copied to a package of another name (`mutant_model_<n>`,
in a temporary folder) with the one change. In the copy, imports of the rule modules and of the
modules that depend on them (model/nondet.py) point at the copy; the modules of values (ops,
state, cursor, spec, checks, ...) stay the real ones, so the mutant's completions and states are
the very types the checker reads.

Operators (`OPERATORS`):
- negate-condition: `if c` -> `if not c` (also `while`, conditional expressions, comprehension
  filters, `case` guards);
- drop-condition: `a and b` -> `a` / `b`, `a or b` -> `a` / `b`;
- shift-bound: `<` <-> `<=`, `>` <-> `>=`; an integer constant n -> n - 1 / n + 1 (so `+ 1` -> `+ 0` / `+ 2`);
- skip-update: a keyword of a `.with_(...)` call dropped; an entry of a dict given to
  `replace_messages` dropped (a comprehension: all of them); `replace_message(s, m)` and
  `replace_consumer(s, c)` -> `s`;
- swap-choices: the two branches of an `if` with an `else`, or of a conditional expression;
  `min` <-> `max`;
- forget-field: a keyword of a record's construction dropped (a class, a `_make_*` maker,
  `Message.published`, a completion's `ok`/`fail`).
"""

from __future__ import annotations

import ast
import copy
import importlib
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

MODEL = Path(__file__).resolve().parents[2] / "model"
# The rule code: every function of the step modules; of the ideal broker, `respond` and what it calls.
RULE_FILES = ("transitions/__init__.py", "transitions/acks.py", "transitions/consumers.py",
              "transitions/receive.py", "transitions/redelivery.py", "transitions/reopen.py",
              "transitions/client_crash.py", "transitions/reconnect.py", "simulate.py")
ROOTS = {"simulate.py": ("respond",)}
OPERATORS = ("negate-condition", "drop-condition", "shift-bound", "skip-update", "swap-choices", "forget-field")

_FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_UPDATERS = {"replace_message", "replace_consumer"}
_RECORD_CALLS = {"published", "ok", "fail"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Mutant:
    number: int  # its place in the enumeration: the package is mutant_model_<number>
    file: str  # relative to model/
    line: int
    operator: str
    original: str  # the source text changed
    mutated: str  # what it became
    function: str  # the rule (function) it is in
    # The guarantees whose checks (model/checks.py) that function calls: what the rule is about,
    # where it can be told from the code.
    rule_guarantees: tuple[str, ...]
    source: str  # the whole mutated file
    # Two changes of one line can read the same (`window=(0, 0)`, each 0 shifted): the second is
    # `file:line#2`, so that every id names one mutant.
    occurrence: int = 1

    @property
    def id(self) -> str:
        where = f"{self.line}#{self.occurrence}" if self.occurrence > 1 else f"{self.line}"
        return f"{self.file}:{where}:{self.operator}:{self.original} -> {self.mutated}"

    @property
    def module(self) -> str:
        """The model module it belongs to (model.transitions.acks, model.simulate)."""
        return "model." + self.file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")

    @property
    def package(self) -> str:
        return f"mutant_model_{self.number}"


# -- enumeration ---------------------------------------------------------------------------------
def mutants(files: tuple[str, ...] = RULE_FILES, model: Path = MODEL) -> list[Mutant]:
    """Every mutant of the rule code, in file and source order, without duplicates or no-ops."""
    found: list[Mutant] = []
    for file in files:
        found += mutants_of((model / file).read_text(), file, ROOTS.get(file), first=len(found))
    return found


def mutants_of(text: str, file: str, roots: tuple[str, ...] | None = None, *, first: int = 0) -> list[Mutant]:
    """The mutants of one module's source (`file`: its path under model/), numbered from `first`."""
    tree = ast.parse(text)
    seen = {ast.unparse(tree)}
    found: list[Mutant] = []
    named: dict[str, int] = {}  # how many mutants so far read as each id
    for function in _rule_functions(tree, roots):
        about = _checked_guarantees(function)
        for node in ast.walk(function):
            for operator, change in _changes(node):
                mutated_tree = copy.deepcopy(tree)
                original, mutated = change(_same_node(mutated_tree, tree, node), mutated_tree)
                source = ast.unparse(mutated_tree)
                if source in seen:
                    continue
                seen.add(source)
                mutant = Mutant(number=first + len(found), file=file, line=_line(node), operator=operator,
                                original=original, mutated=mutated, function=function.name,
                                rule_guarantees=about, source=source)
                named[mutant.id] = named.get(mutant.id, 0) + 1
                found.append(replace(mutant, occurrence=named[mutant.id]))
    return found


def edited(file: str, old: str, new: str, *, number: int, operator: str = "by hand") -> Mutant:
    """A mutant written by hand: `old` replaced by `new` (once) in the model's `file`."""
    text = (MODEL / file).read_text()
    if text.count(old) != 1:
        raise ValueError(f"{old!r} is not in {file} exactly once")
    line = text[:text.index(old)].count("\n") + 1
    function = next((n.name for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)
                     and n.lineno <= line <= n.end_lineno), "")
    return Mutant(number=number, file=file, line=line, operator=operator, original=old, mutated=new,
                  function=function, rule_guarantees=(), source=text.replace(old, new))


def _checked_guarantees(function: ast.FunctionDef) -> tuple[str, ...]:
    from model.guarantees import Guarantee

    names = {n.id.removeprefix("check_").replace("_", "-") for n in ast.walk(function)
             if isinstance(n, ast.Name) and n.id.startswith("check_")}
    return tuple(sorted(g.value for g in Guarantee if g.value in names))


def _line(node: ast.AST) -> int:
    """The node's line (a comprehension's or a case's: its first part's)."""
    return getattr(node, "lineno", None) or _line(getattr(node, "target", None) or node.pattern)


def _rule_functions(tree: ast.Module, roots: tuple[str, ...] | None) -> list[ast.FunctionDef]:
    """The module's functions; with `roots`, only those and the module's functions they call."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if roots is None:
        return list(functions.values())
    chosen, todo = [], list(roots)
    while todo:
        name = todo.pop()
        if name in chosen:
            continue
        chosen.append(name)
        todo += [n.id for n in ast.walk(functions[name]) if isinstance(n, ast.Name) and n.id in functions]
    return [functions[name] for name in functions if name in chosen]


def _same_node(copied: ast.AST, original: ast.AST, node: ast.AST) -> ast.AST:
    for a, b in zip(ast.walk(copied), ast.walk(original)):
        if b is node:
            return a
    raise LookupError(node)


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                setattr(parent, field, [new if v is old else v for v in value])
                return
    raise LookupError(old)


Change = Callable[[ast.AST, ast.AST], tuple[str, str]]


def _changes(node: ast.AST) -> Iterator[tuple[str, Change]]:
    """The (operator, change) pairs that apply at `node`; a change edits the copied tree in place
    and returns the original and the mutated source text."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        yield "negate-condition", _negate("test")
    if isinstance(node, ast.match_case) and node.guard is not None:
        yield "negate-condition", _negate("guard")
    if isinstance(node, ast.comprehension):
        for i in range(len(node.ifs)):
            yield "negate-condition", _negate_filter(i)
    if isinstance(node, ast.BoolOp):
        for i in range(len(node.values)):
            yield "drop-condition", _drop_operand(i)
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _FLIP:
                yield "shift-bound", _flip(i)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        yield "shift-bound", _shift(-1)
        yield "shift-bound", _shift(+1)
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name == "with_":
            for i in range(len(node.keywords)):
                yield "skip-update", _drop_keyword(i)
        elif name[:1].isupper() or name.startswith("_make_") or name in _RECORD_CALLS:
            for i, keyword in enumerate(node.keywords):
                if keyword.arg is not None:
                    yield "forget-field", _drop_keyword(i)
        if name in _UPDATERS and node.args:
            yield "skip-update", _skip_call
        if name == "replace_messages" and len(node.args) == 2:
            if isinstance(node.args[1], ast.Dict):
                for i in range(len(node.args[1].keys)):
                    yield "skip-update", _drop_entry(i)
            elif isinstance(node.args[1], ast.DictComp):
                yield "skip-update", _skip_call
        if name in ("min", "max") and isinstance(node.func, ast.Name):
            yield "swap-choices", _swap_min_max
    if isinstance(node, ast.If) and node.orelse:
        yield "swap-choices", _swap_branches
    if isinstance(node, ast.IfExp):
        yield "swap-choices", _swap_branches


def _negate(field: str) -> Change:
    def change(node, tree):
        before = getattr(node, field)
        setattr(node, field, ast.UnaryOp(op=ast.Not(), operand=before))
        return ast.unparse(before), ast.unparse(getattr(node, field))
    return change


def _negate_filter(i: int) -> Change:
    def change(node, tree):
        before = node.ifs[i]
        node.ifs[i] = ast.UnaryOp(op=ast.Not(), operand=before)
        return ast.unparse(before), ast.unparse(node.ifs[i])
    return change


def _drop_operand(i: int) -> Change:
    def change(node, tree):
        original = ast.unparse(node)
        kept = node.values[:i] + node.values[i + 1:]
        new = kept[0] if len(kept) == 1 else ast.BoolOp(op=node.op, values=kept)
        _replace(tree, node, new)
        return original, ast.unparse(new)
    return change


def _flip(i: int) -> Change:
    def change(node, tree):
        original = ast.unparse(node)
        node.ops[i] = _FLIP[type(node.ops[i])]()
        return original, ast.unparse(node)
    return change


def _shift(by: int) -> Change:
    def change(node, tree):
        original = ast.unparse(node)
        node.value += by
        return original, ast.unparse(node)
    return change


def _drop_keyword(i: int) -> Change:
    def change(node, tree):
        original = ast.unparse(node)
        del node.keywords[i]
        return original, ast.unparse(node)
    return change


def _drop_entry(i: int) -> Change:
    def change(node, tree):
        entries = node.args[1]
        original = ast.unparse(entries)
        del entries.keys[i], entries.values[i]
        return original, ast.unparse(entries)
    return change


def _skip_call(node, tree):
    original = ast.unparse(node)
    _replace(tree, node, node.args[0])
    return original, ast.unparse(node.args[0])


def _swap_min_max(node, tree):
    original = ast.unparse(node)
    node.func.id = "max" if node.func.id == "min" else "min"
    return original, ast.unparse(node)


def _swap_branches(node, tree):
    if isinstance(node, ast.IfExp):
        original = ast.unparse(node)
        node.body, node.orelse = node.orelse, node.body
        return original, ast.unparse(node)
    original = f"if {ast.unparse(node.test)}: <{len(node.body)} statements> else: <{len(node.orelse)} statements>"
    node.body, node.orelse = node.orelse, node.body
    return original, f"if {ast.unparse(node.test)}: <the else branch> else: <the if branch>"


# -- the mutant package --------------------------------------------------------------------------
def rebound_modules() -> frozenset[str]:
    """The model modules a mutant has its own copy of: the rule modules and every module that
    imports one of them (directly or not). The others are the real model's."""
    imports = {}
    for path in MODEL.rglob("*.py"):
        name = _module_name(path)
        imports[name] = {m.group(1) for m in re.finditer(r"^\s*from (model(?:\.[\w.]+)?) import", path.read_text(), re.M)}
    rebound = {_module_name(MODEL / f) for f in RULE_FILES}
    while True:
        more = {name for name, used in imports.items() if name not in rebound and used & rebound}
        if not more:
            return frozenset(rebound)
        rebound |= more


def _module_name(path: Path) -> str:
    parts = path.relative_to(MODEL.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


_IMPORT = re.compile(r"^(\s*)from (model(?:\.[\w.]+)?) import (.+)$", re.M)


def rewrite_imports(text: str, package: str, rebound: frozenset[str]) -> str:
    """Imports of a rebound module name the mutant package instead of `model`."""
    def rewrite(match: re.Match) -> str:
        indent, module, names = match.groups()
        if module in rebound:
            return f"{indent}from {package}{module.removeprefix('model')} import {names}"
        if module == "model":
            imported = {n.split(" as ")[0].strip() for n in names.strip("()").split(",")}
            if any(f"model.{n}" in rebound for n in imported):
                return f"{indent}from {package} import {names}"
        return match.group(0)
    return _IMPORT.sub(rewrite, text)


def build(mutant: Mutant, root: Path, model: Path = MODEL) -> str:
    """Write the mutant package under `root` (on sys.path) and return its name: a copy of `model`
    (the model package, or a snapshot of it taken when the mutants were enumerated)."""
    folder = root / mutant.package
    shutil.copytree(model, folder, ignore=shutil.ignore_patterns("__pycache__"))
    rebound = rebound_modules()
    for path in folder.rglob("*.py"):
        text = mutant.source if path == folder / mutant.file else path.read_text()
        path.write_text(rewrite_imports(text, mutant.package, rebound))
    return mutant.package


def load(package: str, root: Path):
    """Import the mutant's broker, step and initial state: its (simulate, nondet, state) modules,
    each the mutant package's copy when it is rebound, else the real model's."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    rebound = rebound_modules()
    return tuple(importlib.import_module(f"{package}.{name}" if f"model.{name}" in rebound else f"model.{name}")
                 for name in ("simulate", "nondet", "state"))
