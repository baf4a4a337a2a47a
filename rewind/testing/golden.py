"""What a ``rewind_trace`` marker asks for: ``golden_trace(item)`` reads it into a ``GoldenTrace``.

The marker's arguments are validated against its one signature (a malformed marker
raises ``TypeError``/``ValueError``, which the plugin reports when the test sets up);
a relative path is resolved against the test file, and a marker shared by the
parameters of a parametrized test gives each parameter its own trace
(``parameter_path``). ``records_live``/``refreshes`` say what a record mode does with
one golden trace.
"""

from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from rewind.engine.network_guard import check_network
from rewind.engine.policy import ReplayPolicy
from rewind.engine.session import Normalizer, Redactor
from rewind.matching import Matcher

MARKER = "rewind_trace"
FIXTURE = "rewind_session"

#: ``none`` replays only; ``missing`` records tests whose trace does not exist yet;
#: ``all`` records every marked test and keeps the new trace when the test passes;
#: ``rewrite`` deletes the trace first and keeps whatever the live run recorded;
#: ``refresh`` replays each trace until its first divergence and records only the rest
#: live, keeping the refreshed trace when the test passes (a missing trace is recorded).
RECORD_MODES = ("none", "missing", "all", "rewrite", "refresh")

MARKER_OPTIONS = (
    "match='strict', normalize=None, redact=None, require_full_consumption=False, network='block', allow_hosts=(), "
    "live=None, never_live=None, on_missing='error', model_map=None"
)
MARKER_HELP = (
    f"{MARKER}(path, *, {MARKER_OPTIONS}): "
    "replay the test against the golden trace at path (relative to the test file); "
    "pytest --rewind-record records it live; a replay blocks every non-loopback connection unless network='allow'"
)


@dataclass(frozen=True)
class GoldenTrace:
    """What one test's ``rewind_trace`` marker asks for, with its path resolved."""

    path: Path
    match: str | Matcher = "strict"
    normalize: Normalizer | None = None
    redact: Redactor | None = None
    require_full_consumption: bool = False
    #: A replay refuses every connection to a host other than loopback or ``allow_hosts``.
    network: str = "block"
    allow_hosts: tuple[str, ...] = ()
    #: A hybrid replay's live calls and never_live calls (docs/hybrid.md).
    policy: ReplayPolicy | None = None


def _marker_signature(
    path: str | os.PathLike[str],
    *,
    match: str | Matcher = "strict",
    normalize: Normalizer | None = None,
    redact: Redactor | None = None,
    require_full_consumption: bool = False,
    network: str = "block",
    allow_hosts: tuple[str, ...] | list[str] = (),
    live: list[str] | str | None = None,
    never_live: list[str] | str | None = None,
    on_missing: str = "error",
    model_map: dict[str, str] | None = None,
) -> None:
    """The marker's call signature, used to validate its arguments."""


_SIGNATURE = inspect.signature(_marker_signature)


def golden_trace(item: pytest.Item) -> GoldenTrace | None:
    """The golden trace the closest ``rewind_trace`` marker names, or ``None`` if unmarked.

    Raises ``TypeError``/``ValueError`` for a malformed marker.
    """
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return None
    try:
        bound = _SIGNATURE.bind(*marker.args, **marker.kwargs)
    except TypeError as exc:
        raise TypeError(f"@pytest.mark.{MARKER}(path, *, {MARKER_OPTIONS}): {exc}") from None
    args = bound.arguments
    raw = args["path"]
    if not isinstance(raw, (str, os.PathLike)) or not os.fspath(raw):
        raise TypeError(f"@pytest.mark.{MARKER} needs a trace path as its first argument, not {raw!r}")
    path = Path(os.path.expanduser(os.fspath(raw)))
    if not path.is_absolute():
        path = item.path.parent / path
    if _shared_by_parameters(item, marker):
        path = parameter_path(path, item.callspec.id)  # type: ignore[attr-defined]
    consume = args.get("require_full_consumption", False)
    if not isinstance(consume, bool):
        raise TypeError(f"require_full_consumption= must be True or False, not {consume!r}")
    for name in ("normalize", "redact"):
        value = args.get(name)
        if value is not None and not callable(value):
            raise TypeError(f"{name}= must be a callable payload -> payload, not {type(value).__name__}")
    policy = ReplayPolicy.of(
        live=args.get("live"),
        never_live=args.get("never_live"),
        on_missing=args.get("on_missing", "error"),
        model_map=args.get("model_map"),
    )
    hybrid = policy.hybrid
    # A hybrid replay's live calls reach their services: the network stays open unless asked.
    network = args.get("network", "allow" if hybrid else "block")
    allow_hosts = args.get("allow_hosts", ())
    check_network(network, allow_hosts)
    return GoldenTrace(
        path=path,
        policy=policy if policy != ReplayPolicy() else None,
        match=args.get("match", "parallel" if hybrid else "strict"),
        normalize=args.get("normalize"),
        redact=args.get("redact"),
        require_full_consumption=consume,
        network=network,
        allow_hosts=tuple(allow_hosts),
    )


def _shared_by_parameters(item: pytest.Item, marker: pytest.Mark) -> bool:
    """A marker on a parametrized test itself (not on one ``pytest.param``): each parameter
    then needs its own trace, or every recording would overwrite the last."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or not callspec.id:
        return False
    return not any(mark is marker or mark == marker for mark in callspec.marks)


_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]+")


def parameter_path(path: Path, param_id: str) -> Path:
    """``traces/weather.rewind`` + id ``paris`` -> ``traces/weather-paris.rewind`` (``.gz`` kept)."""
    safe = _UNSAFE.sub("_", param_id).strip("_") or "param"
    name = path.name
    for suffix in (".rewind.gz", ".rewind", ".gz"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return path.with_name(f"{name[: -len(suffix)]}-{safe}{suffix}")
    return path.with_name(f"{name}-{safe}")


def records_live(mode: str, trace: GoldenTrace) -> bool:
    """Whether a test under record ``mode`` runs live and records ``trace`` from scratch."""
    if mode in ("missing", "refresh"):
        return not trace.path.exists()
    return mode in ("all", "rewrite")


def refreshes(mode: str, trace: GoldenTrace) -> bool:
    """Whether a test under record ``mode`` replays ``trace`` up to its divergence and records the rest."""
    return mode == "refresh" and trace.path.exists()
