"""A streamed step damaged in the file (``tests/hostile/streams.py``) fails its replay with a
``TraceFormatError`` naming the step and the line, where it used to crash inside the
SDK's stream code (Anthropic's ``MessageStream``) or hand the agent a non-stream object."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import rewind
from rewind.errors import TraceFormatError
from rewind.stub_server import StubServer
from tests.hostile.streams import ANTHROPIC, OPENAI, Damage


@pytest.fixture(autouse=True)
def _patched() -> Iterator[None]:
    undo = [rewind.patch_openai(), rewind.patch_anthropic()]
    yield
    for unpatch in undo:
        unpatch()


def claude(base_url: str) -> str:
    client = anthropic.Anthropic(base_url=base_url, api_key="stub", max_retries=0)
    with client.messages.stream(
        model="claude-3-5-haiku-latest", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        return str(stream.get_final_message().content[0].text)


def gpt(base_url: str) -> str:
    client = openai.OpenAI(base_url=base_url, api_key="stub", max_retries=0)
    chunks = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)


AGENTS: dict[str, Any] = {"anthropic": (claude, "anthropic_base_url"), "openai": (gpt, "openai_base_url")}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("streams")
    out = {}
    undo = [rewind.patch_openai(), rewind.patch_anthropic()]
    try:
        for name, (agent, attribute) in AGENTS.items():
            path = folder / f"{name}.rewind"
            with StubServer() as stub, rewind.record(path):
                agent(getattr(stub, attribute))
            out[name] = path.read_bytes()
    finally:
        for unpatch in undo:
            unpatch()
    return out


CASES = [("anthropic", name, damage) for name, damage in ANTHROPIC.items()]
CASES += [("openai", name, damage) for name, damage in OPENAI.items()]


@pytest.mark.parametrize(("provider", "name", "damage"), CASES, ids=[f"{p}: {n}" for p, n, _ in CASES])
def test_a_damaged_stream_is_a_corrupt_step(
    recorded: dict[str, bytes], tmp_path: Path, provider: str, name: str, damage: Damage
) -> None:
    agent, _ = AGENTS[provider]
    path = tmp_path / "damaged.rewind"
    path.write_bytes(damage(recorded[provider]))
    with pytest.raises(TraceFormatError) as caught, rewind.replay(path):
        agent("http://127.0.0.1:9")
    message = str(caught.value)
    assert "step 0 (llm call" in message and "damaged here" in message
    assert caught.value.line == 2, message


@pytest.mark.parametrize("provider", sorted(AGENTS))
def test_an_intact_stream_still_replays(recorded: dict[str, bytes], tmp_path: Path, provider: str) -> None:
    agent, _ = AGENTS[provider]
    path = tmp_path / "intact.rewind"
    path.write_bytes(recorded[provider])
    with rewind.replay(path):
        assert agent("http://127.0.0.1:9")
