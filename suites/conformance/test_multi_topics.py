"""A consumer of several topics: every guarantee holds per topic, through the multi-topics consumer.

A consumer subscribed to N topics without partitions, by their names or by a pattern that matches
them, reads N cursors, as a consumer of a topic of N partitions does. The messages of each topic
come in publish order, whatever the other topics do. A cumulative ack acknowledges its own topic's
messages up to the one it names, and no other topic's. A nack, a close, an unload and a client
crash reach every topic.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("multi_topics")], ids=[name for name, _ in cases("multi_topics")])
def test_multi_topics(spec, target, target_name, program_ids, request):
    verify(check("multi_topics"), spec, target, program_ids, target_name, request.config)
