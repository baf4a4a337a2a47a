"""The recorded Gemini API call made again through the real ``google-genai`` SDK.

pydantic-ai's cassettes keep the REST body the SDK sent (``contents``, ``generationConfig``,
``systemInstruction``, ``tools`` … in camelCase); ``arguments`` turns it back into the
``contents`` and ``config`` of ``generate_content`` / ``embed_content``, whose models accept
the camelCase names. ``observe_gemini_error`` reads an ``errors.APIError`` the way a handler
would: its own fields, and the HTTP response it carries (an ``httpx.Response`` from the sync
client, an ``aiohttp.ClientResponse`` from the async one).
"""

from __future__ import annotations

import asyncio
from typing import Any

from _observe import _headers, _http_request, _type, aobserve, observe
from _player import Interaction

API_KEY = "real-traffic-SECRET"
#: REST body keys that are ``GenerateContentConfig`` fields rather than ``generationConfig``'s.
_CONFIG_KEYS = ("systemInstruction", "tools", "toolConfig", "safetySettings", "cachedContent", "labels")


def _model(interaction: Interaction) -> str:
    return interaction.path.rsplit("/models/", 1)[1].split(":", 1)[0]


def arguments(interaction: Interaction) -> dict[str, Any]:
    body = interaction.request
    if interaction.endpoint == ":batchEmbedContents":
        requests = body.get("requests") or []
        contents = [part["text"] for r in requests for part in r.get("content", {}).get("parts", []) if "text" in part]
        first = requests[0] if requests else {}
        config = {k: first[k] for k in ("taskType", "title", "outputDimensionality") if k in first}
        return {"model": _model(interaction), "contents": contents, "config": config or None}
    config = dict(body.get("generationConfig") or {})
    config.update({k: body[k] for k in _CONFIG_KEYS if k in body})
    return {"model": _model(interaction), "contents": body.get("contents") or [], "config": config or None}


def observe_gemini_error(exc: BaseException, *, is_async: bool) -> dict[str, Any]:
    seen: dict[str, Any] = {"class": _type(exc), "str": str(exc), "has_request": hasattr(exc, "request")}
    for name in ("code", "status", "message", "details"):
        if hasattr(exc, name):
            seen[name] = getattr(exc, name)
    response = getattr(exc, "response", None)
    if response is not None and is_async:
        # Listed in docs/real-traffic.md: live, an async client on aiohttp holds an
        # aiohttp.ClientResponse (repeated headers as separate values); a replay holds an
        # httpx response. Both say the status and the same header names.
        seen["response"] = {
            "status": getattr(response, "status_code", getattr(response, "status", None)),
            "header_names": sorted({str(name).lower() for name in response.headers}),
        }
    elif response is not None:
        seen["response"] = {
            "type": _type(response),
            "status": getattr(response, "status_code", getattr(response, "status", None)),
            "headers": _headers(response.headers),
            "request": _http_request(getattr(response, "request", None)),
        }
    return seen


def run(interaction: Interaction, base_url: str, is_async: bool) -> Any:
    from google import genai

    client = genai.Client(api_key=API_KEY, http_options=genai.types.HttpOptions(base_url=base_url))
    kwargs = arguments(interaction)
    embed = interaction.endpoint == ":batchEmbedContents"
    stream = interaction.endpoint == ":streamGenerateContent"
    try:
        if not is_async:
            if embed:
                return observe(client.models.embed_content(**kwargs))
            method = client.models.generate_content_stream if stream else client.models.generate_content
            return observe(method(**kwargs))

        async def call() -> Any:
            models = client.aio.models
            if embed:
                return await aobserve(await models.embed_content(**kwargs))
            method = models.generate_content_stream if stream else models.generate_content
            return await aobserve(await method(**kwargs))

        return asyncio.run(call())
    except Exception as exc:
        return observe_gemini_error(exc, is_async=is_async)
