"""``rewind.proxy``: real SDK clients and curl over real HTTP, the stub server as the provider."""

from __future__ import annotations

import http.client
import json
import random
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import rewind
from rewind.errors import FuzzyMatchWarning, ReplayDriftWarning, RewindError, UnconsumedEventsWarning
from rewind.proxy import DIVERGENCE_STATUS, Proxy, UpstreamConfigError
from rewind.storage.trace import Trace
from rewind.stub_server import StubServer

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def _openai(proxy: Proxy, key: str = "sk-proxy-SECRET") -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.base_url("openai"), api_key=key, max_retries=0)


def _anthropic(proxy: Proxy, key: str = "sk-ant-SECRET") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.base_url("anthropic"), api_key=key, max_retries=0)


def _run_openai_agent(client: openai.OpenAI, claude: anthropic.Anthropic) -> dict[str, Any]:
    """One of each OpenAI and Anthropic call shape, what the agent got from each."""
    out: dict[str, Any] = {}
    out["chat"] = client.chat.completions.create(**CHAT).choices[0].message.content
    stream = client.chat.completions.create(**CHAT, stream=True)
    out["deltas"] = [c.choices[0].delta.content for c in stream if c.choices]
    out["responses"] = client.responses.create(model="gpt-4o-mini", input="hello").output_text
    with client.responses.stream(model="gpt-4o-mini", input="streamed") as events:
        out["responses_stream"] = events.get_final_response().output_text
    out["embedding"] = client.embeddings.create(model="text-embedding-3-small", input="hello").data[0].embedding
    message = claude.messages.create(model="claude-stub", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    out["claude"] = message.content[0].text
    with claude.messages.stream(
        model="claude-stub", max_tokens=64, messages=[{"role": "user", "content": "stream"}]
    ) as text:
        out["claude_stream"] = "".join(text.text_stream)
    return out


def test_record_then_replay_with_no_upstream(stub: StubServer, upstreams, proxies, trace_path: Path) -> None:
    proxy = proxies(trace_path, upstreams=upstreams)
    live = _run_openai_agent(_openai(proxy), _anthropic(proxy))
    proxy.stop()
    recorded = stub.request_count
    stub.stop()  # the replay has no upstream at all

    replayer = proxies(trace_path, mode="replay", upstreams={"openai": "http://127.0.0.1:9"})
    assert _run_openai_agent(_openai(replayer, key="any"), _anthropic(replayer, key="any")) == live
    replayer.stop()
    assert recorded == 7
    names = [e.name for e in Trace.open(trace_path).events]
    assert names == [
        "openai.chat.completions.create",
        "openai.chat.completions.create",
        "openai.responses.create",
        "openai.responses.create",
        "openai.embeddings.create",
        "anthropic.messages.create",
        "anthropic.messages.create",
    ]
    assert all("replayed step" in line for line in replayer.lines)  # type: ignore[attr-defined]


def _sdk_run(client: openai.OpenAI, claude: anthropic.Anthropic) -> dict[str, Any]:
    out: dict[str, Any] = {"chat": client.chat.completions.create(**CHAT).choices[0].message.content}
    out["deltas"] = [
        c.choices[0].delta.content for c in client.chat.completions.create(**CHAT, stream=True) if c.choices
    ]
    out["responses"] = client.responses.create(model="gpt-4o-mini", input="hello").output_text
    with claude.messages.stream(model="claude-stub", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as s:
        out["claude_stream"] = "".join(s.text_stream)
    try:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "fail"}])
    except openai.RateLimitError as exc:
        out["error"] = (type(exc).__name__, exc.status_code, exc.response.headers.get("retry-after"))
    return out


@pytest.fixture
def patched_sdks():
    unpatch = rewind.auto_patch("openai", "anthropic")
    yield
    unpatch()


def test_same_call_same_step_both_ways(stub: StubServer, upstreams, proxies, tmp_path: Path, patched_sdks) -> None:
    """The Python SDK's trace replays through the proxy, and the proxy's trace replays in the Python SDK."""
    by_sdk, by_proxy = tmp_path / "sdk.rewind", tmp_path / "proxy.rewind"
    rate_limited = {"status": 429, "headers": {"retry-after": "7"}}

    stub.add_script("Echo: hi", "streamed answer", "Echo: hello", "claude", {"error": rate_limited})
    with rewind.record(by_sdk):  # the instrumentors record (no proxy)
        sdk_live = _sdk_run(
            openai.OpenAI(base_url=stub.openai_base_url, api_key="k", max_retries=0),
            anthropic.Anthropic(base_url=stub.anthropic_base_url, api_key="k", max_retries=0),
        )
    stub.reset()
    stub.add_script("Echo: hi", "streamed answer", "Echo: hello", "claude", {"error": rate_limited})
    proxy = proxies(by_proxy, upstreams=upstreams)  # the proxy records (no session in this thread)
    proxy_live = _sdk_run(_openai(proxy), _anthropic(proxy))
    proxy.stop()
    assert proxy_live == sdk_live
    assert sdk_live["error"] == ("RateLimitError", 429, "7")

    sdk_events, proxy_events = Trace.open(by_sdk).events, Trace.open(by_proxy).events
    assert [(e.kind, e.name, e.fingerprint) for e in proxy_events] == [
        (e.kind, e.name, e.fingerprint) for e in sdk_events
    ]
    assert [e.request for e in proxy_events] == [e.request for e in sdk_events]
    assert [e.ok for e in proxy_events] == [True, True, True, True, False]
    assert proxy_events[4].error["type"] == sdk_events[4].error["type"] == "openai.RateLimitError"
    stub.stop()

    # The SDK's trace, through the proxy: the un-instrumented path (no session here) gets the same answers.
    replayer = proxies(by_sdk, mode="replay")
    assert _sdk_run(_openai(replayer), _anthropic(replayer)) == sdk_live
    replayer.stop()
    # The proxy's trace, in the Python SDK: the instrumentors answer from it, no server at all.
    with rewind.replay(by_proxy):
        assert _sdk_run(openai.OpenAI(api_key="k", max_retries=0), anthropic.Anthropic(api_key="k")) == sdk_live


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("content-type", "application/json")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def test_sse_framing_and_errors_replay_byte_for_byte(stub: StubServer, upstreams, proxies, trace_path: Path) -> None:
    stub.add_script(
        "one two",
        "three",
        {"error": {"status": 429, "headers": {"retry-after": "3"}, "message": "slow down"}},
    )
    proxy = proxies(trace_path, upstreams=upstreams)
    chat = _post(proxy.base_url("openai") + "/chat/completions", {**CHAT, "stream": True})
    claude = _post(
        proxy.url + "/v1/messages",
        {"model": "claude-stub", "max_tokens": 9, "stream": True, "messages": [{"role": "user", "content": "x"}]},
        {"anthropic-version": "2023-06-01"},
    )
    limited = _post(proxy.base_url("openai") + "/chat/completions", CHAT)
    proxy.stop()
    stub.stop()
    assert chat[1]["content-type"].startswith("text/event-stream") and chat[2].endswith(b"data: [DONE]\n\n")
    assert b"event: message_start\ndata: " in claude[2]
    assert limited[0] == 429

    replayer = proxies(trace_path, mode="replay")
    assert _post(replayer.base_url("openai") + "/chat/completions", {**CHAT, "stream": True})[2] == chat[2]
    claude_again = _post(
        replayer.url + "/v1/messages",
        {"model": "claude-stub", "max_tokens": 9, "stream": True, "messages": [{"role": "user", "content": "x"}]},
    )
    # Anthropic's keep-alive pings reach the agent live; its SDK never hands them on, so no step holds them.
    assert b"event: ping\n" in claude[2]
    assert claude_again[2] == claude[2].replace(b'event: ping\ndata: {"type":"ping"}\n\n', b"")
    status, headers, body = _post(replayer.base_url("openai") + "/chat/completions", CHAT)
    replayer.stop()
    assert (status, headers["retry-after"], json.loads(body)) == (429, "3", json.loads(limited[2]))
    assert headers["x-request-id"] == limited[1]["x-request-id"]


def test_credentials_are_never_written_and_replay_needs_no_key(
    stub: StubServer, upstreams, proxies, trace_path: Path
) -> None:
    secrets = ["sk-Bearer-SECRET-1", "xapikey-SECRET-2", "azure-SECRET-3", "goog-SECRET-4", "query-SECRET-5"]
    proxy = proxies(trace_path, upstreams=upstreams)
    _post(proxy.base_url("openai") + "/chat/completions", CHAT, {"authorization": f"Bearer {secrets[0]}"})
    _post(
        proxy.url + "/v1/messages",
        {"model": "claude-stub", "max_tokens": 9, "messages": [{"role": "user", "content": "x"}]},
        {"x-api-key": secrets[1], "api-key": secrets[2], "anthropic-version": "2023-06-01"},
    )
    gemini = f"{proxy.url}/v1beta/models/gemini-2.0-flash:generateContent?key={secrets[4]}"
    assert _post(gemini, {"contents": [{"parts": [{"text": "hi"}]}]}, {"x-goog-api-key": secrets[3]})[0] == 200
    proxy.stop()
    # The provider got every credential (the proxy forwards them) ...
    seen = json.dumps([r.headers for r in stub.requests]) + json.dumps([r.path for r in stub.requests])
    assert all(secret in seen for secret in secrets)
    # ... and the trace holds none of them.
    text = trace_path.read_text()
    assert not [secret for secret in secrets if secret in text]
    assert len(Trace.open(trace_path).events) == 3

    replayer = proxies(trace_path, mode="replay")
    assert _post(replayer.base_url("openai") + "/chat/completions", CHAT)[0] == 200  # no key at all
    assert (
        _post(
            replayer.url + "/v1/messages",
            {"model": "claude-stub", "max_tokens": 9, "messages": [{"role": "user", "content": "x"}]},
        )[0]
        == 200
    )
    assert (
        _post(
            replayer.url + "/v1beta/models/gemini-2.0-flash:generateContent",
            {"contents": [{"parts": [{"text": "hi"}]}]},
        )[0]
        == 200
    )
    replayer.stop()


def test_divergence_is_an_http_error_the_sdk_raises(stub: StubServer, upstreams, proxies, trace_path: Path) -> None:
    proxy = proxies(trace_path, upstreams=upstreams)
    _openai(proxy).chat.completions.create(**CHAT)
    proxy.stop()

    replayer = proxies(trace_path, mode="replay")
    client = openai.OpenAI(base_url=replayer.base_url("openai"), api_key="k")  # default retries: none happen
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "changed"}])
    assert caught.value.status_code == DIVERGENCE_STATUS
    body = caught.value.response.json()
    assert body["error"]["step"] == 0
    assert body["error"]["reason"] and body["error"]["hint"]
    assert "replay diverged at step 0" in body["error"]["message"]
    assert len(replayer.divergences) == 1  # asked once: the SDK did not retry
    assert any("replay diverged at step 0" in line for line in replayer.lines)  # type: ignore[attr-defined]
    with pytest.warns(UnconsumedEventsWarning):
        replayer.stop()


def _concurrently(proxy: Proxy, agents: list[str]) -> dict[str, list[str | None]]:
    """Each agent on its own thread and client: a question, then a follow-up quoting the answer."""
    answers: dict[str, list[str | None]] = {}

    def agent(name: str) -> None:
        client = _openai(proxy)
        first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": name}])
        said = first.choices[0].message.content
        messages = [{"role": "user", "content": name}, {"role": "assistant", "content": said}]
        second = client.chat.completions.create(model="m", messages=[*messages, {"role": "user", "content": "more"}])
        answers[name] = [said, second.choices[0].message.content]

    threads = [threading.Thread(target=agent, args=(name,)) for name in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return answers


def test_concurrent_clients_matched_in_parallel(stub: StubServer, upstreams, proxies, trace_path: Path) -> None:
    agents = [f"agent {n}" for n in range(6)]
    proxy = proxies(trace_path, upstreams=upstreams)
    live = _concurrently(proxy, agents)  # recorded concurrently: the steps interleave
    proxy.stop()
    assert sorted(live) == agents and all(live[a][0] == f"Echo: {a}" for a in agents)
    assert len(Trace.open(trace_path).events) == 12

    replayer = proxies(trace_path, mode="replay", match="parallel")
    assert _concurrently(replayer, random.Random(7).sample(agents, len(agents))) == live
    replayer.stop()
    assert replayer.divergences == []


def test_ordered_and_fuzzy_matching(stub: StubServer, upstreams, proxies, trace_path: Path) -> None:
    proxy = proxies(trace_path, upstreams=upstreams)
    client = _openai(proxy)
    for text in ("first question about flights", "second question about hotels"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    proxy.stop()

    fuzzy = proxies(trace_path, mode="replay", match="fuzzy")
    with pytest.warns(FuzzyMatchWarning, match="similarity"):  # said in the proxy's thread, as in an agent's
        reply = _openai(fuzzy).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "second question about hotel"}]
        )
        assert reply.choices[0].message.content == "Echo: second question about hotels"
        reply = _openai(fuzzy).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "first question about flight"}]
        )
    assert reply.choices[0].message.content == "Echo: first question about flights"
    fuzzy.stop()

    ordered = proxies(trace_path, mode="replay", match="ordered")
    with pytest.warns(ReplayDriftWarning):  # served by position: the recorded first answer
        reply = _openai(ordered).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "second question about hotels"}]
        )
    assert reply.choices[0].message.content == "Echo: first question about flights"
    # Every step it served drifted: another run's answers, which fails the replay (issue 35).
    with pytest.raises(RewindError, match="another run's answers"):
        ordered.stop()


def test_other_wire_formats_match_their_instrumentors(stub: StubServer, upstreams, proxies, tmp_path: Path) -> None:
    """Mistral, Cohere and Gemini through the proxy: the names and requests their instrumentors record."""
    import cohere
    from google import genai

    try:
        from mistralai.client import Mistral  # 2.x
    except ImportError:
        from mistralai import Mistral  # type: ignore[attr-defined,no-redef]

    def run(mistral_url: str, cohere_url: str, gemini_url: str) -> list[Any]:
        m = Mistral(api_key="k", server_url=mistral_url)
        c = cohere.ClientV2(api_key="k", base_url=cohere_url)
        g = genai.Client(api_key="k", http_options={"base_url": gemini_url})
        contents = [{"role": "user", "parts": [{"text": "hi"}]}]
        return [
            m.chat.complete(model="mistral-small", messages=[{"role": "user", "content": "hi"}])
            .choices[0]
            .message.content,
            [
                e.data.choices[0].delta.content
                for e in m.chat.stream(model="mistral-small", messages=[{"role": "user", "content": "hi"}])
            ],
            c.chat(model="command-r", messages=[{"role": "user", "content": "hi"}]).message.content[0].text,
            [e.type for e in c.chat_stream(model="command-r", messages=[{"role": "user", "content": "hi"}])],
            g.models.generate_content(model="gemini-2.0-flash", contents=contents).text,
            [r.text for r in g.models.generate_content_stream(model="gemini-2.0-flash", contents=contents)],
        ]

    sdk_trace, proxy_trace = tmp_path / "sdk.rewind", tmp_path / "proxy.rewind"
    unpatch = rewind.auto_patch("mistral", "cohere", "gemini")
    try:
        with rewind.record(sdk_trace):
            sdk_live = run(stub.mistral_base_url, stub.cohere_base_url, stub.gemini_base_url)
    finally:
        unpatch()
    proxy = proxies(proxy_trace, upstreams=upstreams)
    proxy_live = run(proxy.base_url("mistral"), proxy.base_url("cohere"), proxy.base_url("gemini"))
    proxy.stop()
    assert proxy_live == sdk_live
    expected = [(e.name, e.fingerprint) for e in Trace.open(sdk_trace).events]
    assert [(e.name, e.fingerprint) for e in Trace.open(proxy_trace).events] == expected
    stub.stop()

    replayer = proxies(sdk_trace, mode="replay")  # the SDKs' own trace answers them through the proxy
    assert run(replayer.base_url("mistral"), replayer.base_url("cohere"), replayer.base_url("gemini")) == sdk_live
    replayer.stop()


def test_spans_per_call_like_the_instrumentors(run_python, stub: StubServer, tmp_path: Path) -> None:
    """The application's own TracerProvider (what opentelemetry-instrument sets up) gets a span per call."""
    result = run_python(
        f"""
        import json, openai
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from rewind.proxy import Proxy

        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        trace.set_tracer_provider(provider)
        path = {str(tmp_path / "run.rewind")!r}
        for mode in ("record", "replay"):
            with Proxy(path, mode=mode, upstreams={{"openai": {stub.openai_base_url!r}}}) as proxy:
                client = openai.OpenAI(base_url=proxy.base_url("openai"), api_key="k", max_retries=0)
                client.chat.completions.create(model="gpt-4o-mini", messages=[{{"role": "user", "content": "hi"}}])
        spans = [s for s in memory.get_finished_spans() if "rewind.kind" in s.attributes]
        print(json.dumps([[s.name, s.kind.name, dict(s.attributes)] for s in spans]))
        """
    )
    assert result.returncode == 0, result.stderr
    [(name, kind, attrs), (replay_name, _, replayed)] = json.loads(result.stdout)
    assert (name, kind) == (replay_name, "CLIENT") == ("chat gpt-4o-mini", "CLIENT")
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["rewind.name"] == "openai.chat.completions.create"
    assert attrs["rewind.seq"] == 0 and attrs["rewind.proxy"] is True
    assert attrs["gen_ai.usage.input_tokens"] >= 1
    assert attrs["server.address"] == "127.0.0.1"
    assert replayed["rewind.replayed"] is True and replayed["rewind.replayed_step"] == 0
    assert replayed["rewind.fingerprint"] == attrs["rewind.fingerprint"]


def test_loopback_by_default_and_bad_upstreams(trace_path: Path) -> None:
    with Proxy(str(trace_path)) as proxy:
        assert proxy.host == "127.0.0.1"
        assert proxy._httpd is not None and proxy._httpd.server_address[0] == "127.0.0.1"
    with pytest.raises(UpstreamConfigError, match="provider=URL"):
        Proxy(str(trace_path), upstreams=["openai"])
    with pytest.raises(UpstreamConfigError, match="unknown provider 'opneai'"):
        Proxy(str(trace_path), upstreams=["opneai=http://x"])
    with pytest.raises(UpstreamConfigError, match="http:// or https://"):
        Proxy(str(trace_path), upstreams=["openai=ftp://x"])


def test_unreachable_upstream_is_a_recorded_step_and_a_502(proxies, trace_path: Path) -> None:
    proxy = proxies(trace_path, upstreams={"openai": "http://127.0.0.1:9/v1"})
    with pytest.raises(openai.InternalServerError) as caught:
        _openai(proxy).chat.completions.create(**CHAT)
    assert caught.value.status_code == 502 and "unreachable" in str(caught.value)
    proxy.stop()
    [event] = Trace.open(trace_path).events
    assert not event.ok and event.error["qualname"] == "ConnectionRefusedError"
    replayer = proxies(trace_path, mode="replay")
    with pytest.raises(openai.InternalServerError, match=r"recorded builtins\.ConnectionRefusedError"):
        _openai(replayer).chat.completions.create(**CHAT)
    replayer.stop()


def test_curl_through_the_cli(stub: StubServer, tmp_path: Path) -> None:
    """`rewind record --proxy` / `rewind replay --proxy` around curl (a non-Python client)."""
    trace = tmp_path / "curl.rewind"
    script = (
        'curl -sS --fail-with-body "$OPENAI_BASE_URL/chat/completions" -H "content-type: application/json" '
        '-H "Authorization: Bearer sk-curl-SECRET" -d "$BODY"'
    )
    body = json.dumps({**CHAT, "stream": True})
    rewind_cli = [_rewind_cli()]
    env = {"BODY": body, "PATH": "/usr/bin:/bin"}
    recorded = subprocess.run(
        [
            *rewind_cli,
            "record",
            "--proxy",
            str(trace),
            "--upstream",
            f"openai={stub.openai_base_url}",
            "--",
            "sh",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout.endswith("data: [DONE]\n\n")
    assert "recorded 1 step" in recorded.stderr and "sk-curl-SECRET" not in trace.read_text()
    stub.stop()
    replayed = subprocess.run(
        [
            *rewind_cli,
            "replay",
            "--proxy",
            str(trace),
            "--",
            "sh",
            "-c",
            script.replace('-H "Authorization: Bearer sk-curl-SECRET" ', ""),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout
    diverged = subprocess.run(
        [*rewind_cli, "replay", "--proxy", str(trace), "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "BODY": json.dumps(CHAT)},
    )
    assert diverged.returncode == 22  # curl --fail-with-body: the HTTP error reached the client
    assert "rewind_divergence" in diverged.stdout
    assert "replay diverged at step 0" in diverged.stderr


def _rewind_cli() -> str:
    return str(Path(sys.executable).with_name("rewind"))


def test_rewind_proxy_command_runs_until_interrupted(stub: StubServer, tmp_path: Path) -> None:
    trace = tmp_path / "cli.rewind"
    server = subprocess.Popen(
        [_rewind_cli(), "proxy", "--record", str(trace), "--port", "0", "--upstream", f"openai={stub.openai_base_url}"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        first = server.stderr.readline()
        assert first.startswith(f"rewind proxy recording to {trace}, listening on http://127.0.0.1:")
        url = first.rsplit(" ", 1)[1].strip()
        reply = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0).chat.completions.create(**CHAT)
        assert reply.choices[0].message.content == "Echo: hi"
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    assert "recorded step 0 openai.chat.completions.create ok" in err
    assert f"rewind: recorded 1 step to {trace}" in err
    assert [e.name for e in Trace.open(trace).events] == ["openai.chat.completions.create"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "pass exactly one of --record TRACE or --replay TRACE"),
        (["--record", "x.rewind", "--upstream", "openai"], "--upstream takes provider=URL"),
        (["--replay", "missing.rewind"], "missing.rewind: no such trace file"),
    ],
)
def test_rewind_proxy_bad_usage(args: list[str], message: str, tmp_path: Path) -> None:
    done = subprocess.run([_rewind_cli(), "proxy", *args], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def _stream_agent(client: openai.OpenAI, claude: anthropic.Anthropic) -> list[Any]:
    """A chat call, an Anthropic stream, then two streams the provider ends with an error event."""
    out: list[Any] = [client.chat.completions.create(**CHAT).choices[0].message.content]
    with claude.messages.stream(model="claude-stub", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as s:
        out.append("".join(s.text_stream))
    try:
        with claude.messages.stream(
            model="claude-stub", max_tokens=64, messages=[{"role": "user", "content": "again"}]
        ) as s:
            out.append([t for t in s.text_stream])
    except anthropic.APIStatusError as exc:
        out.append((type(exc).__name__, exc.body))
    try:
        out.append([e.type for e in client.responses.create(model="m", input="x", stream=True)])
    except openai.APIError as exc:
        out.append((type(exc).__name__, exc.message))
    return out


_IN_BAND = (
    "Echo: hi",
    "Echo: hi",
    {"text": "one two three", "stream_error_after": 1, "error": {"status": 529, "type": "overloaded_error"}},
    {"text": "one two three", "stream_error_after": 1, "error": {"status": 500}},
)


def test_proxy_trace_is_a_trace_like_any_other(
    stub: StubServer, upstreams, proxies, tmp_path: Path, patched_sdks
) -> None:
    """Recorded through the proxy or by the instrumentors, one run is one trace: the same steps (stream
    chunks and mid-stream errors included), so diff, check, show, report and mutate treat both alike."""
    by_sdk, by_proxy = tmp_path / "sdk.rewind", tmp_path / "proxy.rewind"
    stub.add_script(*_IN_BAND)
    with rewind.record(by_sdk):
        sdk_live = _stream_agent(
            openai.OpenAI(base_url=stub.openai_base_url, api_key="k", max_retries=0),
            anthropic.Anthropic(base_url=stub.anthropic_base_url, api_key="k", max_retries=0),
        )
    stub.reset()
    stub.add_script(*_IN_BAND)
    proxy = proxies(by_proxy, upstreams=upstreams)
    assert _stream_agent(_openai(proxy), _anthropic(proxy)) == sdk_live
    proxy.stop()
    stub.stop()
    assert sdk_live[2][0] == "APIStatusError" and sdk_live[3][0] == "APIError"

    sdk_events, proxy_events = Trace.open(by_sdk).events, Trace.open(by_proxy).events
    for a, b in zip(sdk_events, proxy_events):
        assert (a.name, a.fingerprint, a.ok, a.response) == (b.name, b.fingerprint, b.ok, b.response)
        assert a.get("stream") == b.get("stream")
        if not a.ok:
            assert {k: a.error[k] for k in ("type", "message", "body")} == {
                k: b.error[k] for k in ("type", "message", "body")
            }

    # Each trace answers the other side: the SDK's through the proxy, the proxy's in the SDK.
    replayer = proxies(by_sdk, mode="replay")
    with rewind.replay(by_proxy):
        assert _stream_agent(openai.OpenAI(api_key="k", max_retries=0), anthropic.Anthropic(api_key="k")) == sdk_live
    unpatched = rewind.auto_patch("openai", "anthropic")  # nested patch: count up, then undo it below
    unpatched()
    assert _stream_agent(_openai(replayer), _anthropic(replayer)) == sdk_live
    replayer.stop()

    cli = _rewind_cli()
    diff = subprocess.run([cli, "diff", str(by_sdk), str(by_proxy)], capture_output=True, text=True, timeout=60)
    assert diff.returncode == 0, diff.stdout
    check = subprocess.run([cli, "check", "--strict", str(by_proxy)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout
    show = subprocess.run([cli, "show", "--no-tui", str(by_proxy)], capture_output=True, text=True, timeout=60)
    assert show.returncode == 0 and "anthropic.messages.create" in show.stdout
    report = subprocess.run(
        [cli, "report", str(by_proxy), "-o", str(tmp_path / "run.html")], capture_output=True, text=True, timeout=60
    )
    assert report.returncode == 0 and "openai.responses.create" in (tmp_path / "run.html").read_text()

    agent = tmp_path / "agent.py"
    agent.write_text(
        "import openai\n"
        "client = openai.OpenAI(api_key='k', max_retries=0)\n"
        "try:\n"
        "    print(client.chat.completions.create(model='gpt-4o-mini', "
        "messages=[{'role': 'user', 'content': 'hi'}]).choices[0].message.content)\n"
        "except openai.RateLimitError:\n"
        "    print('rate limited')\n"
    )
    mutate = subprocess.run(
        [cli, "mutate", str(by_proxy), "-f", "rate_limit", "-s", "0", "--json", "--", sys.executable, str(agent)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert mutate.returncode == 0, mutate.stderr
    [run] = json.loads(mutate.stdout)["results"]
    assert (run["step"], run["fault"], run["outcome"]) == (0, "rate_limit", "different")


def _chat_stream(client: openai.OpenAI) -> list[Any]:
    got: list[Any] = []
    try:
        for chunk in client.chat.completions.create(**CHAT, stream=True):
            got.append(chunk.choices[0].delta.content if chunk.choices else None)
    except openai.APIError as exc:
        got.append((type(exc).__name__, exc.message))
    return got


def test_a_stream_that_fails_midway(stub: StubServer, upstreams, proxies, tmp_path: Path, patched_sdks) -> None:
    """OpenAI's error payload in a chat stream: the same failed step both ways, raised at the same chunk."""
    by_sdk, by_proxy = tmp_path / "sdk.rewind", tmp_path / "proxy.rewind"
    failing = {"text": "one two three four", "stream_error_after": 2}
    stub.add_script(failing)
    with rewind.record(by_sdk):
        live = _chat_stream(openai.OpenAI(base_url=stub.openai_base_url, api_key="k", max_retries=0))
    stub.reset()  # ids count from 1 again
    stub.add_script(failing)
    proxy = proxies(by_proxy, upstreams=upstreams)
    assert _chat_stream(_openai(proxy)) == live
    proxy.stop()
    assert live[:3] == ["", "one", " two"] and live[3][0] == "APIError"
    [a], [b] = Trace.open(by_sdk).events, Trace.open(by_proxy).events
    assert (a.ok, b.ok) == (False, False) and a.get("stream") == b.get("stream")
    assert {k: a.error[k] for k in ("type", "message", "body")} == {k: b.error[k] for k in ("type", "message", "body")}
    with rewind.replay(by_proxy):
        assert _chat_stream(openai.OpenAI(api_key="k", max_retries=0)) == live
    replayer = proxies(by_sdk, mode="replay")
    unpatch = rewind.auto_patch("openai")
    unpatch()  # undoes only this nesting level: the fixture's patch stays, and no session is open here
    assert _chat_stream(_openai(replayer)) == live
    replayer.stop()


def test_a_stream_cut_short_replays_cut_short(stub: StubServer, upstreams, proxies, trace_path: Path) -> None:
    """A recorded stream that stopped short (the connection dropped) ends the same way on replay:
    chunked, without its last chunk, so the agent's HTTP client reports an incomplete body."""
    from rewind.storage.trace import Event

    chunk = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "par"}}]}
    request = {**CHAT, "stream": True}
    proxy = proxies(trace_path, upstreams=upstreams)  # record one real call for the fingerprint
    _post(proxy.base_url("openai") + "/chat/completions", request)
    proxy.stop()
    [recorded] = Trace.open(trace_path).events
    cut = Event(
        0,
        "llm",
        recorded.name,
        recorded.fingerprint,
        recorded.request,
        None,
        {
            "type": "httpx.RemoteProtocolError",
            "module": "httpx",
            "qualname": "RemoteProtocolError",
            "message": "peer closed",
        },
        extra={"stream": {"chunks": [chunk], "truncated": True}},
    )
    writer = rewind.trace.TraceWriter(str(trace_path), rewind.trace.new_header(None))
    writer.write(cut)
    writer.close()

    replayer = proxies(trace_path, mode="replay")
    connection = http.client.HTTPConnection("127.0.0.1", replayer.port)
    connection.request("POST", "/v1/chat/completions", json.dumps(request), {"content-type": "application/json"})
    response = connection.getresponse()
    assert response.getheader("transfer-encoding") == "chunked"
    with pytest.raises(http.client.IncompleteRead) as caught:
        response.read()
    assert caught.value.partial == b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"
    connection.close()
    replayer.stop()


def test_endpoints_it_does_not_record(stub: StubServer, upstreams, proxies, trace_path: Path) -> None:
    proxy = proxies(trace_path, upstreams=upstreams)
    models = openai.OpenAI(base_url=proxy.base_url("openai"), api_key="k", max_retries=0).models.list()
    assert models.data  # passed through to the provider
    proxy.stop()
    assert Trace.open(trace_path).events == []
    assert any("passed GET /v1/models through to openai unrecorded" in line for line in proxy.lines)  # type: ignore[attr-defined]
    replayer = proxies(trace_path, mode="replay")
    with pytest.raises(openai.NotFoundError, match="not an endpoint the proxy records"):
        openai.OpenAI(base_url=replayer.base_url("openai"), api_key="k", max_retries=0).models.list()
    replayer.stop()


def test_record_proxy_options_redact_meta_externalize(stub: StubServer, tmp_path: Path) -> None:
    """`rewind record --proxy` takes the session options `rewind record` takes."""
    (tmp_path / "scrub.py").write_text(
        "import json\ndef scrub(payload):\n    return json.loads(json.dumps(payload).replace('4111-1111', '<card>'))\n"
    )
    trace = tmp_path / "redacted.rewind"
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "card 4111-1111 " + "x" * 300}]})
    script = 'curl -sS "$OPENAI_BASE_URL/chat/completions" -H "content-type: application/json" -d "$BODY"'
    options = ["--redact", "scrub:scrub", "--meta", '{"ticket": "T-33"}', "--externalize", "100"]
    options += ["--upstream", f"openai={stub.openai_base_url}"]
    done = subprocess.run(
        [_rewind_cli(), "record", "--proxy", str(trace), *options, "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"BODY": body, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "4111-1111" in done.stdout  # the agent got the live answer ...
    text = trace.read_text()
    assert "4111-1111" not in text and "T-33" in text  # ... the trace holds the scrubbed one
    assert (tmp_path / "redacted.rewind.blobs").is_dir()
    stub.stop()
    # The identity is the unredacted request, so the same agent replays.
    replayed = subprocess.run(
        [_rewind_cli(), "replay", "--proxy", str(trace), "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={"BODY": body, "PATH": "/usr/bin:/bin"},
    )
    assert replayed.returncode == 0, replayed.stderr
    assert "<card>" in replayed.stdout


def test_a_failed_rerecording_keeps_the_previous_trace(stub: StubServer, tmp_path: Path) -> None:
    trace = tmp_path / "kept.rewind"
    body = json.dumps(CHAT)
    curl = 'curl -sS "$OPENAI_BASE_URL/chat/completions" -H "content-type: application/json" -d "$BODY"'
    env = {"BODY": body, "PATH": "/usr/bin:/bin"}
    record = [_rewind_cli(), "record", "--proxy", str(trace), "--upstream", f"openai={stub.openai_base_url}", "--"]
    assert subprocess.run([*record, "sh", "-c", curl], capture_output=True, timeout=60, env=env).returncode == 0
    first = trace.read_bytes()
    failed = subprocess.run(
        [*record, "sh", "-c", f"{curl} && {curl} && exit 3"], capture_output=True, text=True, timeout=60, env=env
    )
    assert failed.returncode == 3
    assert "keeps its previous recording" in failed.stderr
    assert trace.read_bytes() == first
    assert len(Trace.open(tmp_path / "kept.failed.rewind").events) == 2


def test_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [_rewind_cli(), "proxy", "--record", str(tmp_path / "x.rewind"), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.rewind").exists()


def test_stop_waits_for_steps_still_being_written(stub: StubServer, upstreams, trace_path: Path) -> None:
    """The agent gets its answer before the step is written; stopping right after must not lose it."""
    import time

    def slow(payload: Any) -> Any:
        time.sleep(0.5)  # a redactor (or an SDK import for an error record) that takes its time
        return payload

    with Proxy(str(trace_path), upstreams=upstreams, redact=slow) as proxy:
        assert _openai(proxy).chat.completions.create(**CHAT).choices[0].message.content == "Echo: hi"
    assert [e.name for e in Trace.open(trace_path).events] == ["openai.chat.completions.create"]
