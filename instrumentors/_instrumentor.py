"""``SurfaceInstrumentor``: the ``BaseInstrumentor`` every table-driven provider module declares.

A provider module ends with three lines::

    class GroqInstrumentor(SurfaceInstrumentor):
        provider = PROVIDER          # the Provider whose surfaces get hooked
        sdk = "groq"                 # import name; a missing SDK is skipped quietly
        minimum = "0.8"              # oldest release tested; older ones are left alone

and gets what the DESIGN asks of an instrumentor: ``_instrument`` imports the SDK (a
missing one raises ``ModuleNotFoundError``, which the loader skips quietly), hooks every
surface once, and never lets any other exception escape; an SDK older than ``minimum``
(a different, unsupported layout) is left unpatched with one ``PatchGapWarning``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Collection
from typing import Any, ClassVar

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from rewind.errors import PatchGapWarning, RewindWarning

from ._surface import Patcher, Provider, warn_once


class SurfaceInstrumentor(BaseInstrumentor):
    """Hooks ``provider``'s surfaces; subclasses set ``provider``, ``sdk`` and ``minimum``."""

    provider: ClassVar[Provider]
    #: The SDK's import name, and its distribution name when that differs.
    sdk: ClassVar[str]
    distribution: ClassVar[str | None] = None
    #: The oldest release the test suite runs against (``compat/<name>.txt``).
    minimum: ClassVar[str]

    def instrumentation_dependencies(self) -> Collection[str]:
        return (f"{self.distribution or self.sdk} >= {self.minimum}",)

    def _instrument(self, **kwargs: Any) -> None:
        sdk = importlib.import_module(self.sdk)  # a missing SDK raises ModuleNotFoundError: the loader skips us
        version = _installed_version(self.distribution or self.sdk, sdk)
        if version is not None and _older(version, self.minimum):
            warn_once(
                f"instrument:{self.sdk}:version",
                f"rewind supports {self.distribution or self.sdk} >= {self.minimum}; the installed {version} is "
                "not instrumented, so its calls run live and unrecorded. Upgrade the SDK.",
                PatchGapWarning,
            )
            return
        patcher = self.__dict__.get("_rewind_patcher")
        if patcher is None:
            patcher = self._rewind_patcher = Patcher(self.provider)
        if patcher.active:
            return
        try:
            patcher.apply()
        except RewindWarning:
            raise  # a PatchGapWarning the user turned into an error
        except Exception as exc:  # instrumenting must never break the application
            patcher.revert()
            warn_once(
                f"instrument:{self.sdk}:{type(exc).__name__}",
                f"rewind could not instrument the {self.sdk} SDK ({type(exc).__name__}: {exc}); "
                f"{self.sdk} calls will run live and unrecorded.",
                PatchGapWarning,
            )

    def _uninstrument(self, **kwargs: Any) -> None:
        patcher = self.__dict__.get("_rewind_patcher")
        if patcher is not None:
            patcher.revert()


def _installed_version(distribution: str, module: Any) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        version = getattr(module, "__version__", None)
        return version if isinstance(version, str) else None


def _older(version: str, minimum: str) -> bool:
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # packaging comes with opentelemetry-instrumentation; never block on it
        return False
    try:
        return Version(version) < Version(minimum)
    except InvalidVersion:
        return False
