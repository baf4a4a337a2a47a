"""patch_openai / auto_patch / patched and the OpenTelemetry instrumentor behind them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import openai
import pytest
import wrapt
from _openai_support import MODEL, ask, events
from openai.resources.chat.completions import Completions
from rewind.instrumentors.openai import OpenAIInstrumentor

import rewind
from rewind import integrations
from rewind.engine.providers import PROVIDERS
from rewind.errors import RewindError
from rewind.stub_server import StubServer


def _hooked() -> bool:
    return isinstance(Completions.__dict__["create"], wrapt.FunctionWrapper)


def test_patch_is_idempotent_and_reference_counted() -> None:
    assert not _hooked()
    first = integrations.patch_openai()
    second = integrations.patch_openai()
    assert _hooked()
    first()
    first()  # a second unpatch from the same consumer releases nothing more
    assert _hooked()
    second()
    assert not _hooked()


def test_patched_context_manager_and_auto_patch() -> None:
    with integrations.patched("openai"):
        assert _hooked()
        with integrations.patched():  # every installed provider
            assert _hooked()
        assert _hooked()
    assert not _hooked()
    unpatch = integrations.auto_patch()
    assert _hooked()
    unpatch()
    assert not _hooked()


def test_unknown_or_missing_provider_raises_before_patching(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="no provider 'nosuch'"):
        integrations.auto_patch("openai", "nosuch")
    assert not _hooked()
    integrations.register_provider("ghost", "ghost_sdk_not_installed", "rewind.instrumentors.openai:OpenAIInstrumentor")
    try:
        with pytest.raises(RewindError, match="not installed"):
            integrations.auto_patch("ghost")
        assert "ghost" in integrations.providers()
    finally:
        PROVIDERS.pop("ghost")


def test_hooks_installed_by_opentelemetry_instrument_are_never_removed() -> None:
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument()
    try:
        unpatch = integrations.patch_openai()
        unpatch()
        assert _hooked()  # still instrumented: the patch_openai() consumer did not own it
    finally:
        instrumentor.uninstrument()
    assert not _hooked()


def test_instrumentor_contract() -> None:
    instrumentor = OpenAIInstrumentor()
    assert instrumentor is OpenAIInstrumentor()  # BaseInstrumentor is a singleton
    assert list(instrumentor.instrumentation_dependencies()) == ["openai >= 1.40"]
    instrumentor.instrument()
    instrumentor.instrument()  # a second instrument() is a no-op
    assert _hooked()
    instrumentor.uninstrument()
    assert not _hooked()


def test_instrumentor_records_without_patch_openai(stub: StubServer, trace_path: Path) -> None:
    OpenAIInstrumentor().instrument()
    try:
        client = openai.OpenAI(base_url=stub.openai_base_url, api_key="sk-x", max_retries=0)
        with rewind.record(trace_path):
            client.chat.completions.create(model=MODEL, messages=ask("instrumented"))
    finally:
        OpenAIInstrumentor().uninstrument()
    assert [e.name for e in events(trace_path)] == ["openai.chat.completions.create"]


def _fake_distribution(where: Path) -> Path:
    """A distribution declaring the ``rewind_openai`` entry point, as pyproject.toml does."""
    dist = where / "rewind_openai_ep-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rewind-openai-ep\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text(
        "[opentelemetry_instrumentor]\nrewind_openai = rewind.instrumentors.openai:OpenAIInstrumentor\n"
    )
    return where


def _instrument_tool() -> str | None:
    beside = Path(sys.executable).parent / "opentelemetry-instrument"
    return str(beside) if beside.exists() else shutil.which("opentelemetry-instrument")


@pytest.mark.skipif(_instrument_tool() is None, reason="opentelemetry-instrument is not installed")
def test_opentelemetry_instrument_loads_rewind_openai(tmp_path: Path) -> None:
    code = (
        "import openai, rewind, wrapt\n"
        "from rewind.stub_server import StubServer\n"
        "from openai.resources.chat.completions import Completions\n"
        "assert isinstance(Completions.__dict__['create'], wrapt.FunctionWrapper), 'not instrumented'\n"
        "with StubServer() as s:\n"
        "    c = openai.OpenAI(base_url=s.openai_base_url, api_key='x', max_retries=0)\n"
        f"    with rewind.record({str(tmp_path / 'run.rewind')!r}):\n"
        "        c.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'x'}])\n"
    )
    site = _fake_distribution(tmp_path / "site")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env.update(
        PYTHONPATH=str(site),
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
    )
    tool = _instrument_tool()
    assert tool is not None
    result = subprocess.run(
        [tool, sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert [e.name for e in events(tmp_path / "run.rewind")] == ["openai.chat.completions.create"]
