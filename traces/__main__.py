"""`python -m traces generate|record|diff|validate ...`, or `spark-submit traces/__main__.py ...`."""

import sys
from pathlib import Path

if not __package__:  # run as a script (spark-submit): make the project's packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from traces.cli import main  # noqa: E402

sys.exit(main())
