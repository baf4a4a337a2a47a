"""What rewind knows about a provider SDK, declared once, by the provider's own module.

Each ``instrumentors/<provider>.py`` ends with a ``DECLARATION = ProviderSpec(...)``: its
name, the module its SDK imports as, the environment variables its client reads a key
from, the modules whose frames sit between the agent and a served step, and how the SDK
delivers a provider fault (``Faults``). Everything else is derived from these
declarations: ``patch_*``/``auto_patch`` (``rewind.setup.integrations``), placeholder keys
for keyless replay, the debugger's plumbing frames, fault injection, the start-up hook's
SDK list and the "nothing was recorded" diagnosis.

The declarations are found through the ``rewind_<name>`` entry points of the
``opentelemetry_instrumentor`` group that this distribution declares (the same ones
``opentelemetry-instrument`` loads), read lazily on first use and cached: the engine sits
below the instrumentors and never imports them by name, and ``import rewind`` imports no
instrumentor. ``register`` adds a declaration at run time (tests, a provider shipped
outside rewind).
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
import warnings
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rewind.errors import PatchGapWarning

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from rewind.storage.trace import Event

#: The entry-point group our instrumentors are declared in, and the prefix of their names.
ENTRY_POINT_GROUP = "opentelemetry_instrumentor"
ENTRY_POINT_PREFIX = "rewind_"
#: The module attribute that holds a provider module's declaration.
DECLARATION = "DECLARATION"
_DISTRIBUTION = "agent-rewind-otel"


@dataclass(frozen=True)
class Failure:
    """One provider fault to inject, as far as it is the same for every SDK."""

    fault: str
    status: int
    #: The ``retry-after`` value (seconds) the answer carries, if any.
    retry_after: str | None
    event: Event
    #: For a stream cut short: the chunks the agent got first.
    kept: list[Any] = field(default_factory=list)
    #: The call comes from a coroutine (an async client).
    in_async: bool = False


#: Builds the error record an SDK writes when it meets a ``Failure``.
FaultBuilder = Callable[[Failure], dict[str, Any]]


@dataclass(frozen=True)
class Faults:
    """How one SDK delivers provider faults (``rewind mutate`` injects what these build)."""

    #: The record of a status error or a timeout.
    make: FaultBuilder
    #: The record of a connection that dropped mid-stream (``Failure.kept``: the chunks before).
    dropped: FaultBuilder
    #: The status of an "overloaded" answer: 529 where the provider uses it, else its 503.
    overloaded: int = 503


@dataclass(frozen=True)
class ProviderSpec:
    """One provider SDK, as the rest of rewind needs to know it."""

    #: The provider's name: ``patch_<name>()``, the ``[name]`` extra, the first part of its steps' names.
    name: str
    #: The import name of the SDK (``mistralai``, ``google.genai``).
    sdk: str
    #: ``"module:Class"`` of its ``BaseInstrumentor``.
    instrumentor: str
    #: The variables its client reads a key from; a placeholder goes into the first when none is set.
    keys: tuple[str, ...] = ()
    #: Module roots whose frames are plumbing between the agent and a served step (default: ``sdk``).
    frames: tuple[str, ...] = ()
    #: How it delivers provider faults; ``None``: no fault injection for its steps.
    faults: Faults | None = None

    def installed(self) -> bool:
        try:
            return importlib.util.find_spec(self.sdk) is not None
        except (ImportError, ValueError):
            return False

    @property
    def plumbing(self) -> tuple[str, ...]:
        return self.frames or (self.sdk,)


#: Kept for code that named the declaration type by its first name.
Provider = ProviderSpec


class _Registry(MutableMapping[str, ProviderSpec]):
    """``name -> ProviderSpec``: our entry points, each module imported when its provider is first
    asked for (``patch_openai()`` loads openai's alone), all of them when the whole list is read."""

    def __init__(self) -> None:
        self._specs: dict[str, ProviderSpec] = {}
        self._pending: dict[str, EntryPoint] | None = None  # provider name -> its entry point, not loaded yet
        self._lock = threading.RLock()

    def _unloaded(self) -> dict[str, EntryPoint]:
        if self._pending is None:
            self._pending = {p.name.removeprefix(ENTRY_POINT_PREFIX): p for p in _entry_points()}
        return self._pending

    def _load(self, name: str) -> None:
        point = self._unloaded().pop(name, None)
        if point is not None:
            spec = _declared_by(point)
            if spec is not None:
                self._specs.setdefault(spec.name, spec)  # one registered in code wins

    def _all(self) -> dict[str, ProviderSpec]:
        with self._lock:
            for name in list(self._unloaded()):
                self._load(name)
        return self._specs

    def __getitem__(self, name: str) -> ProviderSpec:
        spec = self._specs.get(name)
        if spec is None:
            with self._lock:
                self._load(name)
            spec = self._specs.get(name)
            if spec is None:
                spec = self._all()[name]  # a module may declare a provider named unlike its entry point
        return spec

    def __setitem__(self, name: str, spec: ProviderSpec) -> None:
        with self._lock:
            self._unloaded().pop(name, None)
            self._specs[name] = spec

    def __delitem__(self, name: str) -> None:
        del self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._all()))

    def __len__(self) -> int:
        return len(self._all())


def _entry_points() -> list[EntryPoint]:
    """Our own ``rewind_*`` instrumentor entry points (never another distribution's)."""
    import importlib.metadata  # here: it imports email, csv and zipfile, which `import rewind` need not

    try:
        points = importlib.metadata.distribution(_DISTRIBUTION).entry_points
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return []
    return [p for p in points if p.group == ENTRY_POINT_GROUP and p.name.startswith(ENTRY_POINT_PREFIX)]


def _declared_by(point: EntryPoint) -> ProviderSpec | None:
    """The declaration in ``point``'s module, or None (with a warning when the module is broken)."""
    try:
        module = importlib.import_module(point.module)
    except Exception as exc:  # a broken install must not break the agent: that provider runs live
        warnings.warn(
            f"rewind cannot load the {point.name} provider ({type(exc).__name__}: {exc}); its calls run live "
            "and unrecorded. Reinstall agent-rewind-otel.",
            PatchGapWarning,
            stacklevel=3,
        )
        return None
    spec = getattr(module, DECLARATION, None)
    return spec if isinstance(spec, ProviderSpec) else None


#: Every provider rewind knows: ``name -> ProviderSpec`` (loaded on first use).
PROVIDERS: MutableMapping[str, ProviderSpec] = _Registry()


def register(spec: ProviderSpec) -> ProviderSpec:
    """Make ``spec`` known: patchable, its keys placeheld in a keyless replay, its faults injectable."""
    PROVIDERS[spec.name] = spec
    return spec


def register_provider(name: str, sdk: str, instrumentor: str, keys: tuple[str, ...] = ()) -> None:
    """``register`` from the four facts the older API took."""
    register(ProviderSpec(name, sdk, instrumentor, keys))


def provider_of(event: Event) -> ProviderSpec | None:
    """The provider whose SDK made ``event`` (the first part of its name), or ``None``."""
    return PROVIDERS.get(event.name.split(".", 1)[0])


__all__ = [
    "ENTRY_POINT_GROUP",
    "PROVIDERS",
    "FaultBuilder",
    "Failure",
    "Faults",
    "Provider",
    "ProviderSpec",
    "provider_of",
    "register",
    "register_provider",
]
