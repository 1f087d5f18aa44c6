"""Receiver queue and flow permits (Shared): a consumer's client grants the broker permits up to
receiver_queue_size, and the broker sends it entries only while it has some. So when one consumer
takes nothing, it holds at most its queue's worth: receiver_queue_size entries, whole batches (the
broker counts permits in messages but sends entries, at one message per entry for a new consumer);
a zero-queue consumer holds one message, and only while a receive waits for it, and everything else must come
to the consumers that do receive (PersistentDispatcherMultipleConsumers: a consumer without permits
is skipped; C++ ConsumerImpl: permits are granted as the application receives).
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("receiver_queue")],
                         ids=[name for name, _ in cases("receiver_queue")])
def test_receiver_queue(spec, target, target_name, program_ids, request):
    verify(check("receiver_queue"), spec, target, program_ids, target_name, request.config)
