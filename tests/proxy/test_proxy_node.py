"""The official ``openai`` npm package under Node, recorded and replayed through ``rewind proxy``.

``make test-proxy-node`` installs the package (``make node-proxy``) and runs this file with
``REWIND_REQUIRE_NODE=1``: there, and under CI, a missing Node or package fails the test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rewind.errors import UnconsumedEventsWarning
from rewind.proxy import Proxy
from rewind.storage.trace import Trace
from rewind.stub_server import StubServer

pytestmark = pytest.mark.node

AGENT = Path(__file__).parent / "node" / "agent.mjs"
PACKAGE = Path(__file__).parent / "node" / "node_modules" / "openai" / "package.json"


def _node() -> str:
    node = shutil.which("node")
    missing = (
        "node is not on PATH"
        if node is None
        else ("the openai npm package is not installed" if not PACKAGE.exists() else "")
    )
    if missing:
        message = f"{missing}: run `make node-proxy` (it installs tests/proxy/node/package.json from the npm registry)"
        if os.environ.get("REWIND_REQUIRE_NODE") or os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    assert node is not None
    return node


def _agent(node: str, env: dict[str, str], question: str = "hello") -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_BASE_URL", "_API_KEY"))}
    done = subprocess.run(
        [node, str(AGENT), question], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_openai_npm_package_records_and_replays(tmp_path: Path) -> None:
    node = _node()
    trace = tmp_path / "node.rewind"
    script = [{"text": "one"}, {"text": "two"}, {"text": "three"}, {"error": {"status": 429}}]
    with StubServer(script=script) as stub:
        with Proxy(str(trace), upstreams={"openai": stub.openai_base_url}) as proxy:
            live = _agent(node, {**proxy.environment(), "OPENAI_API_KEY": "sk-node-SECRET"})
        assert any(r.headers.get("authorization") == "Bearer sk-node-SECRET" for r in stub.requests)
    assert live["chat"] == "one" and live["deltas"] == ["", "two", None] and live["responses"] == "three"
    assert live["last"]["status"] == 429 and live["last"]["name"] == "RateLimitError"
    assert "sk-node-SECRET" not in trace.read_text()
    names = [e.name for e in Trace.open(trace).events]
    assert names == [
        "openai.chat.completions.create",
        "openai.chat.completions.create",
        "openai.responses.create",
        "openai.embeddings.create",
        "openai.chat.completions.create",
    ]

    # No upstream, no key: the placeholder the proxy's environment gives is all the SDK needs.
    with Proxy(str(trace), mode="replay") as proxy:
        assert _agent(node, proxy.environment()) == live


def test_divergence_reaches_the_node_client(tmp_path: Path) -> None:
    node = _node()
    trace = tmp_path / "node.rewind"
    with StubServer() as stub, Proxy(str(trace), upstreams={"openai": stub.openai_base_url}) as proxy:
        _agent(node, {**proxy.environment(), "OPENAI_API_KEY": "k"})
    with Proxy(str(trace), mode="replay") as proxy:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_BASE_URL", "_API_KEY"))}
        done = subprocess.run(
            [node, str(AGENT), "a different question"],
            env={**env, **proxy.environment()},
            capture_output=True,
            text=True,
            timeout=60,
        )
        with pytest.warns(UnconsumedEventsWarning):  # the recorded steps were never served
            proxy.stop()
    assert done.returncode != 0
    assert "422" in done.stderr and "replay diverged at step 0" in done.stderr
    assert len(proxy.divergences) == 1
