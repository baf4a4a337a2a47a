"""One stub server per test module; each test starts from a reset (fresh ids, no script)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rewind.stub_server import StubServer


@pytest.fixture(scope="module")
def shared_server() -> Iterator[StubServer]:
    with StubServer() as srv:
        yield srv


@pytest.fixture
def server(shared_server: StubServer) -> StubServer:
    shared_server.reset()
    return shared_server
