"""``ReplayPolicy``: which calls of a replay or fork run live, which must never, and what a
served call with no recorded answer does (docs/hybrid.md).

A policy is a value, not a replay engine: the ``ReplaySpanProcessor`` asks it, per call,
whether the call runs live or is served, and the session, the CLI, the environment
(``REWIND_LIVE``, ``REWIND_NEVER_LIVE``, ``REWIND_ON_MISSING``, ``REWIND_MODEL_MAP``) and the
pytest plugin all build the same one. A call is picked by a *selector*:

==================  =========================================================
``"llm"``           every call of that kind (``llm``, ``tool``, ``memory``)
``"tool:search"``   the calls of that kind with that name
``"refund"``        the calls with that name, of any kind
==================  =========================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

KINDS = ("llm", "tool", "memory")
ON_MISSING = ("error", "live")

#: The environment variables a policy is read from (with ``REWIND_REPLAY``).
ENVIRONMENT = ("REWIND_LIVE", "REWIND_NEVER_LIVE", "REWIND_ON_MISSING", "REWIND_MODEL_MAP")


@dataclass(frozen=True)
class Selector:
    """Calls of ``kind`` (any kind when ``None``) named ``name`` (any name when ``None``)."""

    kind: str | None
    name: str | None

    @classmethod
    def parse(cls, text: str, option: str) -> Selector:
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{option} takes call selectors ('llm', 'tool:search_flights', 'refund'), not {text!r}")
        text = text.strip()
        if text in KINDS:
            return cls(text, None)
        kind, colon, name = text.partition(":")
        if colon:
            if kind not in KINDS or not name:
                raise ValueError(
                    f"{option}: {text!r} is not KIND:NAME with KIND one of {', '.join(KINDS)} "
                    "(write 'tool:search_flights', or a bare name for any kind)"
                )
            return cls(kind, name)
        return cls(None, text)

    def covers(self, kind: str, name: str) -> bool:
        return (self.kind is None or self.kind == kind) and (self.name is None or self.name == name)

    def __str__(self) -> str:
        if self.name is None:
            return str(self.kind)
        return f"{self.kind}:{self.name}" if self.kind is not None else self.name


def _selectors(values: Iterable[str] | str | None, option: str) -> tuple[Selector, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        # One string is a list written out ("llm,memory"), as on the command line.
        values = [part for part in values.split(",") if part.strip()]
    return tuple(Selector.parse(value, option) for value in values)


@dataclass(frozen=True)
class ReplayPolicy:
    """What runs live in a replay or fork, and what never may.

    ``live``        selectors of the calls that run live; every other call is served from
                    the trace by identity (a *hybrid* replay).
    ``never_live``  selectors of calls that must never run for real: when no recorded
                    answer fits, the run stops with ``NeverLiveError``. Wins over ``live``.
    ``on_missing``  a served call with no recorded answer: ``"error"`` raises the
                    ``DivergenceError`` (naming the nearest recorded call), ``"live"`` runs it.
    ``model_map``   ``{recorded model: model to run}`` for live LLM calls of the SDKs.
    """

    live: tuple[Selector, ...] = ()
    never_live: tuple[Selector, ...] = ()
    on_missing: str = "error"
    model_map: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    _cache: dict[tuple[str, str], int] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        live: Iterable[str] | str | None = None,
        never_live: Iterable[str] | str | None = None,
        on_missing: str = "error",
        model_map: Mapping[str, str] | Iterable[str] | str | None = None,
    ) -> ReplayPolicy:
        """A checked policy from the arguments ``replay()``/``fork()`` take."""
        if on_missing not in ON_MISSING:
            raise ValueError(f"on_missing= must be one of {', '.join(map(repr, ON_MISSING))}, not {on_missing!r}")
        return cls(
            live=_selectors(live, "live="),
            never_live=_selectors(never_live, "never_live="),
            on_missing=on_missing,
            model_map=MappingProxyType(parse_model_map(model_map)),
        )

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> ReplayPolicy | None:
        """The policy ``REWIND_LIVE`` & co. describe, or ``None`` when none is set."""
        if not any(env.get(name) for name in ENVIRONMENT):
            return None
        return cls.of(
            live=env.get("REWIND_LIVE") or None,
            never_live=env.get("REWIND_NEVER_LIVE") or None,
            on_missing=env.get("REWIND_ON_MISSING") or "error",
            model_map=env.get("REWIND_MODEL_MAP") or None,
        )

    def environment(self) -> dict[str, str]:
        """The ``REWIND_*`` variables that give this policy back in a child process."""
        env: dict[str, str] = {}
        if self.live:
            env["REWIND_LIVE"] = ",".join(map(str, self.live))
        if self.never_live:
            env["REWIND_NEVER_LIVE"] = ",".join(map(str, self.never_live))
        if self.on_missing != "error":
            env["REWIND_ON_MISSING"] = self.on_missing
        if self.model_map:
            env["REWIND_MODEL_MAP"] = ",".join(f"{a}={b}" for a, b in self.model_map.items())
        return env

    # -- the questions the replay asks, per call -----------------------------------------
    @property
    def hybrid(self) -> bool:
        """Whether some calls of a replay may run live."""
        return bool(self.live) or self.on_missing == "live"

    def runs_live(self, kind: str, name: str) -> bool:
        """This call runs live (it is selected by ``live`` and not by ``never_live``)."""
        return self._verdict(kind, name) == 1

    def forbids(self, kind: str, name: str) -> bool:
        """This call must never run live."""
        return self._verdict(kind, name) == 2

    def _verdict(self, kind: str, name: str) -> int:
        """0 served, 1 live, 2 never live; cached per (kind, name): asked on every call."""
        key = (kind, name)
        verdict = self._cache.get(key)
        if verdict is None:
            if any(s.covers(kind, name) for s in self.never_live):
                verdict = 2
            else:
                verdict = 1 if any(s.covers(kind, name) for s in self.live) else 0
            self._cache[key] = verdict
        return verdict

    def live_model(self, model: str) -> str:
        return self.model_map.get(model, model)

    def describe(self) -> dict[str, Any]:
        """The policy as a trace header records it."""
        out: dict[str, Any] = {"live": [str(s) for s in self.live], "on_missing": self.on_missing}
        if self.never_live:
            out["never_live"] = [str(s) for s in self.never_live]
        if self.model_map:
            out["model_map"] = dict(self.model_map)
        return out


def parse_model_map(value: Mapping[str, str] | Iterable[str] | str | None) -> dict[str, str]:
    """``{"gpt-4o-mini": "gpt-4.1"}`` from a mapping, ``"a=b,c=d"`` or ``["a=b", ...]``."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        pairs = list(value.items())
    else:
        items = value.split(",") if isinstance(value, str) else list(value)
        pairs = []
        for item in items:
            if not isinstance(item, str):
                raise ValueError(f"model_map: {item!r} is not RECORDED=LIVE (e.g. gpt-4o-mini=gpt-4.1)")
            if not item.strip():
                continue
            recorded, equals, live = item.partition("=")
            if not equals:
                raise ValueError(f"model_map: {item!r} is not RECORDED=LIVE (e.g. gpt-4o-mini=gpt-4.1)")
            pairs.append((recorded.strip(), live.strip()))
    out: dict[str, str] = {}
    for recorded, live in pairs:
        if not isinstance(recorded, str) or not isinstance(live, str) or not recorded or not live:
            raise ValueError(f"model_map: {recorded!r} -> {live!r} must map a model name to a model name")
        out[recorded] = live
    return out
