"""The signature of a divergence: what a baseline accepted, so that a new bug cannot hide behind it.

A baseline entry names a cell (area, spec id) and a guarantee; many faults break the same
guarantee in the same cell ("m1 never came" and "m2 never came" are both no-loss on seek
[Exclusive]). The signature says which one was accepted, in two parts:

- `detail`: the class of the violation's detail, its text with message ids, consumer names and
  numbers normalised away ("c0 received m2.2 after m3" -> "c# received m# after m#"), a list read
  as one ("yet m1.0, m1.1, m1.2 never came" -> "yet m# never came", "acknowledges [0, 1]" ->
  "acknowledges [#]": how many messages or entries one fault takes depends on the program, the
  batch, the timing, not on the fault), and a cursor's state read as one ("markDelete=0
  deleted=none read=1" and "markDelete=-1 deleted=(0..1] read=0" -> "(state)": whether an ack
  landed in markDeletePosition or in an individually deleted range depends on the acks before it,
  not on the fault; what the cursor acknowledges against what was allowed stays);
- `program`: the shape of the shrunk program, its op kinds in order with repeats counted
  ("send×3 subscribe receive+"). A receive or a tick is counted only as "one or more" (`+`): how
  many a drain or a wait takes depends on timing, not on the fault.

A failure matches an entry when every part the entry has equals the failure's; a part the failure
did not record (a summary older than signatures has no program shape) does not match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PARTS = ("detail", "program")
TIMED_KINDS = frozenset({"receive", "tick"})  # their count follows the clock, not the fault
_MESSAGE = re.compile(r"\bm\d+(?:\.\d+)?\b")
_CONSUMER = re.compile(r"\bc\d+\b")
_NUMBER = re.compile(r"\d+")
# Lists read as one: message ids ("m1, m2"; "0=m0, 1=m2" naming a topic's entries), numbers in
# brackets ("[0, 2]") and cursor ranges ("(0..1], (3..4]").
_LISTS = ((re.compile(r"#=m#"), "m#"), (re.compile(r"\bm#(?:, m#)+"), "m#"), (re.compile(r"\[#(?:, #)+\]"), "[#]"),
          (re.compile(r"\(#\.\.#\](?:, \(#\.\.#\])+"), "(#..#]"),
          # A cursor's state, once its ranges read as one.
          (re.compile(r"markDelete=-?# deleted=(?:none|\(#\.\.#\])(?: read=-?#)?"), "(state)"))


def detail_class(detail: str) -> str:
    """The detail with message ids (`m#`), consumer names (`c#`) and other numbers (`#`) normalised,
    a list of ids, numbers or ranges read as one, and a cursor's state as `(state)`; a class is its
    own class (an accepted signature written before lists were read as one is read as it would be
    written now)."""
    text = _NUMBER.sub("#", _CONSUMER.sub("c#", _MESSAGE.sub("m#", " ".join(str(detail).split()))))
    for pattern, one in _LISTS:
        text = pattern.sub(one, text)
    return text


def program_shape(kinds: Iterable[str]) -> str:
    """`send×3 subscribe receive+`: the op kinds in order, a run of one kind counted."""
    runs: list[list] = []
    for kind in kinds:
        if runs and runs[-1][0] == kind:
            runs[-1][1] += 1
        else:
            runs.append([kind, 1])
    return " ".join(kind + ("+" if kind in TIMED_KINDS else f"×{n}" if n > 1 else "") for kind, n in runs)


def signature(detail: str, kinds: Iterable[str] | None = None) -> dict[str, str]:
    """The signature of a violation with this detail, found by a program of these op kinds."""
    found = {"detail": detail_class(detail)}
    if kinds is not None:
        found["program"] = program_shape(kinds)
    return found


def differences(accepted: dict[str, str], found: dict[str, str] | None) -> list[str]:
    """The parts of an accepted signature a failure does not match, each said in words (empty: it matches)."""
    found = found or {}
    return [f"{part} is `{found[part]}`, accepted `{value}`" if part in found
            else f"{part} was not recorded by this run, accepted `{value}`"
            for part, value in accepted.items() if _normal(part, found.get(part)) != _normal(part, value)]


def _normal(part: str, value: str | None) -> str | None:
    return detail_class(value) if part == "detail" and value is not None else value
