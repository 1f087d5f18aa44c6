"""Fast construction and copying of the model's frozen, slotted records.

The model makes immutable values at every step: a state per op, a message per change, a
completion per answer. A frozen dataclass's `__init__` and `dataclasses.replace` set each field
through `object.__setattr__` (the class's own `__setattr__` raises), which made up a large part of
the trace generator's time. `copier(cls)` is `dataclasses.replace` and `maker(cls)` is the
constructor, giving the same values several times faster: the record is built as an instance of a
plain class with the same slots, whose fields are set by ordinary attribute stores (which the
interpreter specializes), and then becomes a `cls`, whose memory layout it shares.

Both take slotted dataclasses without a base class, `__post_init__`, `InitVar`s or default
factories (a draft must have the record's whole memory layout); anything else is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, fields, replace


def _draft(cls: type) -> type:
    if "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__") or any(
            not f.init or f.default_factory is not MISSING for f in fields(cls)) or cls.__bases__ != (object,):
        raise TypeError(f"{cls.__name__}: only a slotted dataclass of its own (no base class, __post_init__, "
                        "InitVar or default factory) is built this way")
    return type(f"_{cls.__name__}Draft", (), {"__slots__": cls.__slots__})


def copier(cls: type) -> Callable:
    """`with_(record, **changes)`: `dataclasses.replace(record, **changes)` for `cls`. Changes
    naming an unknown field go to `dataclasses.replace`, which raises as usual."""
    names = [f.name for f in fields(cls)]
    scope = {"new": object.__new__, "cls": cls, "draft": _draft(cls), "names": frozenset(names), "replace": replace}
    body = "".join(f"    copy.{n} = changes['{n}'] if '{n}' in changes else self.{n}\n" for n in names)
    exec(f"def with_(self, /, **changes):\n    if not names.issuperset(changes):\n        return replace(self, **changes)\n"
         f"    copy = new(draft)\n{body}    copy.__class__ = cls\n    return copy\n", scope)
    return scope["with_"]


def maker(cls: type) -> Callable:
    """`make(**fields)`: `cls(**fields)`, keyword arguments only, with the class's defaults."""
    scope = {"new": object.__new__, "cls": cls, "draft": _draft(cls)}
    parameters = []
    for f in fields(cls):
        if f.default is MISSING:
            parameters.append(f.name)
        else:
            scope[f"default_{f.name}"] = f.default
            parameters.append(f"{f.name}=default_{f.name}")
    body = "".join(f"    record.{f.name} = {f.name}\n" for f in fields(cls))
    exec(f"def make(*, {', '.join(parameters)}):\n    record = new(draft)\n{body}    record.__class__ = cls\n"
         f"    return record\n", scope)
    return scope["make"]
