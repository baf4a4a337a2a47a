"""Every ```python sample in README.md and docs/*.md runs as written (sybil, one process per document).

A new document is picked up by itself. The conventions samples rely on (the ``stub``
server, the ``agent``, ``# partial:`` and ``# file:`` first lines) are in
``tests/doc_samples.py`` and the README's "Documentation samples" section.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RUNNER = Path(__file__).resolve().parent / "doc_samples.py"
DOCUMENTS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])


def _has_samples(path: Path) -> bool:
    return "```python" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if _has_samples(d)], ids=lambda d: d.name)
def test_samples_run(document: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    result = subprocess.run(
        [sys.executable, str(RUNNER), str(document)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, f"{document.relative_to(REPO)}\n{result.stdout}\n{result.stderr}"


def test_partial_samples_say_why() -> None:
    # `# partial:` with nothing after it would hide a sample from the run without a reason.
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in re.finditer(r"```python\n#\s*partial:(.*)", text):
            assert match.group(1).strip(), f"{document.name}: '# partial:' needs a reason"


def test_a_failing_sample_names_its_line(tmp_path: Path) -> None:
    doc = tmp_path / "broken.md"
    doc.write_text("# Broken\n\n```python\nx = 1\n```\n\nText.\n\n```python\nassert x == 2, 'nope'\n```\n")
    result = subprocess.run([sys.executable, str(RUNNER), str(doc)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "broken.md:10: this sample failed" in result.stderr
    assert 'File "' + str(doc) + '", line 10' in result.stderr  # the traceback points into the document
    assert "AssertionError: nope" in result.stderr


def test_partial_and_file_samples(tmp_path: Path) -> None:
    doc = tmp_path / "parts.md"
    doc.write_text(
        "```python\n# partial: shows a call shape only\nagent.run(undefined_client)\n```\n"
        "```python\n# file: helpers/tools.py\ndef double(x):\n    return 2 * x\n```\n"
        "```python\nfrom helpers.tools import double\nassert double(2) == 4\n```\n"
        "```python\n# partial: still has to be Python\ndef broken(:\n```\n"
    )
    result = subprocess.run([sys.executable, str(RUNNER), str(doc)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "parts.md:15: this sample failed" in result.stderr  # the sample starts there
    assert "line 16" in result.stderr
    assert "SyntaxError" in result.stderr
