"""What a litellm call carries besides the model's request, and what of it may reach a trace.

litellm takes transport settings, endpoints and credentials as call keywords (``api_key``,
``api_base``, ``aws_secret_access_key``, ``extra_headers`` …) and echoes some of them in the
private state it keeps on a response (``_hidden_params``, ``_response_headers``). This
module decides which keywords are not part of a call's identity, which values a call was
given that must never be written, and reads and restores that private state without them.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from rewind.data.canonical import to_jsonable

from ._stainless import SECRET_HEADERS, keep_headers, resolve

#: Call keywords that are transport, endpoint, credentials or litellm's own plumbing: they
#: never change what the model is asked, so they are never part of a call's identity.
_NOT_THE_REQUEST = frozenset(
    {
        "api_base",
        "base_url",
        "api_version",
        "extra_headers",
        "headers",
        "timeout",
        "request_timeout",
        "stream_timeout",
        "num_retries",
        "max_retries",
        "metadata",
        "litellm_metadata",
        "litellm_logging_obj",
        "litellm_call_id",
        "litellm_trace_id",
        "litellm_session_id",
        "litellm_params",
        "logger_fn",
        "callbacks",  # CrewAI hands its token counter here: objects, not the request
        "success_callback",
        "failure_callback",
        "cache",  # DSPy's {"no-cache": …}: litellm's caching, not the model's input
        "caching",
        "retry_strategy",
        "no-log",
        "client",
        "proxy_server_request",
        "model_info",
        "acompletion",
        "aembedding",
        "organization",
        "azure_ad_token_provider",
        "aws_region_name",
        "aws_profile_name",
        "aws_role_name",
        "aws_session_name",
        "aws_bedrock_runtime_endpoint",
        "vertex_project",
        "vertex_location",
        "user_api_key_dict",
    }
)
#: Names that hold a secret, whatever the provider calls it (``api_key``, ``azure_ad_token``,
#: ``aws_secret_access_key``, ``vertex_credentials`` …); ``max_tokens`` does not match.
_SECRET_NAME = re.compile(r"(^|[_-])(key|secret|password|token|credentials?|authorization|cookie)$", re.IGNORECASE)


@lru_cache(maxsize=512)
def not_the_request(key: str) -> bool:
    return key in _NOT_THE_REQUEST or bool(_SECRET_NAME.search(key))


def _secret_header(name: Any) -> bool:
    lowered = str(name).lower()
    return lowered.removeprefix("llm_provider-") in SECRET_HEADERS


@lru_cache(maxsize=1024)
def _private_key_dropped(key: str) -> bool:
    """A key of litellm's private state that is never recorded (cached: the same few recur)."""
    return key in REQUEST_ECHOES or bool(_SECRET_NAME.search(key)) or _secret_header(key)


# --------------------------------------------------------------------------- private state


#: ``_hidden_params`` entries that echo the call (litellm puts unknown call keywords,
#: credentials among them, into ``optional_params["extra_body"]``; ``api_base`` is where
#: the call went, and some providers put keys in it): never recorded.
REQUEST_ECHOES = frozenset(
    {"optional_params", "litellm_params", "extra_headers", "headers", "extra_body", "api_base", "base_url"}
)


def clean_hidden(hidden: Mapping[Any, Any]) -> dict[str, Any]:
    """``_hidden_params`` as JSON data, without echoes of the call or secret-looking keys."""
    clean: dict[str, Any] = {}
    for key, value in hidden.items():
        if not isinstance(key, str) or _private_key_dropped(key):
            continue
        clean[key] = _without_secrets(value)
    return to_jsonable(clean, where="meta")


def _without_secrets(value: Any, depth: int = 0) -> Any:
    """``value`` minus, at any depth, entries named like a secret or a secret header."""
    if depth > 8:
        return value
    if isinstance(value, Mapping):
        return {
            k: v if isinstance(v, str) else _without_secrets(v, depth + 1)
            for k, v in value.items()
            if not (isinstance(k, str) and _private_key_dropped(k))
        }
    if isinstance(value, (list, tuple)):
        return [_without_secrets(v, depth + 1) for v in value]
    return value


def secret_values(kwargs: Mapping[str, Any]) -> frozenset[str]:
    """What a call was given that stays out of a trace: credentials, header values, endpoints."""
    found: set[str] = set()
    for key, value in kwargs.items():
        if key in ("extra_headers", "headers") and isinstance(value, Mapping):
            found.update(v for v in value.values() if isinstance(v, str))
        elif (_SECRET_NAME.search(key) or key in ("api_base", "base_url")) and isinstance(value, str):
            found.add(value.rstrip("/"))
    return frozenset(s for s in found if len(s) >= 8)  # short values would blank common words


class CallCredentials:
    """A litellm call's credentials, where ``client_credentials`` looks for a client's.

    litellm takes its keys as call keywords (``api_key=``, ``aws_secret_access_key=``,
    ``extra_headers=`` …), not from a client object: without this, an error that quotes
    the key it was given (``Incorrect API key provided: sk-…``) reaches the call's span as
    it is, though the step's record is scrubbed (``secret_values``).
    """

    __slots__ = ("client", "default_headers")

    def __init__(self, instance: Any, kwargs: Mapping[str, Any]) -> None:
        self.client = instance  # a Router's own keys, if it keeps any
        given: dict[str, str] = {}
        for key, value in kwargs.items():
            if key in ("extra_headers", "headers") and isinstance(value, Mapping):
                given.update((str(k), v) for k, v in value.items() if isinstance(v, str))
            elif isinstance(key, str) and isinstance(value, str) and _SECRET_NAME.search(key):
                given[key] = value
        self.default_headers = given  # kept by name: only credential-named entries count


def scrub(value: Any, secrets: frozenset[str]) -> Any:
    """``value`` with every string that contains one of ``secrets`` replaced."""
    if isinstance(value, str):
        return "[redacted by rewind]" if any(s in value for s in secrets) else value
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    return value


def private_state(obj: Any) -> dict[str, Any]:
    """What litellm keeps on a response beside its fields, minus anything secret."""
    state: dict[str, Any] = {}
    hidden = getattr(obj, "_hidden_params", None)
    if isinstance(hidden, Mapping) and hidden:
        state["hidden_params"] = clean_hidden(hidden)
    headers = getattr(obj, "_response_headers", None)
    if headers:
        state["response_headers"] = keep_headers(headers)
    response_ms = getattr(obj, "_response_ms", None)
    if isinstance(response_ms, (int, float)):
        state["response_ms"] = response_ms
    return state


def restore_state(obj: Any, state: Any) -> None:
    """Put recorded private state back the way litellm sets it (plain attribute writes)."""
    if not isinstance(state, Mapping):
        return
    for key, attr in (("hidden_params", "_hidden_params"), ("response_headers", "_response_headers")):
        if isinstance(state.get(key), dict):
            value = copy.deepcopy(state[key])  # each object its own: agents mutate them
            if attr == "_hidden_params" and isinstance(value.get("usage"), dict):
                value["usage"] = _usage(value["usage"])  # a stream's final chunk carries one
            try:
                setattr(obj, attr, value)
            except Exception:  # a dict served by fallback revival
                pass
    if "response_ms" in state:
        try:
            obj._response_ms = state["response_ms"]
        except Exception:
            pass


def _usage(data: dict[str, Any]) -> Any:
    usage = resolve("litellm.types.utils:Usage")
    try:
        return usage(**data) if usage is not None else data
    except Exception:
        return data


def stream_state(wrapper: Any) -> dict[str, Any]:
    state = private_state(wrapper)
    for attr in ("model", "custom_llm_provider"):
        value = getattr(wrapper, attr, None)
        if isinstance(value, str):
            state[attr] = value
    return state
