"""Tests of `rewind import` against real third-party instrumentations (make test-import).

Each file skips cleanly where its instrumentation package is not installed: they live in
the .venv-import-* venvs (importers/*.txt), not in the main .venv.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
