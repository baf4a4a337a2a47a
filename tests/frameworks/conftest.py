"""The real-agent battery: unmodified agents of real frameworks, recorded live against the
loopback stub server, then replayed with the server stopped.

Every scenario goes through ``record_then_replay``: it records the agent with the stub
server up, stops the server (nothing listens any more: a replay that went live fails
loudly), replays the same agent under ``rewind.replay`` and asserts the two results are
equal. ``tools`` counts the agent's own tool executions, so a scenario can assert that
tools really ran at record time (and, being undecorated agent code, ran again on replay).

The frameworks live in their own venvs (``frameworks/<group>.txt``, ``make
test-frameworks``); in any other environment a scenario's ``importorskip`` skips it.
"""

from __future__ import annotations

import os

# No framework phones home from the test run: each one's documented opt-out, set before
# any of them is imported (never by patching the framework).
for _name, _value in {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "ANONYMIZED_TELEMETRY": "False",
    "DO_NOT_TRACK": "1",
    "SCARF_NO_ANALYTICS": "true",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "DSP_CACHEBOOL": "False",
    "DSPY_CACHEDIR": "/tmp/rewind-dspy-cache",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "AUTOGEN_DISABLE_TELEMETRY": "1",
}.items():
    os.environ.setdefault(_name, _value)

from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, TypeVar  # noqa: E402

import pytest  # noqa: E402

import rewind  # noqa: E402
from rewind.stub_server import StubServer  # noqa: E402

T = TypeVar("T")

#: Keys the SDKs insist on at construction; the stub accepts anything.
KEYS = {
    "OPENAI_API_KEY": "sk-battery",
    "ANTHROPIC_API_KEY": "sk-ant-battery",
    "MISTRAL_API_KEY": "battery",
    "CO_API_KEY": "battery",
    "GEMINI_API_KEY": "battery",
    "GOOGLE_API_KEY": "battery",
    "GROQ_API_KEY": "gsk-battery",
    "TOGETHER_API_KEY": "battery",
    "FIREWORKS_API_KEY": "fw-battery",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(here):
            item.add_marker(pytest.mark.frameworks)


class ToolLog:
    """Counts the agent's own tool executions (tools are agent code: they run live and on replay)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __call__(self, name: str, value: Any = None) -> None:
        self.calls.append((name, value))

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def clear(self) -> None:
        self.calls.clear()


@pytest.fixture
def tools() -> ToolLog:
    return ToolLog()


@pytest.fixture
def battery_env(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> StubServer:
    """Keys and base URLs in the environment, the way users configure these frameworks."""
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.anthropic_base_url)
    return stub


class Battery:
    """Runs one scenario: record live, stop the server, replay, compare."""

    def __init__(self, stub: StubServer, trace: Path, tools: ToolLog) -> None:
        self.stub = stub
        self.trace = trace
        self.tools = tools
        self.live_tools: list[str] = []

    def run(
        self,
        agent: Callable[[], T],
        *,
        providers: Sequence[str] = ("openai",),
        match: str = "strict",
        **replay_options: Any,
    ) -> T:
        """``agent()`` recorded, then replayed offline; returns the live result (== the replayed one)."""
        unpatch = rewind.auto_patch(*providers)
        try:
            with rewind.record(self.trace):
                live = agent()
            self.live_tools = self.tools.names()
            self.tools.clear()
            served = self.stub.request_count
            assert served > 0, "the agent never reached the stub server"
            self.stub.stop()
            with rewind.replay(self.trace, match=match, **replay_options):
                replayed = agent()
        finally:
            unpatch()
        assert replayed == live, f"replay differs from the live run:\nlive:     {live!r}\nreplayed: {replayed!r}"
        return live

    @property
    def steps(self) -> list[Any]:
        return rewind.Trace.load(self.trace).events


@pytest.fixture
def battery(battery_env: StubServer, tmp_path: Path, tools: ToolLog) -> Iterator[Battery]:
    yield Battery(battery_env, tmp_path / "run.rewind", tools)
