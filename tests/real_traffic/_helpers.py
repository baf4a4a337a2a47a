"""The SDKs' stream helpers over a streamed interaction, observed as plain data.

A streamed chat completion, Responses call or Anthropic message can also be read through
the SDK's own helper, which adds events up into snapshots and a final object:
``chat.completions.stream(...)`` (and ``beta.chat.completions.stream`` where it is a class of
its own) and ``get_final_completion()``; ``responses.stream(...)`` and ``get_final_response()``;
``messages.stream(...)`` (and ``beta.messages.stream``) with ``get_final_message()`` and
``get_final_text()``. ``helpers()`` names the helpers the installed SDK has for an
endpoint; ``run`` makes the call through one of them, sync or async, and returns what user
code sees: every event the helper yields (type, ``model_dump()``, ``model_fields_set``),
the helper's current snapshot after each event and at the end, its final objects (or the
error each raised), any error the stream raised after the events before it, and the status
of the HTTP response where the helper exposes it.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from _observe import observe_error, observe_model
from _player import Interaction

#: Per SDK and endpoint: the stream helpers to read a streamed interaction through, as the
#: attribute path from the client to the resource holding ``stream``.
HELPERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("openai", "/chat/completions"): ("chat.completions", "beta.chat.completions"),
    ("openai", "/responses"): ("responses",),
    ("anthropic", "/messages"): ("messages", "beta.messages"),
}
#: What each helper's stream is asked for at the end, and what it shows along the way.
_FINAL = ("get_final_completion", "get_final_response", "get_final_message", "get_final_text")
_SNAPSHOT = ("current_completion_snapshot", "current_message_snapshot")


def resource(client: Any, path: str) -> Any | None:
    """The resource at ``path`` under ``client`` (``None`` where this SDK release has none)."""
    owner = client
    for name in path.split("."):
        owner = getattr(owner, name, None)
        if owner is None:
            return None
    return owner if callable(getattr(owner, "stream", None)) else None


@functools.cache
def helpers(sdk: str, endpoint: str) -> tuple[str, ...]:
    """The helper paths of ``HELPERS`` the installed ``sdk`` has, one per implementation:
    where ``beta.chat.completions`` is the same class as ``chat.completions`` (openai 2.x and
    later) reading it again would run the same code."""
    try:
        module = importlib.import_module(sdk)
    except ImportError:
        return ()
    client = getattr(module, {"openai": "OpenAI", "anthropic": "Anthropic"}[sdk])(
        api_key="unused", base_url="http://127.0.0.1"
    )
    found: dict[type, str] = {}
    for path in HELPERS.get((sdk, endpoint), ()):
        owner = resource(client, path)
        if owner is not None:
            found.setdefault(type(owner), path)
    return tuple(found.values())


def arguments(stream: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any]:
    """The recorded body as the helper's keyword arguments: it sends ``stream`` itself;
    what it does not name goes in ``extra_body``."""
    accepted = inspect.signature(stream).parameters
    body = {k: v for k, v in body.items() if k != "stream"}
    kwargs = {k: v for k, v in body.items() if k in accepted}
    extra = {k: v for k, v in body.items() if k not in accepted}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def _attribute(obj: Any, name: str) -> Any:
    """``obj.name`` observed, or the error reading it raised."""
    try:
        return observe_model(getattr(obj, name))
    except Exception as exc:
        return observe_error(exc)


def _snapshot(stream: Any) -> Any:
    names = [n for n in _SNAPSHOT if hasattr(type(stream), n)]
    return {name: _attribute(stream, name) for name in names}


def _response(stream: Any) -> Any:
    """The status of the HTTP response a helper exposes publicly (Anthropic's ``.response``).

    Its headers (and ``.request_id``, read from them) are not compared: a trace does not
    keep a plain stream's headers (docs/real-traffic.md).
    """
    if not hasattr(type(stream), "response"):
        return None
    return {"status_code": stream.response.status_code}


def _event(stream: Any, event: Any) -> dict[str, Any]:
    return {"event": observe_model(event), "snapshot": _snapshot(stream)}


def _finals(stream: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _FINAL:
        if not hasattr(type(stream), name):
            continue
        try:
            out[name] = observe_model(getattr(stream, name)())
        except Exception as exc:
            out[name] = observe_error(exc)
    return out


async def _afinals(stream: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _FINAL:
        if not hasattr(type(stream), name):
            continue
        try:
            out[name] = observe_model(await getattr(stream, name)())
        except Exception as exc:
            out[name] = observe_error(exc)
    return out


def observe_sync(manager: Any) -> dict[str, Any]:
    """Enter a helper's stream manager and read it to the end, as user code would; an error
    is observed where it was raised, after the events that came before it."""
    seen: dict[str, Any] = {"events": []}
    try:
        with manager as stream:
            seen.update(type=observe_model(stream)["type"], response=_response(stream))
            for event in stream:
                seen["events"].append(_event(stream, event))
            seen["final"] = _finals(stream)
            seen["snapshot"] = _snapshot(stream)
    except Exception as exc:
        seen["error"] = observe_error(exc)
    return seen


async def observe_async(manager: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {"events": []}
    try:
        async with manager as stream:
            seen.update(type=observe_model(stream)["type"], response=_response(stream))
            async for event in stream:
                seen["events"].append(_event(stream, event))
            seen["final"] = await _afinals(stream)
            seen["snapshot"] = _snapshot(stream)
    except Exception as exc:
        seen["error"] = observe_error(exc)
    return seen


def run(client: Any, interaction: Interaction, path: str, *, is_async: bool) -> dict[str, Any]:
    """Read ``interaction`` through the helper at ``path`` of ``client`` and observe it."""
    owner = resource(client, path)
    assert owner is not None, f"{path}.stream is not in this SDK release"
    kwargs = arguments(owner.stream, interaction.request)
    if not is_async:
        return observe_sync(owner.stream(**kwargs))
    return asyncio.run(observe_async(owner.stream(**kwargs)))
