"""The Spark and Arrow schemas of a history event (`model.history.Event`), of the per-program
table written next to every corpus, and the reader that checks an input against them.

One column per field of `Event`, in its order; `keys` is array<string>. A corpus is Parquet
partitioned by `spec_id` (the column lives in the directory names `spec_id=<id>/`, not in the
files); a single history is JSON lines, one `Event` per line (`model.history.to_json_line`).

The reader never drops or coerces anything silently: a missing file, a file that is not Parquet,
a missing, unexpected or mistyped column, or a value outside the vocabulary (an unknown op, an
outcome other than ok/fail/info) is a `CorpusError` that names the file, the column or the line.
Lossless widenings (an int32 where int64 is expected) are accepted.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as T

from model.history import FIELDS, OP_KINDS, Event, MalformedEvent, from_json_line

PARTITION = "spec_id"
OUTCOMES = ("ok", "fail", "info")
KNOWN_OPS = tuple(OP_KINDS.values())
REQUIRED = ("program_id", "step", "spec_id", "spec", "op", "outcome", "at")

_STRING, _INT, _LONG, _BOOL, _DOUBLE = "string", "int", "long", "boolean", "double"
_KEYS = "array<string>"
# One entry per field of model.history.Event, in its order (suites/traces/test_schema checks it).
EVENT_TYPES: dict[str, str] = {
    "program_id": _STRING, "step": _INT, "spec_id": _STRING, "spec": _STRING, "op": _STRING,
    "consumer": _STRING, "entry": _INT, "index": _INT, "keys": _KEYS, "batched": _BOOL, "ms": _LONG,
    "outcome": _STRING, "at": _LONG, "delivered_entry": _INT, "delivered_index": _INT,
    "redelivery_count": _INT, "cursor": _STRING, "sent": _INT, "error": _STRING, "partition": _INT,
}
# The companion table: one row per program, what a diff joins first.
PROGRAM_TYPES: dict[str, str] = {
    "spec_id": _STRING, "program_id": _STRING, "seed": _LONG, "steps": _INT, "fingerprint": _LONG,
}

# What a generate task or a record chunk reports to the job.
TASK_STATUS_TYPES: dict[str, str] = {
    "spec_id": _STRING, "chunk": _INT, "programs": _INT, "resumed": _INT, "events": _LONG, "seconds": _DOUBLE,
}

_SPARK = {_STRING: T.StringType(), _INT: T.IntegerType(), _LONG: T.LongType(), _BOOL: T.BooleanType(),
          _DOUBLE: T.DoubleType(), _KEYS: T.ArrayType(T.StringType(), containsNull=True)}
_ARROW = {_STRING: pa.string(), _INT: pa.int32(), _LONG: pa.int64(), _BOOL: pa.bool_(), _DOUBLE: pa.float64(),
          _KEYS: pa.list_(pa.string())}
# What a file may hold instead of the declared type without losing anything.
_WIDENS_TO = {
    _INT: {pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()},
    _LONG: {pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()},
    _STRING: {pa.string(), pa.large_string()},
    _BOOL: {pa.bool_()},
}


def _accepts(kind: str, actual: pa.DataType) -> bool:
    if kind == _KEYS:  # any list of strings, whatever its item field is called
        return ((pa.types.is_list(actual) or pa.types.is_large_list(actual))
                and actual.value_type in _WIDENS_TO[_STRING])
    return actual in _WIDENS_TO[kind]


def _exact(kind: str, actual: pa.DataType) -> bool:
    if kind == _KEYS:
        return pa.types.is_list(actual) and actual.value_type == pa.string()
    return actual == _ARROW[kind]


def spark_schema(types: dict[str, str], *, without: Iterable[str] = ()) -> T.StructType:
    skip = set(without)
    return T.StructType([T.StructField(name, _SPARK[kind], nullable=True)
                         for name, kind in types.items() if name not in skip])


def arrow_schema(types: dict[str, str], *, without: Iterable[str] = ()) -> pa.Schema:
    skip = set(without)
    return pa.schema([pa.field(name, _ARROW[kind]) for name, kind in types.items() if name not in skip])


EVENT_SCHEMA = spark_schema(EVENT_TYPES)
EVENT_ARROW = arrow_schema(EVENT_TYPES)
EVENT_FILE_ARROW = arrow_schema(EVENT_TYPES, without=[PARTITION])  # what a partitioned file holds
PROGRAM_SCHEMA = spark_schema(PROGRAM_TYPES)
PROGRAM_ARROW = arrow_schema(PROGRAM_TYPES)
TASK_STATUS_SCHEMA = spark_schema(TASK_STATUS_TYPES)
TASK_STATUS_ARROW = arrow_schema(TASK_STATUS_TYPES)


class CorpusError(ValueError):
    """An input or output that cannot be used; the message says exactly what is wrong."""

    def __init__(self, path: str | os.PathLike, problems: list[str] | str) -> None:
        self.path = str(path)
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        shown = self.problems[:20]
        more = f"\n  ... and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
        super().__init__(f"{self.path}:\n  " + "\n  ".join(shown) + more)


# -- Parquet ------------------------------------------------------------------------------------
def data_files(path: Path) -> list[Path]:
    """The data files of a Parquet dataset, skipping what Spark skips (`_*`, `.*`)."""
    if path.is_file():
        return [path]
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        found.extend(Path(root) / f for f in sorted(files) if not f.startswith(("_", ".")))
    return found


def _partition_values(file: Path, base: Path) -> dict[str, str]:
    parts = file.relative_to(base).parts[:-1] if file != base else ()
    return dict(part.split("=", 1) for part in parts if "=" in part)


def _not_parquet(file: Path, where: str) -> str | None:
    size = file.stat().st_size
    with file.open("rb") as handle:
        head = handle.read(4)
        if size >= 12:
            handle.seek(size - 4)
            tail = handle.read(4)
        else:
            tail = b""
    if head == b"PAR1" and tail == b"PAR1":
        return None
    if size == 0:
        return f"{where}: empty file, not Parquet"
    hint = " (it looks like JSON lines: give the .jsonl file as a history)" if head[:1] in (b"{", b"[") else ""
    if head == b"PAR1":
        return f"{where}: truncated or corrupt Parquet (no PAR1 footer magic){hint}"
    return f"{where}: not a Parquet file (no PAR1 magic){hint}"


def type_problems(types: dict[str, str], found: pa.Schema, where: str, *, partitioned: Iterable[str] = ()) -> list[str]:
    """Missing, unexpected and mistyped columns of one file against a schema."""
    problems = []
    in_path = set(partitioned)
    names = set(found.names)
    for name, kind in types.items():
        if name in names:
            actual = found.field(name).type
            if not _accepts(kind, actual):
                problems.append(f"{where}: column {name!r} has type {actual}, expected {_ARROW[kind]}")
        elif name not in in_path:
            problems.append(f"{where}: missing column {name!r} ({_ARROW[kind]})")
    for name in found.names:
        if name not in types:
            problems.append(f"{where}: unexpected column {name!r} ({found.field(name).type}); "
                            f"the schema has {', '.join(types)}")
    return problems


def inspect_parquet(path: str | os.PathLike, types: dict[str, str] = EVENT_TYPES) -> list[str]:
    """Every problem of a Parquet file or dataset against `types` (empty: it matches)."""
    base = Path(path)
    if not base.exists():
        return [f"{base}: not found"]
    files = data_files(base)
    if not files:
        return [f"{base}: no data files (an empty directory is not a corpus)"]
    problems = []
    for file in files:
        where = str(file.relative_to(base)) if file != base else str(file)
        bad = _not_parquet(file, where)
        if bad:
            problems.append(bad)
            continue
        try:
            found = pq.read_schema(file)
        except (pa.ArrowException, OSError) as error:
            problems.append(f"{where}: corrupt Parquet footer: {error}")
            continue
        problems.extend(type_problems(types, found, where, partitioned=_partition_values(file, base)))
    return problems


def exact_file_schema(path: str | os.PathLike, types: dict[str, str]) -> bool:
    """True when every file stores exactly the declared types (no widening cast needed)."""
    for file in data_files(Path(path)):
        found = pq.read_schema(file)
        if not all(_exact(types[name], found.field(name).type) for name in found.names):
            return False
    return True


# -- JSON lines ---------------------------------------------------------------------------------
_PY_TYPES = {_STRING: str, _INT: int, _LONG: int, _BOOL: bool}


def _value_problem(name: str, value: object) -> str | None:
    kind = EVENT_TYPES[name]
    if value is None:
        return f"{name} must not be null" if name in REQUIRED else None
    if kind == _KEYS:
        if not isinstance(value, list) or any(k is not None and not isinstance(k, str) for k in value):
            return f"{name} must be a list of strings or nulls, got {value!r}"
        return None
    expected = _PY_TYPES[kind]
    if expected is int and (isinstance(value, bool) or not isinstance(value, int)):
        return f"{name} must be an integer, got {value!r}"
    if not isinstance(value, expected):
        return f"{name} must be a {expected.__name__}, got {value!r}"
    if kind == _INT and not -2**31 <= value < 2**31:
        return f"{name} is out of the int32 range: {value}"
    return None


def read_history(path: str | os.PathLike) -> list[Event]:
    """A JSON-lines history, every line checked; all problems are reported at once."""
    file = Path(path)
    if not file.exists():
        raise CorpusError(file, "not found")
    if file.is_dir():
        raise CorpusError(file, "a directory: a JSON-lines history is one file (a corpus is a Parquet directory)")
    events, problems = [], []
    with file.open("r", encoding="utf-8", errors="strict") as handle:
        try:
            lines = list(handle)
        except UnicodeDecodeError as error:
            raise CorpusError(file, f"not UTF-8 text ({error}); Parquet is read from a directory or .parquet file") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"line {number}: "
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{where}not JSON: {error}")
            continue
        typed = [p for name, value in raw.items() if name in EVENT_TYPES
                 for p in [_value_problem(name, value)] if p] if isinstance(raw, dict) else []
        if typed:
            problems.extend(where + p for p in typed)
            continue
        try:
            events.append(from_json_line(line, where=where))
        except MalformedEvent as error:
            problems.append(str(error) if str(error).startswith(where) else where + str(error))
    if problems:
        raise CorpusError(file, problems)
    if not events:
        raise CorpusError(file, "no events (the file is empty)")
    return events


def events_table(events: Iterable[Event]) -> pa.Table:
    """Events as an Arrow table in the event schema."""
    rows = [dataclasses.astuple(e) for e in events]
    columns = list(zip(*rows)) if rows else [()] * len(FIELDS)
    arrays = [pa.array([list(v) if isinstance(v, tuple) else v for v in col], type=EVENT_ARROW.field(name).type)
              if name == "keys" else pa.array(col, type=EVENT_ARROW.field(name).type)
              for name, col in zip(FIELDS, columns)]
    return pa.Table.from_arrays(arrays, schema=EVENT_ARROW)
