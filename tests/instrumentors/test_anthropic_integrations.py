"""patch_anthropic / auto_patch / patched, the instrumentor behind them, and a moved stream-helper layout."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import pytest
import wrapt
from _anthropic_support import (
    HAS_SDK_SPANS,
    MODEL,
    ask,
    events,
)
from anthropic.resources.messages import AsyncMessages, Messages
from rewind.instrumentors import _instrumentor, _surface
from rewind.instrumentors.anthropic import MINIMUM_SDK, AnthropicInstrumentor

import rewind
from rewind import integrations
from rewind.errors import PatchGapWarning
from rewind.stub_server import StubServer

ORIGINALS = {name: Messages.__dict__[name] for name in ("create", "stream")}
#: anthropic < 1.0 only: the stream metaclasses whose isinstance check rewind widens.
STREAM_METAS = [
    m for m in (getattr(anthropic._streaming, n, None) for n in ("_SyncStreamMeta", "_AsyncStreamMeta")) if m
]
META_CHECKS = {meta: vars(meta).get("__instancecheck__") for meta in STREAM_METAS}


def _hooked() -> bool:
    hooked = [
        isinstance(cls.__dict__[m], wrapt.FunctionWrapper) for cls in (Messages, AsyncMessages) for m in ORIGINALS
    ]
    assert len(set(hooked)) == 1, "all surfaces are hooked together"
    return hooked[0]


def _sdk_span_hooked() -> bool:
    if not HAS_SDK_SPANS:
        return False
    import anthropic._base_client as base

    return isinstance(base.__dict__["start_api_call_span"], wrapt.FunctionWrapper)


def test_patch_is_idempotent_reference_counted_and_restores_exactly() -> None:
    assert not _hooked() and not _sdk_span_hooked()
    first = rewind.integrations.patch_anthropic()
    second = integrations.patch_anthropic()
    assert _hooked() and _sdk_span_hooked() == HAS_SDK_SPANS
    first()
    first()  # a second unpatch from the same consumer releases nothing more
    assert _hooked()
    second()
    assert not _hooked() and not _sdk_span_hooked()
    assert {name: Messages.__dict__[name] for name in ORIGINALS} == ORIGINALS
    assert {meta: vars(meta).get("__instancecheck__") for meta in STREAM_METAS} == META_CHECKS


def test_patched_and_auto_patch_include_anthropic() -> None:
    assert "anthropic" in integrations.providers()
    with integrations.patched("anthropic"):
        assert _hooked()
    assert not _hooked()
    with integrations.patched():  # every installed provider
        assert _hooked()
    assert not _hooked()
    unpatch = integrations.auto_patch("anthropic")
    assert _hooked()
    unpatch()
    assert not _hooked()


def test_instrumentor_contract() -> None:
    instrumentor = AnthropicInstrumentor()
    assert instrumentor is AnthropicInstrumentor()  # BaseInstrumentor is a singleton
    assert list(instrumentor.instrumentation_dependencies()) == [f"anthropic >= {MINIMUM_SDK}"]
    instrumentor.instrument()
    instrumentor.instrument()  # a second instrument() is a no-op
    assert _hooked()
    unpatch = integrations.patch_anthropic()
    unpatch()
    assert _hooked()  # the patch_anthropic() consumer did not own these hooks
    instrumentor.uninstrument()
    assert not _hooked() and not _sdk_span_hooked()


def test_an_sdk_older_than_the_floor_is_left_alone_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_surface, "_WARNED", set())
    # What the installed distribution reports (the check every SDK's instrumentor shares).
    monkeypatch.setattr(_instrumentor, "_installed_version", lambda distribution, module: "0.42.0")
    with pytest.warns(PatchGapWarning, match=f"anthropic >= {MINIMUM_SDK}"):
        unpatch = integrations.patch_anthropic()
    try:
        assert not _hooked() and not _sdk_span_hooked()
    finally:
        unpatch()


def test_instrumentor_records_without_patch_anthropic(stub: StubServer, trace_path: Path) -> None:
    AnthropicInstrumentor().instrument()
    try:
        client = anthropic.Anthropic(base_url=stub.anthropic_base_url, api_key="x", max_retries=0)
        with rewind.record(trace_path):
            client.messages.create(model=MODEL, max_tokens=16, messages=ask("instrumented"))
    finally:
        AnthropicInstrumentor().uninstrument()
    assert [e.name for e in events(trace_path)] == ["anthropic.messages.create"]


def test_a_moved_stream_manager_warns_and_passes_through(
    claude, stub: StubServer, trace_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class MovedManager:
        """A future SDK's manager that keeps its request under another name."""

        def __init__(self, api_request: Any, **_: Any) -> None:
            self.send = api_request

        def __enter__(self) -> Any:
            return self.send()

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(_surface, "_WARNED", set())
    module = inspect.getmodule(ORIGINALS["stream"])
    monkeypatch.setattr(module, "MessageStreamManager", MovedManager)
    with rewind.record(trace_path):
        with pytest.warns(PatchGapWarning, match="stream helper changed"):
            manager = claude.messages.stream(model=MODEL, max_tokens=16, messages=ask("moved"))
        with manager as raw_stream:
            assert [e.type for e in raw_stream][-1] == "message_stop"
    assert events(trace_path) == []  # live, and not recorded: the warning said so
    assert stub.request_count == 1


def _instrument_tool() -> str | None:
    beside = Path(sys.executable).parent / "opentelemetry-instrument"
    return str(beside) if beside.exists() else shutil.which("opentelemetry-instrument")


@pytest.mark.skipif(_instrument_tool() is None, reason="opentelemetry-instrument is not installed")
def test_opentelemetry_instrument_loads_rewind_anthropic(tmp_path: Path) -> None:
    # A distribution declaring the entry point exactly as pyproject.toml does.
    dist = tmp_path / "site" / "rewind_anthropic_ep-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rewind-anthropic-ep\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text(
        "[opentelemetry_instrumentor]\nrewind_anthropic = rewind.instrumentors.anthropic:AnthropicInstrumentor\n"
    )
    code = (
        "import anthropic, rewind, wrapt\n"
        "from rewind.stub_server import StubServer\n"
        "from anthropic.resources.messages import Messages\n"
        "assert isinstance(Messages.__dict__['stream'], wrapt.FunctionWrapper), 'not instrumented'\n"
        "with StubServer() as s:\n"
        "    c = anthropic.Anthropic(base_url=s.anthropic_base_url, api_key='x', max_retries=0)\n"
        f"    with rewind.record({str(tmp_path / 'run.rewind')!r}):\n"
        "        with c.messages.stream(model='m', max_tokens=8, messages=[{'role': 'user', 'content': 'x'}]) as st:\n"
        "            st.get_final_text()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env.update(
        PYTHONPATH=str(tmp_path / "site"),
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
    )
    tool = _instrument_tool()
    assert tool is not None
    result = subprocess.run([tool, sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert [e.name for e in events(tmp_path / "run.rewind")] == ["anthropic.messages.create"]
