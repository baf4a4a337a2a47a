"""What an agent can see of an SDK call's outcome, as plain data two runs can be compared by.

``observe`` reads a result the way user code would (raw wrappers' status and headers, then
``parse()``; every stream chunk; a model's type, ``model_dump()``, ``model_fields_set``
all the way down and ``_request_id``; an error's class, ``str``, status, body, request and
response) and returns it as JSON-like data. ``differences`` lists where two observations
part, as ``path: live != replay`` lines.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pydantic


def _type(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def fields_set(model: Any) -> Any:
    """``model_fields_set`` of ``model`` and of every model inside it."""
    if isinstance(model, pydantic.BaseModel):
        return {
            "_set": sorted(model.model_fields_set),
            **{name: fields_set(getattr(model, name, None)) for name in sorted(model.model_fields_set)},
        }
    if isinstance(model, (list, tuple)):
        return [fields_set(item) for item in model]
    if isinstance(model, dict):
        return {str(k): fields_set(v) for k, v in model.items()}
    return None


def _request_id(model: Any) -> Any:
    try:
        return model._request_id
    except AttributeError as exc:
        return f"AttributeError: {exc}"


def _http_request(request: Any) -> Any:
    try:
        return {"method": request.method, "url": str(request.url)}
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _headers(headers: Any) -> dict[str, str]:
    """Each header as ``headers[name]`` reads it (repeated lines joined, as httpx joins them)."""
    return {str(name).lower(): headers[name] for name in sorted(set(headers.keys()))}


def observe_model(model: Any) -> Any:
    if isinstance(model, pydantic.BaseModel):
        return {
            "type": _type(model),
            "dump": model.model_dump(mode="json"),
            "fields_set": fields_set(model),
            "request_id": _request_id(model),
            "workspace_id": getattr(model, "_workspace_id", "<none>"),  # anthropic's second id
        }
    return {"type": _type(model), "value": repr(model)}


def observe_error(exc: BaseException) -> dict[str, Any]:
    seen: dict[str, Any] = {"class": _type(exc), "str": str(exc)}
    for name in ("status_code", "body", "request_id", "code", "type", "param"):
        if hasattr(exc, name):
            seen[name] = getattr(exc, name)
    if hasattr(exc, "request"):
        seen["request"] = _http_request(exc.request)
    response = getattr(exc, "response", None)
    if response is not None:
        seen["response"] = {
            "type": _type(response),
            "status_code": response.status_code,
            "headers": _headers(response.headers),
            "text": response.text,
            "request": _http_request(getattr(response, "request", None)),
        }
    return seen


def _raw(wrapper: Any) -> dict[str, Any]:
    return {"status_code": wrapper.status_code, "headers": _headers(wrapper.headers)}


def observe(result: Any) -> Any:
    """A sync call's result, read to the end."""
    if hasattr(result, "http_response"):  # with_raw_response / with_streaming_response
        seen = _raw(result)
        seen["parsed"] = observe(result.parse())
        return seen
    if isinstance(result, Iterator) or hasattr(result, "__next__"):
        return {"type": _type(result), "chunks": [observe_model(chunk) for chunk in result]}
    return observe_model(result)


async def aobserve(result: Any) -> Any:
    """An async call's result, read to the end."""
    if hasattr(result, "http_response"):
        seen = _raw(result)
        parsed = result.parse()  # a coroutine on async streaming responses, a value on raw ones
        seen["parsed"] = await aobserve(await parsed if inspect.isawaitable(parsed) else parsed)
        return seen
    if isinstance(result, AsyncIterator) or hasattr(result, "__anext__"):
        return {"type": _type(result), "chunks": [observe_model(chunk) async for chunk in result]}
    return observe_model(result)


def differences(live: Any, replay: Any, path: str = "") -> list[str]:
    """Where ``replay`` differs from ``live``, one line each."""
    if isinstance(live, dict) and isinstance(replay, dict):
        out: list[str] = []
        for key in sorted(set(live) | set(replay), key=str):
            if key not in live or key not in replay:
                out.append(f"{path}.{key}: {live.get(key, '<absent>')!r} != {replay.get(key, '<absent>')!r}")
            else:
                out += differences(live[key], replay[key], f"{path}.{key}")
        return out
    if isinstance(live, list) and isinstance(replay, list) and len(live) == len(replay):
        return [d for i, (a, b) in enumerate(zip(live, replay)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if live == replay else [f"{path}: {live!r} != {replay!r}"]
