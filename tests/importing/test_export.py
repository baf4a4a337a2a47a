"""`rewind export`: a trace as OTLP JSON lines or sent over OTLP/HTTP, and back by `rewind import`.

The round trip is proven by the step digests (the sha256 of each step's trace line):
export, then import what was written or what a real OTLP/HTTP receiver on loopback got,
gives back every step byte for byte. A run recorded over the real OpenAI SDK is then
replayed from the imported trace with its model server gone.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import rewind
from rewind.cli import cli
from rewind.importing import export as export_module
from rewind.stub_server import StubServer

sys.path.insert(0, str(Path(__file__).parent.parent))
from otlp_receiver import OTLPReceiver

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"


def digests(path: Path) -> list[str]:
    return [hashlib.sha256(event.to_line()).hexdigest() for event in rewind.Trace.load(path).events]


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def spans_of(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().split("\n")[:-1]:
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                out.extend(scope["spans"])
    return out


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


@pytest.mark.parametrize("name", ["openai.rewind", "anthropic.rewind", "decorators.rewind.gz", "blobs.rewind"])
def test_export_then_import_gives_back_the_same_trace(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_module, "BATCH", 2)  # several requests, as a collector's file holds them
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "64")  # the user's limit never cuts an export
    source, spans, back = CORPUS / name, tmp_path / "spans.jsonl", tmp_path / "back.rewind"
    result = run("export", source, "-o", spans)
    assert result.exit_code == 0, result.output
    assert f"exported {len(digests(source))} step(s)" in result.output
    assert len(spans.read_text().splitlines()) > 1
    imported = run("import", spans, "-o", back)
    assert imported.exit_code == 0, imported.output
    assert digests(back) == digests(source)
    assert run("check", back).exit_code == 0


def test_spans_speak_genai_under_one_run_span(tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    assert run("export", CORPUS / "openai.rewind", "-o", spans, "--service", "ci-agent").exit_code == 0
    document = json.loads(spans.read_text().split("\n")[0])
    resource = {a["key"]: a["value"]["stringValue"] for a in document["resourceSpans"][0]["resource"]["attributes"]}
    assert resource["service.name"] == "ci-agent"
    found = spans_of(spans)
    [root] = [s for s in found if "parentSpanId" not in s]
    assert root["name"] == "invoke_agent" and attrs(root)["gen_ai.operation.name"] == "invoke_agent"
    steps = [s for s in found if s is not root]
    assert {s["parentSpanId"] for s in steps} == {root["spanId"]}
    assert {s["traceId"] for s in found} == {root["traceId"]}
    first = attrs(min(steps, key=lambda s: int(attrs(s)["rewind.seq"])))
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "gpt-4o-mini"
    assert json.loads(first["gen_ai.input.messages"])[0]["parts"]
    assert json.loads(first["gen_ai.output.messages"])[0]["role"] == "assistant"
    assert hashlib.sha256(first["rewind.event"].encode()).hexdigest() == first["rewind.event.sha256"]
    assert all(int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) > 0 for s in found)


def test_the_same_trace_exports_with_the_same_ids(tmp_path: Path) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    for path in (one, two):
        assert run("export", CORPUS / "decorators.rewind", "-o", path).exit_code == 0
    assert [(s["traceId"], s["spanId"]) for s in spans_of(one)] == [(s["traceId"], s["spanId"]) for s in spans_of(two)]


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_send_to_an_otlp_http_receiver_and_import_what_it_got(protocol: str, tmp_path: Path) -> None:
    source = CORPUS / "anthropic.rewind"
    with OTLPReceiver() as receiver:
        result = run("export", source, "--endpoint", receiver.url, "--protocol", protocol, "--header", "x-team=agents")
    assert result.exit_code == 0, result.output
    [got] = receiver.received
    assert got.path == "/v1/traces"  # a bare host:port gets the traces path
    assert got.headers["x-team"] == "agents"
    assert got.content_type == ("application/x-protobuf" if protocol == "http/protobuf" else "application/json")
    body = tmp_path / ("body.pb" if protocol == "http/protobuf" else "body.json")
    body.write_bytes(got.body)
    back = tmp_path / "back.rewind"
    assert run("import", body, "-o", back).exit_code == 0
    assert digests(back) == digests(source)


def test_a_recorded_run_exported_imported_and_replayed_offline(tmp_path: Path, stub: StubServer) -> None:
    import openai

    def agent(client: Any) -> str:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        return str(reply.choices[0].message.content)

    local, back = tmp_path / "local.rewind", tmp_path / "back.rewind"
    unpatch = rewind.patch_openai()
    try:
        with openai.OpenAI(base_url=stub.openai_base_url, api_key="sk-test", max_retries=0) as client:
            with rewind.record(local):
                answer = agent(client)
            with OTLPReceiver() as receiver:
                assert run("export", local, "--endpoint", receiver.url + "/v1/traces").exit_code == 0
            (tmp_path / "body.pb").write_bytes(receiver.received[0].body)
            assert run("import", tmp_path / "body.pb", "-o", back).exit_code == 0
            stub.stop()
            with rewind.replay(back, require_full_consumption=True):
                assert agent(client) == answer
    finally:
        unpatch()
    assert digests(back) == digests(local)


# -- bad input: a clear error, nothing half-written -------------------------------------


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_a_refusing_receiver_is_an_error_saying_so(protocol: str) -> None:
    with OTLPReceiver(status=400) as receiver:
        result = run("export", CORPUS / "openai.rewind", "--endpoint", receiver.url, "--protocol", protocol)
    assert result.exit_code == 2
    assert "export failed" in result.output or "HTTP 400" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_nothing_listening_is_an_error(protocol: str) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    result = run(
        "export",
        CORPUS / "openai.rewind",
        "--endpoint",
        f"http://127.0.0.1:{port}",
        "--timeout",
        "1",
        "--protocol",
        protocol,
    )
    assert result.exit_code == 2
    assert f"127.0.0.1:{port}/v1/traces" in result.output


def test_bad_arguments_are_one_line_errors(tmp_path: Path) -> None:
    exists = tmp_path / "spans.jsonl"
    exists.write_text("keep me\n")
    not_a_trace = tmp_path / "notes.txt"
    not_a_trace.write_text("hello\n")
    cases = {
        ("export", CORPUS / "openai.rewind"): "nowhere to export to",
        ("export", CORPUS / "openai.rewind", "-o", exists): "already exists",
        ("export", CORPUS / "openai.rewind", "--endpoint", "ftp://x"): "not an http",
        ("export", CORPUS / "openai.rewind", "--endpoint", "http://h:1", "--header", "novalue"): "NAME=VALUE",
        ("export", not_a_trace, "-o", tmp_path / "out.jsonl"): "not a rewind trace",
        ("export", tmp_path / "missing.rewind", "-o", tmp_path / "out.jsonl"): "missing.rewind",
    }
    for args, message in cases.items():
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
    assert exists.read_text() == "keep me\n"
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("opentelemetry.exporter.otlp.proto.common.trace_encoder", ["-o", "spans.jsonl"]),
        ("opentelemetry.exporter.otlp.proto.http.trace_exporter", ["--endpoint", "http://127.0.0.1:9"]),
    ],
)
def test_without_the_otlp_exporter_installed_the_error_says_what_to_install(
    module: str, args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, module, None)  # import fails as when the package is absent
    result = run("export", CORPUS / "openai.rewind", *args)
    assert result.exit_code == 2
    assert "pip install opentelemetry-exporter-otlp-proto-http" in result.output
    assert not (tmp_path / "spans.jsonl").exists()
