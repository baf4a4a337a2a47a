"""Helpers shared by the ``test_litellm_*`` files: the real litellm, offline, against the stub.

litellm fetches its model cost map from the network when imported unless told to use
the copy it ships with; that switch must be set before the first import.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

litellm = pytest.importorskip("litellm")

import rewind  # noqa: E402
from rewind.stub_server import StubServer  # noqa: E402

API_KEY = "sk-litellm-SECRET-never-in-a-trace"
MODEL = "openai/gpt-4o-mini"
EMBEDDING_MODEL = "openai/text-embedding-3-small"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def events(path: Path) -> list[rewind.Event]:
    return list(rewind.Trace.load(path).events)


def openai_route(stub: StubServer, **more: Any) -> dict[str, Any]:
    """Where litellm sends ``openai/...`` models: the stub, with no retries anywhere."""
    return {"api_base": stub.openai_base_url, "api_key": API_KEY, "num_retries": 0, "max_retries": 0, **more}


@pytest.fixture
def patched_litellm() -> Iterator[None]:
    unpatch = rewind.patch_litellm()
    try:
        yield
    finally:
        unpatch()


def _comparable(obj: Any) -> Any:
    """What replay promises of a litellm object: its type, its attributes, its private state
    except the echo of the request (``optional_params``) that rewind never records."""
    if isinstance(obj, (list, tuple)):
        return [_comparable(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _comparable(v) for k, v in obj.items()}
    if not hasattr(obj, "model_dump"):
        return obj
    from rewind.instrumentors.litellm import _REQUEST_ECHOES

    hidden = getattr(obj, "_hidden_params", None) or {}
    return (
        type(obj),
        vars(obj),
        {k: v for k, v in hidden.items() if k not in _REQUEST_ECHOES},
        getattr(obj, "_response_headers", None),
    )


def same(replayed: Any, live: Any) -> bool:
    """``replayed == live`` for litellm objects, as far as a recording can make it so."""
    return bool(_comparable(replayed) == _comparable(live))
