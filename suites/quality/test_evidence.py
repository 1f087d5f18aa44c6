"""The evidence measure's parts, each on a small case (the full run is `python -m suites.quality.evidence`).

The model agrees with every stored observation; a mutant stricter than the broker is told apart
by a broker history, one more permissive than the model by a fault's history; one that changes
nothing any observation reaches is unevidenced.
"""

import model.nondet
from suites.quality.evidence import (BROKER, FAULT, SHOWN_BY_BROKER, SHOWN_BY_FAULT, UNEVIDENCED, judge, run_mutant,
                                     stored_observations)
from suites.quality.mutator import edited


def test_the_model_agrees_with_every_stored_observation():
    observations = stored_observations()
    kinds = {o.kind for o in observations}
    assert {BROKER, FAULT} <= kinds, kinds
    assert judge(model.nondet, observations) == {}


def test_a_mutant_stricter_than_the_broker_is_shown_by_a_broker_history(tmp_path):
    """Forgetting the requested redelivery that a spare delivery leaves on its way refuses what the
    broker did in history broker-pending-rewind-survives-a-spare-delivery."""
    mutant = edited("transitions/receive.py",
                    "pending = (message.redelivery_from, message.redelivery_by) if used_extra else (None, None)",
                    "pending = (None, None)", number=9000)
    result = run_mutant(mutant, tmp_path, stored_observations())
    assert result["outcome"] == SHOWN_BY_BROKER, result
    assert result["told"][SHOWN_BY_BROKER]["history"].startswith("broker-"), result["told"]


def test_a_mutant_more_permissive_than_the_model_is_shown_by_a_fault(tmp_path):
    """A receive that skips every delivery check accepts a faulty target's duplicate."""
    mutant = edited("transitions/receive.py", "    if problem is not None:\n        return problem",
                    "    if problem is not None and False:\n        return problem", number=9001)
    result = run_mutant(mutant, tmp_path, stored_observations())
    assert SHOWN_BY_FAULT in result["told"], result
    assert result["told"][SHOWN_BY_FAULT]["mutant"] == "accepts"


def test_a_mutant_no_observation_reaches_is_unevidenced(tmp_path):
    mutant = edited("transitions/receive.py", "if stale_key_copy(state, message, consumer):",
                    "if stale_key_copy(state, message, consumer) and False:", number=9002)
    observations = [o for o in stored_observations() if "Key_Shared" not in o.name]
    result = run_mutant(mutant, tmp_path, observations)
    assert result["outcome"] == UNEVIDENCED, result
