"""Seek: the cursor is reset; holes and batch indexes are cleared.

ManagedCursorImpl.internalResetCursor: markDeletePosition := the entry before the target, the
individually deleted ranges are cleared, so seeking back redelivers messages acked after the target.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("seek")], ids=[name for name, _ in cases("seek")])
def test_seek(spec, target, target_name, program_ids, request):
    verify(check("seek"), spec, target, program_ids, target_name, request.config)
