"""The baseline: divergences a project accepts, read by the gate and written by `accept`.

An entry accepts one divergence: a guarantee broken in one cell (area, spec id), with the
signature of what was seen (reports/signatures.py), so that another fault breaking the same
guarantee in the same cell is new. Entries are added from a run's summary, never typed by hand:

    python -m reports.gate accept seek Exclusive no-loss --reason "..." --evidence "..." \\
        --results reports/out/summary.json --baseline reports/baseline.json

which checks that this run failed that cell on that guarantee (a typo in the area or the spec id
is an error that lists what the run has) and records the failure's signature, the run's target
and the client the run drove (`client`: its name, `rust`; `name==version` with --client-version),
since a client's finding is that client's: the gate matches the entry only against runs of that
client. An entry without `client` (written before the key, or with --any-client) matches every
client. `--match none` writes the signature `{}`: any failure of the guarantee in the cell, for a
client finding that breaks it in many ways (the Rust client's whole-batch ack). An entry written before signatures (none) still matches on area, spec id and guarantee
alone; the gate warns and suggests re-accepting it, which replaces it.

A client's crash is not a divergence (nothing was decided about the broker) but a known client bug
may crash it in some programs: `crashes` lists those a project accepts, each a cell where the
client crashed with a line of its own log (`log`) that names the bug, written the same way from a
run where it happened:

    python -m reports.gate accept-crash redelivery_count_and_dead_letter Shared-dlq1 \
        --log "Send to the DLQ successfully, but consumer is not ready" --reason "KD-34: ..." --evidence "..."
"""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, replace
from pathlib import Path

from model.guarantees import Guarantee
from reports.results import InputError, Summary, read_json
from reports.signatures import PARTS, differences, signature
from reports.verdicts import Accepted, Baseline, KnownCrash
from reports.vocabulary import CLIENT_CRASHED, FAILED, UNKNOWN

SCHEMA = "pulsar-ack-conformance/baseline/1"
REQUIRED = ("area", "spec_id", "guarantee", "reason", "evidence")
OPTIONAL = ("target", "client", "signature")
CRASH_REQUIRED = ("area", "spec_id", "log", "reason", "evidence")
CRASH_OPTIONAL = ("target", "client")


def load_baseline(path: Path) -> Baseline:
    where = f"baseline {path}"
    raw = read_json(Path(path), "baseline")
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise InputError(f"{where}: not a baseline (expected \"schema\": \"{SCHEMA}\")")
    extra = sorted(set(raw) - {"schema", "description", "accepted", "crashes"})
    if extra:
        raise InputError(f"{where}: unknown top-level fields {extra} (allowed: schema, description, accepted, crashes)")
    if not isinstance(raw.get("accepted"), list):
        raise InputError(f"{where}: \"accepted\" must be a list of entries (it may be empty)")
    if not isinstance(raw.get("crashes", []), list):
        raise InputError(f"{where}: \"crashes\" must be a list of entries")
    entries = tuple(_entry(item, f"{where}: accepted[{i}]") for i, item in enumerate(raw["accepted"]))
    crashes = tuple(_crash(item, f"{where}: crashes[{i}]") for i, item in enumerate(raw.get("crashes", [])))
    keys = [_key(e) for e in entries]
    twice = sorted({f"{k[0]} [{k[1]}] {k[2]}" + (f" (client {k[4]})" if k[4] else "")
                    for k in keys if keys.count(k) > 1})
    if twice:
        raise InputError(f"{where}: accepted more than once: {', '.join(twice)}")
    return Baseline(accepted=entries, crashes=crashes, description=str(raw.get("description") or ""))


def _key(entry: Accepted) -> tuple:
    return (entry.area, entry.spec_id, entry.guarantee, entry.target, entry.client,
            tuple(sorted((entry.signature or {}).items())))


def _fields(item: object, where: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict:
    """An entry's object, its required text fields present, no field it does not know; its target
    and client well formed."""
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object with {', '.join(required)}")
    unknown = sorted(set(item) - set(required) - set(optional))
    missing = [name for name in required if not (isinstance(item.get(name), str) and item[name].strip())]
    if unknown or missing:
        raise InputError(f"{where}: " + "; ".join(
            ([f"unknown fields {unknown}"] if unknown else []) + ([f"missing or empty {missing}"] if missing else [])))
    if "target" in item and not isinstance(item["target"], str):
        raise InputError(f"{where}: \"target\" must be text (a --target value)")
    if "client" in item and not _client_text(item["client"]):
        raise InputError(f"{where}: \"client\" must be a client's name, optionally with ==version "
                         "(rust, java, python==3.5.0)")
    return item


def _entry(item: object, where: str) -> Accepted:
    item = _fields(item, where, REQUIRED, OPTIONAL)
    if item["guarantee"] not in {g.value for g in Guarantee}:
        raise InputError(f"{where}: unknown guarantee {item['guarantee']!r} "
                         f"(one of {', '.join(g.value for g in Guarantee)})")
    found = item.get("signature")
    if found is not None and not (isinstance(found, dict) and set(found) <= set(PARTS)
                                  and all(isinstance(v, str) for v in found.values())):
        raise InputError(f"{where}: \"signature\" must be an object with text parts among {', '.join(PARTS)} "
                         "({} for any failure of the guarantee in the cell)")
    return Accepted(**item)


def _crash(item: object, where: str) -> KnownCrash:
    return KnownCrash(**_fields(item, where, CRASH_REQUIRED, CRASH_OPTIONAL))


def _client_text(value: object) -> bool:
    if not isinstance(value, str):
        return False
    name, equals, version = value.partition("==")
    return bool(name) and not any(c.isspace() or c == "=" for c in name + version) and (not equals or bool(version))


def run_client(summary: Summary, *, with_version: bool = False) -> str | None:
    """The client a run drove, as an entry's `client` names it (`rust`, or `rust==6.9.1`); None when
    the run drove none (an in-process target)."""
    client = summary.run.get("client") or {}
    if not client.get("name"):
        return None
    return f"{client['name']}=={client['version']}" if with_version and client.get("version") else str(client["name"])


def to_json(baseline: Baseline) -> dict:
    entries = [{k: v for k, v in asdict(e).items() if v is not None} for e in baseline.accepted]
    crashes = [{k: v for k, v in asdict(e).items() if v is not None} for e in baseline.crashes]
    return {"schema": SCHEMA, "description": baseline.description, "accepted": entries,
            **({"crashes": crashes} if crashes else {})}


def write_baseline(baseline: Baseline, path: Path) -> None:
    Path(path).write_text(json.dumps(to_json(baseline), indent=2, ensure_ascii=False) + "\n")


def accept(summary: Summary, baseline: Baseline, *, area: str, spec_id: str, guarantee: str, reason: str,
           evidence: str, target: str | None, client: str | None = None,
           parts: tuple[str, ...] = PARTS) -> tuple[Baseline, Accepted, tuple[Accepted, ...]]:
    """`baseline` with the failure of `guarantee` in this run's cell accepted for `target` and
    `client` (None: any), the new entry, and the entries it replaces (`_replaced_by`)."""
    if not (reason.strip() and evidence.strip()):
        raise InputError("accept: --reason and --evidence must not be empty")
    violation = _failure_in(summary, area, spec_id, guarantee)
    found = violation.signature or signature(violation.detail)
    chosen = {part: found[part] for part in parts if part in found}
    entry = Accepted(area=area, spec_id=spec_id, guarantee=guarantee, reason=reason, evidence=evidence,
                     target=target, client=client, signature=chosen if chosen or not parts else None)
    replaced = tuple(e for e in baseline.accepted if _replaced_by(e, entry))
    kept = tuple(e for e in baseline.accepted if e not in replaced)
    return replace(baseline, accepted=kept + (entry,)), entry, replaced


def accept_crash(summary: Summary, baseline: Baseline, *, area: str, spec_id: str, log: str, reason: str,
                 evidence: str, target: str | None, client: str | None = None
                 ) -> tuple[Baseline, KnownCrash, tuple[KnownCrash, ...]]:
    """`baseline` with the client crash of this run's cell accepted when its record contains `log`,
    the new entry, and the entries of the same cell, log text and client it replaces."""
    if not (reason.strip() and evidence.strip() and log.strip()):
        raise InputError("accept-crash: --log, --reason and --evidence must not be empty")
    entry = KnownCrash(area=area, spec_id=spec_id, log=log, reason=reason, evidence=evidence, target=target,
                       client=client)
    result = _cell(summary, area, spec_id, "accept-crash")
    if not (result.outcome == UNKNOWN and result.reason_kind == CLIENT_CRASHED):
        raise InputError(f"accept-crash: the client did not crash in {area} [{spec_id}] in this run "
                         f"({result.verdict()})")
    if not entry.matches(result):
        raise InputError(f"accept-crash: the crash in {area} [{spec_id}] does not contain {log!r} "
                         f"(its record: {result.reason})")
    replaced = tuple(e for e in baseline.crashes if (e.area, e.spec_id, e.log) == (area, spec_id, log)
                     and e.client in (None, client) and e.target in (None, target))
    kept = tuple(e for e in baseline.crashes if e not in replaced)
    return replace(baseline, crashes=kept + (entry,)), entry, replaced


def known_crash(baseline: Baseline, summary: Summary, result) -> KnownCrash | None:
    """The baseline's crash entry that accounts for this unknown cell of this run, if any."""
    target = summary.run.get("target")
    return next((e for e in baseline.crashes if e.target in (None, target) and e.for_client(summary.run)
                 and e.matches(result)), None)


def _replaced_by(old: Accepted, new: Accepted) -> bool:
    """An entry of the same cell and guarantee, for this target and client or any, that is unsigned or
    whose failures the new one accepts too (the same signature, or one the new entry's parts match:
    `{}` matches every signature): the new entry says what this run saw, for whom."""
    if (old.area, old.spec_id, old.guarantee) != (new.area, new.spec_id, new.guarantee):
        return False
    if old.client not in (None, new.client):
        return False
    if old.signature is None:
        return old.target in (None, new.target)
    return old.target == new.target and not differences(new.signature or {}, old.signature)


def _cell(summary: Summary, area: str, spec_id: str, verb: str):
    areas = summary.areas()
    if area not in areas:
        raise InputError(f"{verb}: no area {area!r} in this run{_suggest(area, areas)} (areas: {', '.join(areas)})")
    spec_ids = [r.spec_id for r in summary.results if r.area == area]
    result = summary.result(area, spec_id)
    if result is None:
        raise InputError(f"{verb}: {area} has no spec id {spec_id!r} in this run{_suggest(spec_id, spec_ids)} "
                         f"(spec ids: {', '.join(spec_ids)})")
    return result


def _failure_in(summary: Summary, area: str, spec_id: str, guarantee: str):
    result = _cell(summary, area, spec_id, "accept")
    if result.outcome != FAILED:
        raise InputError(f"accept: {area} [{spec_id}] did not fail in this run ({result.verdict()}): "
                         "only a failure can be accepted")
    violation = next((v for v in result.violations if v.guarantee == guarantee and not v.undecided), None)
    if violation is None:
        broken = sorted(result.guarantees)
        raise InputError(f"accept: {area} [{spec_id}] did not break {guarantee!r} in this run"
                         f"{_suggest(guarantee, broken)} (it broke {', '.join(broken)})")
    return violation


def _suggest(word: str, known: list[str]) -> str:
    close = difflib.get_close_matches(word, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
