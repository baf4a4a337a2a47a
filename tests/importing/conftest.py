"""Tests of `rewind.importing`: `rewind import`, `rewind check` and `rewind export`.

The files named by importers/*.txt run `rewind import` against real third-party
instrumentations (make test-import): each skips cleanly where its instrumentation package is
not installed, since those live in the .venv-import-* venvs, not in the main .venv. This
folder is on ``sys.path`` so that its test modules can share helpers (``otlp_files``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
