"""What runs inside the executors: programs executed by the model (generate) or by a target
(record), written as Parquet files of events in the event schema by the Python worker itself.

Generation: task `t` of a `GenerationPlan` runs programs `start..stop` of one spec and writes
them as one file, `spec_id=<key>/task-<t>.parquet` (written to a temporary name and renamed, so
a retried task leaves one whole file); program `i` has the id `p<i>` (zero-padded) and the seed
`(seed << 32) | i`, so any program can be run again alone with
`traces.programs.run_on_model(spec, program_seed(seed, i), steps)`. A program the model
rejects (run_on_model raises AssertionError) is left out; the job lists it.

Recording: the corpus's events come sorted by (spec, chunk, program, step), each with its
program's seed. A program with a seed is run closed-loop (traces/programs.py): the generator draws
each op from what the target delivered, so its history means something to its end on a target
that chooses otherwise than the model's ideal broker; it stops at the first observation the model
does not allow. A program without a seed (a corpus of stored histories has no generator to run
again) is replayed open-loop: its op sequence is rebuilt with `model.history.op_of` and invoked as
it is. Either way an op the target cannot perform (it raises) is recorded as `fail` with the error
`TargetError: ...`. Every program runs on its own topic and subscription, named by the spec, the
program and the recording's run (`topic_of`): programs of different specs recorded at once never
share one. Each finished
program is appended to the chunk's journal (JSON lines ending in a commit line) before the next
starts; a finished chunk becomes one Parquet file, written to a temporary name and renamed, and
its journal is removed. A restart skips finished chunks and the committed programs of a journal.
A task records `concurrency` programs at once, each on a target of its own (a driver process per
program in flight on a real broker), from one pool across its chunks: the broker and the clients
wait on windows and receives most of the time, so programs recorded side by side cost little more
wall time than one.
"""

from __future__ import annotations

import json
import logging
import operator
import os
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from model import ops as o
from model.history import FIELDS, Event, event_of, event_values, from_json_line, op_of, spec_of, to_json_line
from traces.programs import run_closed_loop, run_on_model
from traces.schema import EVENT_FILE_ARROW, PARTITION, TASK_STATUS_ARROW
from traces.targets import TargetSpec

log = logging.getLogger("traces.run")
PAGE_ROWS = 4000  # as traces.corpus.PAGE_ROWS: small pages with an index, for diffs that read few programs
ROW_GROUP_ROWS = 1 << 20
_ROW = operator.attrgetter(*FIELDS)
_PER_PROGRAM = ("program_id", "spec_id", "spec")


def program_id(i: int, width: int) -> str:
    return f"p{i:0{width}d}"


def program_seed(seed: int, i: int) -> int:
    return (seed << 32) | i


def id_width(programs: int) -> int:
    return max(6, len(str(max(programs - 1, 0))))


def _batch(events: list[Event], repeated: list[tuple[int, tuple[str, str, str]]], schema: pa.Schema) -> pa.RecordBatch:
    """Events as one batch; program id and spec are built per program (pa.repeat) rather than per row."""
    columns = list(zip(*map(_ROW, events)))
    arrays = []
    for position, name in enumerate(FIELDS):
        if name not in schema.names:
            continue
        if name in _PER_PROGRAM:
            which = _PER_PROGRAM.index(name)
            arrays.append(pa.concat_arrays([pa.repeat(pa.scalar(values[which]), count) for count, values in repeated]))
        else:
            arrays.append(pa.array(columns[position], type=schema.field(name).type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# -- generate -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class GenerationPlan:
    specs: tuple[tuple[str, str], ...]  # (spec_id, spec JSON)
    programs: int  # per spec
    steps: int
    seed: int
    chunk: int  # programs per task

    @property
    def chunks_per_spec(self) -> int:
        return -(-self.programs // self.chunk)

    @property
    def tasks(self) -> int:
        return len(self.specs) * self.chunks_per_spec

    def task(self, number: int) -> tuple[int, int, int]:
        """(spec index, first program, end) of task `number`."""
        spec_index, chunk = divmod(number, self.chunks_per_spec)
        start = chunk * self.chunk
        return spec_index, start, min(start + self.chunk, self.programs)


def task_file(out: str | Path, key: str, task: int) -> Path:
    return Path(out) / f"{PARTITION}={key}" / f"task-{task:05d}.parquet"


_FILE_COLUMNS = tuple(FIELDS.index(name) for name in EVENT_FILE_ARROW.names)


def _write_events(rows: list[tuple], text: str, file: Path) -> None:
    """One task's events (tuples in FIELDS order, in program and step order) as one Parquet file
    of the spec's partition. The spec's JSON is dictionary-encoded in memory (one copy, not one
    per event; Parquet stores it as one dictionary entry either way) and written without the Arrow
    schema, so the file reads back as the plain string column a corpus holds."""
    columns = list(zip(*rows))
    arrays = []
    for name, field, position in zip(EVENT_FILE_ARROW.names, EVENT_FILE_ARROW, _FILE_COLUMNS):
        if name == "spec":
            arrays.append(pa.DictionaryArray.from_arrays(pa.array([0] * len(rows), pa.int8()), pa.array([text])))
        else:
            arrays.append(pa.array(columns[position], type=field.type))
    _write_atomically(pa.Table.from_arrays(arrays, names=EVENT_FILE_ARROW.names), file, store_schema=False)


def generate_files(plan: GenerationPlan, out: str, tasks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: task numbers in; each task's programs run by the model and written by this
    worker as one Parquet file of the corpus's events (`out`: its events directory, a local path or
    a shared mount, as for `record`); one status row per task out. Written here rather than handed
    to the JVM: carrying each event to the JVM and encoding it there cost about a third of the
    generation's CPU."""
    width = id_width(plan.programs)
    for task_batch in tasks:
        for number in task_batch.column(0).to_pylist():
            started = time.monotonic()
            spec_index, start, stop = plan.task(number)
            key, text = plan.specs[spec_index]
            spec = spec_of(text)
            rows: list[tuple] = []
            programs = 0
            for i in range(start, stop):
                try:
                    trace = run_on_model(spec, program_seed(plan.seed, i), plan.steps)
                except AssertionError:
                    continue  # the model rejected its own answer: listed by the job, not written
                pid = program_id(i, width)
                programs += 1
                rows.extend(event_values(pid, spec, step, op, completion, spec_text=text, spec_key=key)
                            for step, (op, completion) in enumerate(trace))
            if rows:
                _write_events(rows, text, task_file(out, key, number))
            yield pa.RecordBatch.from_pylist([{"spec_id": key, "chunk": number, "programs": programs, "resumed": 0,
                                               "events": len(rows), "seconds": time.monotonic() - started}],
                                             schema=TASK_STATUS_ARROW)


# -- record -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class RecordPlan:
    out: str  # the recording's directory (events/ and _journal/ below it)
    target: TargetSpec
    run: str  # unique per record invocation: fresh topic names on a real broker
    concurrency: int = 1  # programs recorded at once per task, each on a target of its own


def chunk_file(out: str | Path, key: str, chunk: int) -> Path:
    return Path(out) / "events" / f"{PARTITION}={key}" / f"chunk-{chunk:05d}.parquet"


def journal_file(out: str | Path, key: str, chunk: int) -> Path:
    return Path(out) / "_journal" / f"{PARTITION}={key}" / f"chunk-{chunk:05d}.jsonl"


def read_journal(file: Path) -> dict[str, list[Event]]:
    """Committed programs of a journal; an unfinished tail (a crash mid-program) is cut off."""
    if not file.exists():
        return {}
    committed: dict[str, list[Event]] = {}
    pending: list[Event] = []
    good_end = 0
    with file.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break
            line = raw.decode()
            if line.startswith('{"commit"'):
                marker = json.loads(line)
                if len(pending) == marker["events"] and all(e.program_id == marker["commit"] for e in pending):
                    committed[marker["commit"]] = pending
                pending = []
                good_end = handle.tell()
            else:
                pending.append(from_json_line(line, where=f"{file}: "))
    if good_end != file.stat().st_size:
        with file.open("r+b") as handle:
            handle.truncate(good_end)
    return committed


def _source_event(row: dict) -> Event:
    values = {name: row[name] for name in FIELDS}
    if values["keys"] is not None:
        values["keys"] = tuple(values["keys"])
    return Event(**values)


def topic_of(spec_key: str, program_id: str, run: str) -> str:
    """The topic (and so the subscription's home) of one program of one spec in one recording: the
    program ids repeat per spec, and two recordings run at once must not meet either."""
    return f"{spec_key}-{program_id}-{run}"


def record_program(target, rows: list[dict], run: str) -> list[Event]:
    """Run one program on the target: closed-loop from its seed when it has one, its recorded ops
    otherwise; every op performed is recorded, whatever the target answers."""
    first = rows[0]
    spec = spec_of(first["spec"])
    pid, key, text = first["program_id"], first["spec_id"], first["spec"]
    topic = topic_of(key, pid, run)
    if first.get("seed") is not None:
        history, _ = run_closed_loop(target, spec, first["seed"], len(rows), topic)
        return [event_of(pid, spec, step, op, completion, spec_text=text, spec_key=key)
                for step, (op, completion) in enumerate(history)]
    broken = None
    try:
        target.reset(spec, topic)
    except Exception as error:  # noqa: BLE001 - a target that cannot start the program: every op fails
        broken = f"TargetError: reset: {type(error).__name__}: {error}"
    events, at = [], 0
    for row in rows:
        op = op_of(_source_event(row))
        if broken is not None:
            completion = o.fail(broken, at=at)
        else:
            try:
                completion = target.invoke(op)
            except Exception as error:  # noqa: BLE001 - recorded, the program goes on
                completion = o.fail(f"TargetError: {type(error).__name__}: {error}", at=at)
        at = max(at, completion.at)
        events.append(event_of(pid, spec, row["step"], op, completion, spec_text=text, spec_key=key))
    return events


def _write_atomically(table: pa.Table, file: Path, *, store_schema: bool = True) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    temporary = file.with_name(f".{file.name}.tmp-{uuid.uuid4().hex[:8]}")
    pq.write_table(table, temporary, compression="snappy", max_rows_per_page=PAGE_ROWS, write_page_index=True,
                   row_group_size=ROW_GROUP_ROWS, store_schema=store_schema, write_page_checksum=True)
    with temporary.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, file)


class _Chunk:
    def __init__(self, plan: RecordPlan, key: str, chunk: int) -> None:
        self.plan, self.key, self.chunk = plan, key, chunk
        self.journal = journal_file(plan.out, key, chunk)
        self.done = read_journal(self.journal)
        self.resumed = len(self.done)
        self.started = time.monotonic()
        # A program taken up again after a crash must not find its first attempt's messages: each
        # attempt at a chunk names its topics afresh.
        self.run = f"{plan.run}{uuid.uuid4().hex[:4]}"
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        self.handle = self.journal.open("a", encoding="utf-8")
        self.lock = threading.Lock()

    def submit(self, pool: ThreadPoolExecutor, targets: _Targets, programs: list[list[dict]]) -> list[Future]:
        """Queue the chunk's programs not yet committed on the task's pool; each is journaled as
        soon as it is finished, in whatever order they finish."""
        return [pool.submit(self._record_one, targets, rows) for rows in programs
                if rows[0]["program_id"] not in self.done]

    def _record_one(self, targets: _Targets, rows: list[dict]) -> None:
        pid = rows[0]["program_id"]
        with targets.lease() as target:
            events = record_program(target, rows, self.run)
        with self.lock:
            self.handle.write("".join(to_json_line(e) + "\n" for e in events))
            self.handle.write(json.dumps({"commit": pid, "events": len(events)}) + "\n")
            self.handle.flush()
            self.done[pid] = events

    def finish(self) -> pa.RecordBatch:
        events = [e for pid in sorted(self.done) for e in sorted(self.done[pid], key=lambda e: e.step)]
        repeated = [(len(self.done[pid]), (pid, self.key, self.done[pid][0].spec)) for pid in sorted(self.done)]
        if events:
            batch = _batch(events, repeated, EVENT_FILE_ARROW)
            _write_atomically(pa.Table.from_batches([batch]), chunk_file(self.plan.out, self.key, self.chunk))
        self.journal.unlink(missing_ok=True)
        seconds = time.monotonic() - self.started
        log.warning("record: spec %s chunk %d: %d programs (%d resumed), %d events in %.1f s",
                    self.key, self.chunk, len(self.done), self.resumed, len(events), seconds)
        return pa.RecordBatch.from_pylist([{"spec_id": self.key, "chunk": self.chunk, "programs": len(self.done),
                                            "resumed": self.resumed, "events": len(events), "seconds": seconds}],
                                          schema=TASK_STATUS_ARROW)


class _Targets:
    """The task's targets: one per program in flight, built when first needed and reused by the
    programs after it (a target's reset starts each program afresh)."""

    def __init__(self, spec: TargetSpec) -> None:
        self.spec = spec
        self.free: list = []
        self.built: list = []
        self.lock = threading.Lock()

    @contextmanager
    def lease(self):
        with self.lock:
            target = self.free.pop() if self.free else None
        if target is None:
            target = self.spec.build()
            with self.lock:
                self.built.append(target)
        try:
            yield target
        finally:
            with self.lock:
                self.free.append(target)

    def close(self) -> None:
        for target in self.built:
            target.close()


def _programs(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[tuple[str, int], list[dict]]]:
    """((spec, chunk), rows) of each program, from rows sorted by spec, chunk, program and step."""
    rows = (row for batch in batches for row in batch.to_pylist())
    for (key, chunk, _), program in groupby(rows, key=lambda r: (r["spec_id"], r["chunk"], r["program_id"])):
        yield (key, chunk), list(program)


def record_batches(plan: RecordPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: source events (plus `chunk`) sorted by spec, chunk, program, step in;
    one status row per finished chunk out, in the order they finish.

    The task's programs share one pool of `plan.concurrency` workers across its chunks: the next
    chunk is read and its programs queued as soon as fewer than that are waiting or running, so a
    chunk's last, slow programs (a Failover pause, a send timeout) no longer leave the other workers
    idle until they end. The first program whose target failed fails the task, as alone."""
    targets = _Targets(plan.target)
    open_chunks: list[tuple[_Chunk, list[Future]]] = []
    workers = max(1, plan.concurrency)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="record")
    try:
        for (key, number), programs in groupby(_programs(batches), key=lambda item: item[0]):
            chunk = _Chunk(plan, key, number)
            open_chunks.append((chunk, chunk.submit(pool, targets, [rows for _, rows in programs])))
            while len(running := _running(open_chunks)) >= workers:
                wait(running, return_when=FIRST_COMPLETED)
                yield from _finished(open_chunks)
            yield from _finished(open_chunks)
        while running := _running(open_chunks):
            wait(running, return_when=FIRST_COMPLETED)
            yield from _finished(open_chunks)
        yield from _finished(open_chunks)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for chunk, _ in open_chunks:
            chunk.handle.close()
        targets.close()


def _running(open_chunks: list[tuple[_Chunk, list[Future]]]) -> list[Future]:
    """The programs of the open chunks still waiting or running."""
    return [future for _, futures in open_chunks for future in futures if not future.done()]


def _finished(open_chunks: list[tuple[_Chunk, list[Future]]]) -> Iterator[pa.RecordBatch]:
    """The status of each open chunk whose programs are all done, removed from `open_chunks`; the
    error of a program whose target failed, raised."""
    for entry in list(open_chunks):
        chunk, futures = entry
        for future in futures:
            if future.done() and future.exception() is not None:
                raise future.exception()
        if all(future.done() for future in futures):
            open_chunks.remove(entry)
            chunk.handle.close()
            yield chunk.finish()
