"""``with rewind.replay(...)`` needs no API key: placeholders while it is open, and only then."""

from __future__ import annotations

import contextvars
import os
from pathlib import Path

import pytest

import rewind
from rewind.engine.placeholder_keys import PLACEHOLDER
from rewind.stub_server import StubServer

openai = pytest.importorskip("openai")


@pytest.fixture
def keyless(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_a_client_built_inside_a_replay_needs_no_key(
    keyless: None, tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.rewind"
    ask = [{"role": "user", "content": "hi"}]
    with rewind.integrations.patched("openai"):
        with rewind.record(path):
            live = openai.OpenAI(api_key="sk-recording", base_url=stub.openai_base_url, max_retries=0)
            live.chat.completions.create(model="gpt-4o-mini", messages=ask)
        stub.stop()
        with pytest.raises(openai.OpenAIError, match="api_key"):
            openai.OpenAI()  # what keyless CI met inside a replay before
        with rewind.replay(path):
            client = openai.OpenAI(base_url=stub.openai_base_url, max_retries=0)  # reads OPENAI_API_KEY
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=ask)
            assert os.environ["OPENAI_API_KEY"] == PLACEHOLDER
    assert reply.choices[0].message.content == "Echo: hi"
    assert "OPENAI_API_KEY" not in os.environ and "ANTHROPIC_API_KEY" not in os.environ  # only while replaying
    assert PLACEHOLDER.encode() not in path.read_bytes()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-mine")
    with pytest.warns(rewind.UnconsumedEventsWarning), rewind.replay(path):
        assert os.environ["OPENAI_API_KEY"] == "sk-mine"  # a real key is never overridden
    assert os.environ["OPENAI_API_KEY"] == "sk-mine"


def test_overlapping_replays_keep_the_placeholders_until_the_last_ends(keyless: None, tmp_path: Path) -> None:
    path = tmp_path / "empty.rewind"
    with rewind.record(path):
        pass
    first, second = rewind.replay(path), rewind.replay(path)

    def overlapping() -> None:
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert os.environ["OPENAI_API_KEY"] == PLACEHOLDER  # the second replay still runs
        second.__exit__(None, None, None)

    # Sessions left out of order restore the current session out of order too: keep that
    # inside a context of its own, so no later test in this worker inherits it.
    contextvars.copy_context().run(overlapping)
    assert "OPENAI_API_KEY" not in os.environ
    assert rewind.current_session() is None


def test_a_recording_gets_no_placeholder(keyless: None, tmp_path: Path) -> None:
    with rewind.record(tmp_path / "r.rewind"), pytest.raises(openai.OpenAIError, match="api_key"):
        openai.OpenAI()
