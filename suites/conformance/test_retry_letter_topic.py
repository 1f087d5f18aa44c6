"""A consumer with a retry letter topic: reconsume_later acknowledges and hands the message back later.

With `enableRetry` the client subscribes to the topic and to `<topic>-<subscription>-RETRY` as one
multi-topics consumer. A reconsume_later publishes a copy of the message to the retry topic, with
the delay asked, and acknowledges the message once the copy is published: the message does not
come again, and the copy, a message of its own with a redelivery count of 0, comes once its delay
is over (the broker's delayed delivery tracker may hand it out up to one tick early), on every
subscription type (the Java client reads the retry topic as Shared). The copy reconsumed
max_redeliver_count times goes to the dead-letter topic at its next reconsume_later: no copy comes.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("retry_letter_topic")],
                         ids=[name for name, _ in cases("retry_letter_topic")])
def test_retry_letter_topic(spec, target, target_name, program_ids, request):
    verify(check("retry_letter_topic"), spec, target, program_ids, target_name, request.config)
