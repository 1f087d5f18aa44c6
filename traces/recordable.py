"""Which specs a recording against a broker refuses, before anything is recorded.

A recorded corpus is stored under its specs: `traces check` judges every history by them and a
comparison of two recordings pairs them. A spec the broker does not run with would turn every
program into false alarms or into hours of waiting, so the recording stops first and says why:

- the broker's runtime settings contradict the spec (`fixtures.targets.pulsar_target.
  settings_mismatches`, what the suites check before a spec's first program);
- a Failover pause much longer than the broker's (activeConsumerFailoverDelayTimeMillis): every
  switch of a recorded program waits the spec's pause out while the broker dispatched long before;
  the catalog's Failover spec assumes 200 ms beside the project broker's 100 ms;
- a wait the model asks for longer than `MAX_WAIT_MS`: Pulsar's own defaults (a nack comes back
  after 60 s) make each nack of a program a minute of sleep; the catalog's specs take 100 ms.

A broker that does not show its settings (no super-user rights) is checked on the spec alone.
"""

from __future__ import annotations

import logging

from fixtures.admin import AdminClient, AdminError
from fixtures.targets.pulsar_target import PROBE_TIMEOUT_S, settings_mismatches
from model.spec import Spec, SubscriptionType
from traces.targets import TargetError, TargetSpec

MAX_WAIT_MS = 5_000
FAILOVER_MARGIN = 2  # how many times the broker's own pause a spec may assume
FAILOVER_SETTING = "activeConsumerFailoverDelayTimeMillis"
log = logging.getLogger("traces")


def refusals(spec: Spec, settings: dict[str, str]) -> list[str]:
    """Why a broker with runtime `settings` cannot record `spec` (empty: it can)."""
    found = list(settings_mismatches(spec, settings))
    longest_nack = max(spec.nack_delay_ms, spec.nack_backoff.max_ms if spec.nack_backoff else 0)
    if longest_nack > MAX_WAIT_MS:
        found.append(f"a nack comes back after {longest_nack} ms: every nack of a recorded program waits it out "
                     f"(at most {MAX_WAIT_MS} ms; the catalog's specs take 100 ms: nack_delay_ms=100)")
    if spec.ack_timeout_ms is not None and spec.ack_timeout_ms > MAX_WAIT_MS:
        found.append(f"an ack timeout of {spec.ack_timeout_ms} ms is waited out by every program that holds a "
                     f"message (at most {MAX_WAIT_MS} ms)")
    pause = settings.get(FAILOVER_SETTING, "")
    if spec.subscription_type is SubscriptionType.FAILOVER and pause.isdigit() \
            and spec.failover_delay_ms > FAILOVER_MARGIN * max(int(pause), 1):
        found.append(f"the spec's Failover pause is {spec.failover_delay_ms} ms, the broker's {FAILOVER_SETTING} "
                     f"is {pause}: every switch would wait {spec.failover_delay_ms - int(pause)} ms for nothing "
                     f"(set failover_delay_ms to at most {FAILOVER_MARGIN * int(pause)})")
    return found


def broker_settings(target: TargetSpec) -> dict[str, str]:
    """The runtime settings of the broker `target` names ({} when it names none or hides them)."""
    if not target.admin_url:
        return {}
    try:
        return AdminClient(target.admin_url, timeout_s=PROBE_TIMEOUT_S,
                           credentials=target.credentials).runtime_configuration()
    except AdminError as error:
        log.warning("record: the broker's settings are not shown (%s); the specs are checked alone", error)
        return {}


def refuse_unrecordable(target: TargetSpec, specs: dict[str, Spec]) -> None:
    """Raise TargetError naming every spec (by its id) a recording on the broker of `target` refuses;
    nothing for a target that is not a broker (the model, a plug-in without an admin URL)."""
    if not target.admin_url:
        return
    settings = broker_settings(target)
    found = [f"spec {key} ({spec.describe()}): " + "; ".join(reasons)
             for key, spec in specs.items() if (reasons := refusals(spec, settings))]
    if found:
        raise TargetError(f"record --target {target.name}: {len(found)} of {len(specs)} specs are not ones the "
                          f"broker runs with, nothing was recorded:\n  " + "\n  ".join(found)
                          + "\nGenerate the corpus with the catalog's specs (the default of traces generate).")
