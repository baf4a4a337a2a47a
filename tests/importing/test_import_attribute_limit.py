"""Text cut at an attribute length limit is still valid text: only the limit, when known, finds it.

Hand-made OpenLLMetry indexed spans (``gen_ai.prompt.N.content``); the real OpenLLMetry
producing them is in tests/importing/test_openllmetry_indexed.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import rewind
from rewind.cli import cli

sys.path.insert(0, str(Path(__file__).parent))
from test_import_layouts import span, write

LIMIT = 32
PROMPT = "tell me about the flights to Lisbon tomorrow morning"[:LIMIT]


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"):
        monkeypatch.delenv(name, raising=False)
    attributes = {
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini",
        "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": PROMPT,
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "Two flights.",
        "gen_ai.completion.0.finish_reason": "stop",
    }
    return write(tmp_path / "spans.jsonl", [span("00000000000000c1", "openai.chat", 0, attributes)])


def steps(path: Path) -> list[dict[str, object]]:
    checked = CliRunner().invoke(cli, ["check", str(path), "--json"])
    return list(json.loads(checked.output)["results"])


def test_unknown_limit_looks_whole(source: Path, tmp_path: Path) -> None:
    report = rewind.import_telemetry(source, tmp_path / "run.rewind")
    assert report.replayable and [s.layout for s in report.steps] == ["openllmetry"]


@pytest.mark.parametrize(
    "how", ["option", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"]
)
def test_a_known_limit_flags_text_exactly_that_long(
    how: str, source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run.rewind"
    args = ["import", str(source), "-o", str(out)]
    if how == "option":
        args += ["--attribute-limit", str(LIMIT)]
    else:
        monkeypatch.setenv(how, str(LIMIT))
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and "content_truncated" in result.output, result.output
    [step] = steps(out)
    assert step["status"] == "not replayable"
    assert "gen_ai.prompt.0.content" in json.dumps(step["problems"])
