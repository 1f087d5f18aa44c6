"""The broker's subscription cursor, as a value: markDeletePosition, individually deleted ranges,
batch-deleted indexes and the read position.

Follows `ManagedCursorImpl` (managed-ledger): an individual ack adds the entry to
`individualDeletedMessages`, a set of open-closed ranges `(lower, upper]`; markDeletePosition then
advances while the next entry is deleted, and every range at or below it is dropped. A cumulative
ack moves markDeletePosition to the acked entry (never back). With batch-index acks the broker keeps
the acked indexes of a partly acked batch entry (`batchDeletedIndexes`) and deletes the entry when
its last index is acked. A reset (seek) puts markDeletePosition just before the target and clears
the ranges and the batch indexes: the only move of markDeletePosition backwards.

Positions are entry numbers on the topic (0, 1, 2, ...), the model's stand-in for `ledger:entry`;
-1 is "before the first entry". Every function is pure and returns a new, canonical cursor: equal
acked sets give equal cursors.

Invariants (proved over symbolic cursors in suites/invariants, and checked by `check_normalized`):
- ranges are sorted, non-empty, disjoint and non-adjacent, and all lie above markDeletePosition;
- an entry is acknowledged exactly when it is at or below markDeletePosition or inside a range;
- batch-deleted indexes exist only for entries that are not acknowledged, and never all of them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from operator import itemgetter

from model.records import maker

Range = tuple[int, int]  # (lower, upper]: entries lower+1 .. upper
_UPPER = itemgetter(1)
BatchIndexes = tuple[int, frozenset[int]]  # (entry, acked batch indexes) of a partly acked batch


@dataclass(frozen=True, slots=True, kw_only=True)
class Cursor:
    mark_delete: int = -1
    individually_deleted: tuple[Range, ...] = ()
    batch_deleted: tuple[BatchIndexes, ...] = ()
    read_position: int = 0

    def is_acknowledged(self, entry: int) -> bool:
        if entry <= self.mark_delete:
            return True
        ranges = self.individually_deleted
        # Ranges are sorted and disjoint: the only candidate is the first whose upper end >= entry.
        at = bisect_left(ranges, entry, key=_UPPER)
        return at < len(ranges) and ranges[at][0] < entry

    def acked_indexes(self, entry: int) -> frozenset[int]:
        """Batch indexes of `entry` acked so far (empty unless the entry is a partly acked batch)."""
        for candidate, indexes in self.batch_deleted:
            if candidate == entry:
                return indexes
        return frozenset()

    def acknowledged(self, upto: int) -> frozenset[int]:
        """The acknowledged entries among 0..upto-1 (read off markDeletePosition and the ranges: a
        cursor read asks this of every cursor it compares)."""
        acked = set(range(min(self.mark_delete + 1, upto)))
        for lower, upper in self.individually_deleted:
            acked.update(range(lower + 1, min(upper + 1, upto)))
        return frozenset(acked)

    def backlog(self, entries: int) -> int:
        """Unacknowledged entries among the first `entries` (the broker's msgBacklog counts entries)."""
        return sum(1 for e in range(entries) if not self.is_acknowledged(e))


_make_cursor = maker(Cursor)  # Cursor(...), fast: most steps make one


def from_acknowledged(acked: Iterable[int], *, mark_delete: int = -1, batch_deleted: Iterable[BatchIndexes] = (),
                      read_position: int = 0) -> Cursor:
    """The canonical cursor whose acknowledged entries are `acked` plus everything <= mark_delete."""
    entries = sorted({e for e in acked if e > mark_delete})
    contiguous = 0
    while contiguous < len(entries) and entries[contiguous] == mark_delete + 1:
        mark_delete = entries[contiguous]
        contiguous += 1
    entries = entries[contiguous:]
    ranges: list[Range] = []
    for entry in entries:
        if ranges and ranges[-1][1] == entry - 1:
            ranges[-1] = (ranges[-1][0], entry)
        else:
            ranges.append((entry - 1, entry))
    acked_set = set(entries)
    batches = tuple(sorted(
        (entry, frozenset(indexes)) for entry, indexes in batch_deleted
        if indexes and entry > mark_delete and entry not in acked_set
    ))
    return _make_cursor(mark_delete=mark_delete, individually_deleted=tuple(ranges), batch_deleted=batches,
                        read_position=max(read_position, mark_delete + 1))


def _individual_entries(cursor: Cursor) -> set[int]:
    return {e for lower, upper in cursor.individually_deleted for e in range(lower + 1, upper + 1)}


def delete(cursor: Cursor, entries: Iterable[int]) -> Cursor:
    """Individual ack of whole entries (`asyncDelete`); entries already acknowledged are ignored."""
    return from_acknowledged(_individual_entries(cursor) | set(entries), mark_delete=cursor.mark_delete,
                             batch_deleted=cursor.batch_deleted, read_position=cursor.read_position)


def mark_delete(cursor: Cursor, entry: int) -> Cursor:
    """Cumulative ack of `entry` (`asyncMarkDelete`): everything up to it is acknowledged."""
    return from_acknowledged(_individual_entries(cursor), mark_delete=max(cursor.mark_delete, entry),
                             batch_deleted=cursor.batch_deleted, read_position=cursor.read_position)


def delete_batch_index(cursor: Cursor, entry: int, index: int, batch_size: int) -> Cursor:
    """Batch-index ack: remember the index; the entry is deleted when all `batch_size` are acked."""
    if not 0 <= index < batch_size:
        raise ValueError(f"batch index {index} is outside a batch of {batch_size}")
    if cursor.is_acknowledged(entry):
        return cursor
    indexes = cursor.acked_indexes(entry) | {index}
    others = tuple(b for b in cursor.batch_deleted if b[0] != entry)
    if indexes >= frozenset(range(batch_size)):
        return delete(_make_cursor(mark_delete=cursor.mark_delete, individually_deleted=cursor.individually_deleted,
                                   batch_deleted=others, read_position=cursor.read_position), [entry])
    return _make_cursor(mark_delete=cursor.mark_delete, individually_deleted=cursor.individually_deleted,
                        batch_deleted=tuple(sorted(others + ((entry, indexes),))), read_position=cursor.read_position)


def reset(cursor: Cursor, entry: int) -> Cursor:
    """Seek / reset-cursor to `entry`: it and everything after it are unacknowledged again.

    `ManagedCursorImpl.internalResetCursor`: markDeletePosition := previous(entry), the individually
    deleted ranges and batch indexes are cleared, the read position is the target.
    """
    return _make_cursor(mark_delete=entry - 1, read_position=entry)


def advance_read(cursor: Cursor, entry: int) -> Cursor:
    """The dispatcher has read up to (not including) `entry`."""
    if entry <= cursor.read_position:
        return cursor
    return _make_cursor(mark_delete=cursor.mark_delete, individually_deleted=cursor.individually_deleted,
                        batch_deleted=cursor.batch_deleted, read_position=entry)


def rewind(cursor: Cursor) -> Cursor:
    """Read again from the first unacknowledged entry (redelivery on Exclusive/Failover, reconnect)."""
    return _make_cursor(mark_delete=cursor.mark_delete, individually_deleted=cursor.individually_deleted,
                        batch_deleted=cursor.batch_deleted, read_position=cursor.mark_delete + 1)


def normalization_violations(cursor: Cursor) -> tuple[str, ...]:
    """What, if anything, breaks the cursor's normal form (empty when it is normalized)."""
    problems = []
    previous_upper = None
    for lower, upper in cursor.individually_deleted:
        if lower >= upper:
            problems.append(f"empty range ({lower}..{upper}]")
        if lower <= cursor.mark_delete:
            problems.append(f"range ({lower}..{upper}] is not above markDeletePosition {cursor.mark_delete}")
        if previous_upper is not None and lower <= previous_upper:
            problems.append(f"range ({lower}..{upper}] overlaps or touches the one before it")
        previous_upper = upper
    for entry, indexes in cursor.batch_deleted:
        if cursor.is_acknowledged(entry):
            problems.append(f"batch indexes kept for entry {entry}, which is acknowledged")
        if not indexes:
            problems.append(f"empty batch index set for entry {entry}")
    if cursor.read_position <= cursor.mark_delete:
        problems.append(f"read position {cursor.read_position} is not after markDeletePosition {cursor.mark_delete}")
    return tuple(problems)


def describe_read(value: Cursor | tuple[Cursor, ...]) -> str:
    """A cursor read's value: one cursor, or one per partition (or topic) of a consumer of several."""
    if isinstance(value, tuple):
        return "; ".join(f"{i}: {describe(each)}" for i, each in enumerate(value))
    return describe(value)


def describe(cursor: Cursor) -> str:
    holes = ", ".join(f"({lower}..{upper}]" for lower, upper in cursor.individually_deleted) or "none"
    text = f"markDelete={cursor.mark_delete} deleted={holes} read={cursor.read_position}"
    if cursor.batch_deleted:
        text += " batch=" + ", ".join(f"{e}:{sorted(ix)}" for e, ix in cursor.batch_deleted)
    return text
