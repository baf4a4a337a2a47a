"""Import paths from before rewind's modules moved into folders, kept working.

Until 0.2, ``rewind/`` was one flat folder: ``rewind.trace``, ``rewind.session``,
``rewind.network_guard`` … are documented import paths and sit in users' code. Each still
imports, as the very module object that now lives in its folder (``rewind.trace`` *is*
``rewind.storage.trace``: monkeypatching either patches both). A finder answers for the old
names only, so nothing is imported before someone asks for it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

#: Old import path -> where the module lives now.
MOVED: dict[str, str] = {
    "rewind.canonical": "rewind.data.canonical",
    "rewind.replayed_error": "rewind.data.replayed_error",
    "rewind._http_error": "rewind.data.http_error",
    "rewind._safe_read": "rewind.data.safe_read",
    "rewind._escape": "rewind.data.escape",
    "rewind.dialect": "rewind.data.dialect",
    "rewind.function_names": "rewind.data.function_names",
    "rewind.genai_names": "rewind.data.genai_names",
    "rewind._gc_pause": "rewind.data.gc_pause",
    "rewind.trace": "rewind.storage.trace",
    "rewind._trace_file": "rewind.storage.trace_file",
    "rewind.blobs": "rewind.storage.blobs",
    "rewind.archive": "rewind.storage.archive",
    "rewind.scratch": "rewind.storage.scratch",
    "rewind.divergence": "rewind.matching.divergence",
    "rewind.similarity": "rewind.matching.similarity",
    "rewind.core": "rewind.engine.core",
    "rewind.session": "rewind.engine.session",
    "rewind.replay": "rewind.engine.replay",
    "rewind.telemetry": "rewind.engine.telemetry",
    "rewind._channel": "rewind.exporters.parcels",
    "rewind._span_errors": "rewind.engine.span_errors",
    "rewind.content_capture": "rewind.engine.content_capture",
    "rewind.decorators": "rewind.engine.decorators",
    "rewind.threads": "rewind.engine.threads",
    "rewind.breakpoints": "rewind.engine.breakpoints",
    "rewind.policy": "rewind.engine.policy",
    "rewind.network_guard": "rewind.engine.network_guard",
    "rewind._guard_children": "rewind.engine.guard_children",
    "rewind.placeholder_keys": "rewind.engine.placeholder_keys",
    "rewind.nothing_recorded": "rewind.engine.nothing_recorded",
    "rewind.diff": "rewind.inspection.diff",
    "rewind.accounting": "rewind.inspection.accounting",
    "rewind._preview": "rewind.inspection.preview",
    "rewind.summary": "rewind.inspection.summary",
    "rewind.stepper": "rewind.inspection.stepper",
    "rewind.tui": "rewind.cli.tui",
    "rewind.pytest_plugin": "rewind.testing.pytest_plugin",
    "rewind.doubles": "rewind.testing.doubles",
    "rewind.importing.streams": "rewind.storage.streams",
    "rewind.what_if.provenance": "rewind.inspection.provenance",
    "rewind.bootstrap": "rewind.setup.bootstrap",
    "rewind.integrations": "rewind.setup.integrations",
    "rewind.session_owner": "rewind.setup.session_owner",
}


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module it moved to (the same object, under both names)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when it was imported under its own name. The import system has just
        given it the old name's spec, though: its own goes back, or its relative imports warn
        (``__package__ != __spec__.parent``) and ``importlib.reload`` would look in the wrong place."""
        if self.own_spec is not None:
            module.__spec__ = self.own_spec


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds ``rewind.<old>`` (and ``rewind.<old>.<sub>``) for modules that moved."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        moved = new_name(fullname)
        if moved is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(moved))


def new_name(old: str) -> str | None:
    """Where the module once imported as ``old`` lives now, or None if it did not move."""
    if old in MOVED:
        return MOVED[old]
    package, _, rest = old.rpartition(".")
    while package and package not in MOVED:
        package, _, head = package.rpartition(".")
        rest = f"{head}.{rest}"
    return f"{MOVED[package]}.{rest}" if package else None


def install(facade: ModuleType) -> None:
    """Answer for the old names; pin those the facade uses for something else.

    Importing ``rewind.replay`` the first time would set the attribute ``rewind.replay``
    to the module, hiding the ``replay()`` function: such names are entered in
    ``sys.modules`` now, which the import system trusts without touching the facade.
    """
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
    names = vars(facade)  # not hasattr(): the facade's __getattr__ would import every old name
    for old, new in MOVED.items():
        if old.rpartition(".")[2] in names and new in sys.modules:
            sys.modules.setdefault(old, sys.modules[new])
