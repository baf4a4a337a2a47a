from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rewind.proxy import Proxy
from rewind.stub_server import StubServer

StartProxy = Callable[..., Proxy]


@pytest.fixture
def upstreams(stub: StubServer) -> dict[str, str]:
    """Every provider the proxy knows, pointed at the stub server."""
    return {
        "openai": stub.openai_base_url,
        "anthropic": stub.anthropic_base_url,
        "mistral": stub.mistral_base_url,
        "cohere": stub.cohere_base_url,
        "gemini": stub.gemini_base_url,
    }


@pytest.fixture
def proxies() -> Iterator[StartProxy]:
    """``proxies(path, mode=..., ...)``: a started proxy, stopped after the test (if still running)."""
    started: list[Proxy] = []

    def start(path: Path, **options: object) -> Proxy:
        lines: list[str] = []
        proxy = Proxy(str(path), log=lines.append, **options)  # type: ignore[arg-type]
        proxy.lines = lines  # type: ignore[attr-defined]
        started.append(proxy.start())
        return proxy

    yield start
    for proxy in started:
        proxy.stop()
