"""Fixtures for the instrumentor tests: a real loopback model server and patched SDK clients.

SDK imports stay inside fixtures, so a missing provider SDK only affects its own tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from _anthropic_support import (  # noqa: F401 - fixtures every Anthropic test module uses
    aclaude_fixture,
    claude_fixture,
    patched_anthropic_fixture,
)
from _openai_support import API_KEY as OPENAI_TEST_KEY

from rewind.stub_server import StubServer


@pytest.fixture
def patched_openai() -> Iterator[None]:
    from rewind.setup.integrations import patch_openai

    unpatch = patch_openai()
    try:
        yield
    finally:
        unpatch()


@pytest.fixture
def patched_mcp() -> Iterator[None]:
    import rewind

    unpatch = rewind.patch_mcp()
    try:
        yield
    finally:
        unpatch()


@pytest.fixture
def client(stub: StubServer, patched_openai: None) -> Iterator[Any]:
    """A patched ``openai.OpenAI`` pointed at the stub server (no retries: failures show at once)."""
    import openai

    with openai.OpenAI(base_url=stub.openai_base_url, api_key=OPENAI_TEST_KEY, max_retries=0) as c:
        yield c


@pytest.fixture
async def aclient(stub: StubServer, patched_openai: None) -> AsyncIterator[Any]:
    """A patched ``openai.AsyncOpenAI`` pointed at the stub server."""
    import openai

    c = openai.AsyncOpenAI(base_url=stub.openai_base_url, api_key=OPENAI_TEST_KEY, max_retries=0)
    try:
        yield c
    finally:
        await c.close()
