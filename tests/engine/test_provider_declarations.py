"""One provider, one place: what rewind knows about a provider comes from its module's declaration.

A provider declared outside ``rewind/`` (here, in this test module) is patchable by name,
gets placeholder keys in a keyless replay, has its SDK's frames skipped by ``break_at``, and
gets its own errors injected by ``rewind mutate``; the shipped providers are found through
the ``rewind_*`` entry points, and ``import rewind`` loads none of them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
import types
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from rewind import integrations
from rewind.engine import breakpoints, placeholder_keys
from rewind.engine.providers import ENTRY_POINT_GROUP, PROVIDERS, Failure, Faults, ProviderSpec, register
from rewind.storage.trace import Event
from rewind.what_if import provider_errors

SDK = "rewind_fake_sdk_for_declarations"


class FakeInstrumentor(BaseInstrumentor):
    """Counts what rewind asks of it."""

    instrumented = 0

    def instrumentation_dependencies(self) -> Collection[str]:
        return ()

    def _instrument(self, **kwargs: Any) -> None:
        importlib.import_module(SDK)
        FakeInstrumentor.instrumented += 1

    def _uninstrument(self, **kwargs: Any) -> None:
        FakeInstrumentor.instrumented -= 1


def _fault(failure: Failure) -> dict[str, Any]:
    return {"type": "fake.Overloaded", "module": SDK, "qualname": "Overloaded", "status": failure.status}


def _dropped(failure: Failure) -> dict[str, Any]:
    return {"type": "fake.Dropped", "module": SDK, "qualname": "Dropped", "kept": len(failure.kept)}


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderSpec]:
    (tmp_path / f"{SDK}.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = register(
        ProviderSpec(
            name="fake",
            sdk=SDK,
            instrumentor=f"{__name__}:FakeInstrumentor",
            keys=("FAKE_API_KEY", "FAKE_OTHER_KEY"),
            frames=(SDK, "fake_transport"),
            faults=Faults(_fault, _dropped, overloaded=529),
        )
    )
    try:
        yield spec
    finally:
        PROVIDERS.pop("fake", None)
        integrations._HOLDS.pop("fake", None)
        sys.modules.pop(SDK, None)


def test_a_declared_provider_is_patchable_by_name(fake: ProviderSpec) -> None:
    assert "fake" in integrations.providers()
    with integrations.patched("fake"):
        assert FakeInstrumentor.instrumented == 1
        unpatch = integrations.auto_patch("fake")  # reference-counted: one more holder
        unpatch()
        assert FakeInstrumentor.instrumented == 1
    assert FakeInstrumentor.instrumented == 0


def test_a_declared_provider_gets_placeholder_keys(fake: ProviderSpec) -> None:
    assert placeholder_keys.missing({})["FAKE_API_KEY"] == placeholder_keys.PLACEHOLDER
    assert "FAKE_API_KEY" not in placeholder_keys.missing({"FAKE_OTHER_KEY": "set"})  # either key will do
    assert ("FAKE_API_KEY", "FAKE_OTHER_KEY") in placeholder_keys.sdk_keys()


def test_a_declared_providers_frames_are_plumbing(fake: ProviderSpec) -> None:
    assert {SDK, "fake_transport"} <= set(breakpoints.plumbing())


def test_a_declared_provider_delivers_its_own_faults(fake: ProviderSpec) -> None:
    event = cast(Event, types.SimpleNamespace(name="fake.chat", kind="llm"))
    assert provider_errors.sdk_of(event) == "fake"
    assert provider_errors.provider_error("overloaded", event, "1") == {
        "type": "fake.Overloaded",
        "module": SDK,
        "qualname": "Overloaded",
        "status": 529,
    }
    assert provider_errors.dropped_stream_error(event, [1, 2])["kept"] == 2
    tool = cast(Event, types.SimpleNamespace(name="fake.chat", kind="tool", ok=True, request={}, response={}))
    assert provider_errors.sdk_of(tool) is None  # faults are for a provider's llm calls


def test_every_shipped_provider_declares_itself_behind_its_entry_point() -> None:
    points = [
        p
        for p in importlib.metadata.distribution("agent-rewind-otel").entry_points
        if p.group == ENTRY_POINT_GROUP and p.name.startswith("rewind_")
    ]
    assert points
    for point in points:
        declaration = importlib.import_module(point.module).DECLARATION
        assert isinstance(declaration, ProviderSpec)
        assert (f"rewind_{declaration.name}", declaration.instrumentor) == (point.name, point.value)
        assert PROVIDERS[declaration.name] is declaration
        assert callable(getattr(integrations, f"patch_{declaration.name}", None)), "add its patch_<name>()"


def test_importing_rewind_loads_no_provider_module() -> None:
    code = "import sys, rewind; print(sorted(m for m in sys.modules if m.startswith('rewind.instrumentors.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_provider_module_that_cannot_load_is_skipped_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewind.engine import providers
    from rewind.errors import PatchGapWarning

    broken = importlib.metadata.EntryPoint("rewind_broken", "rewind_no_such_module_here:X", ENTRY_POINT_GROUP)
    monkeypatch.setattr(providers, "_entry_points", lambda: [broken])
    registry = providers._Registry()
    with pytest.warns(PatchGapWarning, match="rewind_broken provider"):
        assert "broken" not in registry
    assert list(registry) == []


def test_asking_for_one_provider_loads_its_module_alone() -> None:
    """``patch_openai()`` pays for openai's instrumentor, not for all twelve."""
    code = (
        "import sys\n"
        "from rewind.engine.providers import PROVIDERS\n"
        "assert PROVIDERS['openai'].sdk == 'openai'\n"
        "print(sorted(m for m in sys.modules if m.startswith('rewind.instrumentors.') and '._' not in m))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['rewind.instrumentors.openai']"
