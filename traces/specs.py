"""The matrix of specs a corpus is generated over, from `--matrix field=v1,v2` options.

Each option names one field of `model.spec.Spec` and its values; the matrix is their cartesian
product over the conformance catalog's spec of each subscription type (suites/conformance/
catalog.py: a nack comes back after 100 ms, a Failover pause of 200 ms), not over Pulsar's own
defaults (60 s, 1 s): those are what a real broker records quickly, and what a recording on the
project's broker accepts (traces/recordable.py). Without options: the four subscription types.
A field given in an option replaces the catalog's value (`--matrix nack_delay_ms=60000`).
"""

from __future__ import annotations

import dataclasses
import itertools

from model.history import spec_id
from model.spec import InitialPosition, Spec, SubscriptionType
from suites.conformance.catalog import ALL_TYPES

DEFAULT_MATRIX = (f"subscription_type={','.join(t.value for t in SubscriptionType)}",)
_ENUMS = {"SubscriptionType": SubscriptionType, "InitialPosition": InitialPosition}
_FIELDS = {f.name: f.type for f in dataclasses.fields(Spec)}


class MatrixError(ValueError):
    pass


def _value(field: str, text: str) -> object:
    kind = _FIELDS[field]
    if "None" in kind and text.lower() in ("none", "null", ""):
        return None
    base = kind.replace(" | None", "")
    if base in _ENUMS:
        try:
            return _ENUMS[base](text)
        except ValueError:
            raise MatrixError(f"{field}: {text!r} is not one of {', '.join(e.value for e in _ENUMS[base])}") from None
    if base == "bool":
        if text.lower() not in ("true", "false"):
            raise MatrixError(f"{field}: expected true or false, got {text!r}")
        return text.lower() == "true"
    if base == "int":
        try:
            return int(text)
        except ValueError:
            raise MatrixError(f"{field}: expected an integer, got {text!r}") from None
    return text


def parse_matrix(options: list[str] | tuple[str, ...] | None) -> list[Spec]:
    """Specs for `field=v1,v2` options (later options for the same field replace earlier ones)."""
    axes: dict[str, list[object]] = {}
    for option in options or DEFAULT_MATRIX:
        field, sep, values = option.partition("=")
        field = field.strip()
        if not sep or field not in _FIELDS:
            raise MatrixError(f"--matrix {option!r}: expected FIELD=V1,V2 with FIELD one of {', '.join(_FIELDS)}")
        axes[field] = [_value(field, v.strip()) for v in values.split(",")]
    specs, seen = [], set()
    for combination in itertools.product(*axes.values()):
        fields = dict(zip(axes, combination))
        kind = fields.get("subscription_type", SubscriptionType.SHARED)
        try:
            spec = ALL_TYPES[kind.value].with_(**fields)
        except ValueError as error:
            raise MatrixError(f"--matrix: {error}") from None
        if spec_id(spec) not in seen:
            seen.add(spec_id(spec))
            specs.append(spec)
    return specs
