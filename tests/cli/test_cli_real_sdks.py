"""show, stats and diff over traces recorded from the real openai and anthropic SDKs.

The SDKs talk real HTTP to the bundled stub server; the instrumentors record them, streams
included, exactly as they record a user's agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.stub_server import StubServer

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

QUESTION = [{"role": "user", "content": "Name a quiet museum in Paris."}]


@pytest.fixture
def patched() -> Iterator[None]:
    from rewind.setup.integrations import patch_anthropic, patch_openai

    undo_openai, undo_anthropic = patch_openai(), patch_anthropic()
    try:
        yield
    finally:
        undo_anthropic()
        undo_openai()


def record_sdk_run(path: Path, stub: StubServer) -> dict[str, Any]:
    """Six model calls through both SDKs; returns the usage each SDK reported."""
    seen: dict[str, Any] = {"gpt": [0, 0], "claude": [0, 0]}
    oa = openai.OpenAI(base_url=stub.openai_base_url, api_key="sk-test", max_retries=0)
    an = anthropic.Anthropic(base_url=stub.anthropic_base_url, api_key="sk-ant-test", max_retries=0)
    with rewind.record(path):
        completion = oa.chat.completions.create(model="gpt-4o-mini", messages=QUESTION)
        seen["gpt"][0] += completion.usage.prompt_tokens
        seen["gpt"][1] += completion.usage.completion_tokens
        for chunk in oa.chat.completions.create(
            model="gpt-4o-mini", messages=QUESTION, stream=True, stream_options={"include_usage": True}
        ):
            if chunk.usage is not None:
                seen["gpt"][0] += chunk.usage.prompt_tokens
                seen["gpt"][1] += chunk.usage.completion_tokens
        for _ in oa.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, stream=True):
            pass  # no include_usage: this call's tokens are unknown
        response = oa.responses.create(model="gpt-4o-mini", input="Name a quiet museum in Paris.")
        seen["gpt"][0] += response.usage.input_tokens
        seen["gpt"][1] += response.usage.output_tokens
        message = an.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=QUESTION)
        seen["claude"][0] += message.usage.input_tokens
        seen["claude"][1] += message.usage.output_tokens
        with an.messages.stream(model="claude-haiku-4-5", max_tokens=100, messages=QUESTION) as stream:
            final = stream.get_final_message()
        seen["claude"][0] += final.usage.input_tokens
        seen["claude"][1] += final.usage.output_tokens
    oa.close()
    an.close()
    return seen


def row(output: str, model: str) -> list[str]:
    return next(line.split() for line in output.splitlines() if line.strip().startswith(model + " "))


def test_stats_counts_what_the_sdks_reported(run_cli, tmp_path: Path, stub: StubServer, patched: None) -> None:
    path = tmp_path / "sdk.rewind"
    seen = record_sdk_run(path, stub)
    out = run_cli("stats", path, "--no-cost").stdout
    assert "steps:      6  (llm 6 · tool 0 · memory 0)" in out
    gpt_in, gpt_out = seen["gpt"]
    claude_in, claude_out = seen["claude"]
    # Four openai calls, one streamed without usage: the totals are a floor, marked +?.
    assert row(out, "gpt-4o-mini") == ["gpt-4o-mini", "4", f"{gpt_in}+?", f"{gpt_out}+?"]
    assert row(out, "claude-haiku-4-5") == ["claude-haiku-4-5", "2", str(claude_in), str(claude_out)]
    assert "1 call(s) recorded no usage" in out
    priced = run_cli("stats", path).stdout
    assert row(priced, "claude-haiku-4-5")[-1].startswith("$")


def test_show_and_diff_over_sdk_recordings(run_cli, tmp_path: Path, stub: StubServer, patched: None) -> None:
    a, b = tmp_path / "a.rewind", tmp_path / "b.rewind"
    record_sdk_run(a, stub)
    record_sdk_run(b, stub)
    shown = run_cli("show", a)
    assert shown.returncode == 0, shown.stderr
    steps = [line for line in shown.stdout.splitlines() if line.startswith("#")]
    assert len(steps) == 6 and all("[gpt-4o-mini]" in s for s in steps[:4])
    assert all("[claude-haiku-4-5]" in s for s in steps[4:])
    # Fresh response ids and timestamps every run; the same behaviour.
    result = run_cli("diff", a, b)
    assert result.returncode == 0, result.stdout
    assert run_cli("diff", "--exact", a, b).returncode == 1
