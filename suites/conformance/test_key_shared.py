"""Key_Shared: a key stays with its consumer while that consumer is connected.

Keys may move only to a consumer that joined after the key was bound (or back from a consumer
that left); messages of a key are never given to another consumer that was there all along.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("key_shared")], ids=[name for name, _ in cases("key_shared")])
def test_key_shared(spec, target, target_name, program_ids, request):
    verify(check("key_shared"), spec, target, program_ids, target_name, request.config)
