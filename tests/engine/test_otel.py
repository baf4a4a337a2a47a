"""Rewind on real OpenTelemetry pipelines. Each scenario runs in its own process, since
the global tracer provider can be set only once per process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PROGRAM = r"""
import json, os, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

import rewind
from rewind.telemetry import TRACERS

scenario = sys.argv[1] if len(sys.argv) > 1 else os.environ["SCENARIO"]
path = os.environ["TRACE"]
memory = InMemorySpanExporter()
if scenario in ("user_provider", "attribute_limits", "sampled_out"):
    provider = TracerProvider(sampler=ALWAYS_OFF) if scenario == "sampled_out" else TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
elif scenario == "no_otel":
    TRACERS.private_provider().add_span_processor(SimpleSpanProcessor(memory))

BIG = "x" * 10_000

@rewind.llm
def model(**request):
    return {"id": "resp-1", "model": request["model"], "content": BIG,
            "usage": {"prompt_tokens": 11, "completion_tokens": 7}}

@rewind.tool
def search(query):
    return {"hits": [query, BIG]}

def agent():
    with trace.get_tracer("app").start_as_current_span("agent run"):
        a = model(model="gpt-test", messages=[{"role": "user", "content": BIG}])
        b = search("flights")
    return a, b

with rewind.record(path):
    recorded = agent()
with rewind.replay(path) as session:
    replayed = agent()

spans = [
    {"name": s.name, "attributes": dict(s.attributes), "trace_id": s.context.trace_id,
     "parent": s.parent.span_id if s.parent else None, "span_id": s.context.span_id}
    for s in memory.get_finished_spans()
]
print(json.dumps({
    "same": recorded == replayed,
    "cursor": session.cursor,
    "spans": spans,
    "global_is_sdk": isinstance(trace.get_tracer_provider(), TracerProvider),
}))
"""


def run(run_python, trace_path: Path, scenario: str, **env: str) -> dict:
    result = run_python(PROGRAM, env={"SCENARIO": scenario, "TRACE": str(trace_path), **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def file_events(trace_path: Path) -> list[dict]:
    return [json.loads(line) for line in trace_path.read_text().splitlines()[1:]]


def assert_full_payloads(trace_path: Path) -> None:
    events = file_events(trace_path)
    assert len(events) == 2
    assert events[0]["response"]["content"] == "x" * 10_000
    assert events[0]["request"]["messages"][0]["content"] == "x" * 10_000


def test_without_opentelemetry_configured_rewind_uses_its_own_provider(run_python, trace_path: Path) -> None:
    out = run(run_python, trace_path, "no_otel")
    assert out["same"] and out["cursor"] == 2
    assert not out["global_is_sdk"]  # the global provider was never hijacked
    assert_full_payloads(trace_path)
    names = [s["name"] for s in out["spans"]]
    # Each session's steps end inside the run's root span (GenAI invoke_agent), which ends last.
    assert names == ["chat gpt-test", "execute_tool search", "invoke_agent"] * 2


def test_with_the_applications_provider_the_same_spans_reach_its_exporters(run_python, trace_path: Path) -> None:
    out = run(run_python, trace_path, "user_provider")
    assert out["same"] and out["cursor"] == 2
    assert_full_payloads(trace_path)
    spans = out["spans"]
    by_name: dict[str, list[dict]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    recorded_chat, replayed_chat = by_name["chat gpt-test"]
    attrs = recorded_chat["attributes"]
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "gpt-test"
    assert attrs["gen_ai.response.model"] == "gpt-test" and attrs["gen_ai.response.id"] == "resp-1"
    assert attrs["gen_ai.usage.input_tokens"] == 11 and attrs["gen_ai.usage.output_tokens"] == 7
    assert attrs["rewind.kind"] == "llm" and attrs["rewind.seq"] == 0 and attrs["rewind.mode"] == "record"
    assert len(attrs["rewind.fingerprint"]) == 64
    tool = by_name["execute_tool search"][0]["attributes"]
    assert tool["gen_ai.operation.name"] == "execute_tool" and tool["gen_ai.tool.name"] == "search"
    # Replayed spans are marked, carry the recorded step, and sit in the app's trace.
    replayed = replayed_chat["attributes"]
    assert replayed["rewind.replayed"] is True and replayed["rewind.replayed_step"] == 0
    runs = by_name["agent run"]
    assert recorded_chat["parent"] == runs[0]["span_id"] and recorded_chat["trace_id"] == runs[0]["trace_id"]


def test_attribute_limits_never_truncate_the_trace_file(run_python, trace_path: Path) -> None:
    out = run(run_python, trace_path, "attribute_limits", OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT="64")
    assert out["same"] and out["cursor"] == 2
    assert_full_payloads(trace_path)


@pytest.mark.parametrize(("scenario", "env"), [("sampled_out", {}), ("no_otel", {"OTEL_SDK_DISABLED": "true"})])
def test_a_span_nobody_exports_still_leaves_its_event_in_the_file(
    run_python, trace_path: Path, scenario: str, env: dict[str, str]
) -> None:
    out = run(run_python, trace_path, scenario, **env)
    assert out["same"] and out["cursor"] == 2
    assert out["spans"] == []
    assert_full_payloads(trace_path)


UNOBSERVED = r"""
import json, os
import rewind
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rewind.telemetry import TRACERS

@rewind.tool
def search(query):
    return {"hits": [query]}

path = os.environ["TRACE"]
with rewind.record(path):
    search("a")
before = TRACERS.observed()
with rewind.replay(path) as quiet:
    quiet_result = search("a")
memory = InMemorySpanExporter()
TRACERS.private_provider().add_span_processor(SimpleSpanProcessor(memory))
with rewind.replay(path) as watched:
    watched_result = search("a")
print(json.dumps({"before": before, "after": TRACERS.observed(), "same": quiet_result == watched_result,
                  "cursors": [quiet.cursor, watched.cursor],
                  "spans": [dict(s.attributes) for s in memory.get_finished_spans()]}))
"""


def test_a_replay_nobody_observes_builds_no_spans_until_someone_listens(run_python, trace_path: Path) -> None:
    result = run_python(UNOBSERVED, env={"TRACE": str(trace_path)})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["before"] is False and out["after"] is True
    assert out["same"] and out["cursors"] == [1, 1]
    (span,) = [s for s in out["spans"] if "rewind.kind" in s]
    assert span["rewind.replayed"] is True and span["rewind.replayed_step"] == 0
    assert [s["gen_ai.operation.name"] for s in out["spans"]].count("invoke_agent") == 1  # its run's root


UNOBSERVED_RECORD = r"""
import json, os
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import rewind
from rewind.telemetry import TRACERS

seen = []

@rewind.tool
def search(query):
    span = trace.get_current_span()
    context = span.get_span_context()
    seen.append({"query": query, "recording": span.is_recording(), "valid": context.is_valid,
                 "trace_id": context.trace_id, "span_id": context.span_id, "flags": int(context.trace_flags),
                 "state": context.trace_state.to_header()})
    return {"hits": [query]}

remote = trace.NonRecordingSpan(trace.SpanContext(
    0xABC, 0x123, is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
    trace_state=trace.TraceState([("vendor", "v1")])))

def agent():
    search("root")
    with trace.use_span(remote):
        search("child")

with rewind.record(os.environ["TRACE"] + ".quiet"):
    agent()
memory = InMemorySpanExporter()
TRACERS.private_provider().add_span_processor(SimpleSpanProcessor(memory))
with rewind.record(os.environ["TRACE"] + ".watched"):
    agent()
print(json.dumps({"seen": seen, "spans": [s.name for s in memory.get_finished_spans()]}))
"""


def test_a_recording_nobody_observes_leaves_the_current_context_alone(run_python, trace_path: Path) -> None:
    """With no OpenTelemetry configured, a recorded call builds no span, makes nothing
    current and writes its event itself: what the call sees (and an SDK propagates) is the
    caller's own context, not the id of a span no backend will hold. Observed, the call's
    span is current, in the caller's trace."""
    result = run_python(UNOBSERVED_RECORD, env={"TRACE": str(trace_path)})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    quiet_root, quiet_child, watched_root, watched_child = out["seen"]
    assert not quiet_root["recording"] and not quiet_child["recording"]
    assert watched_root["recording"] and watched_child["recording"]  # someone listens: real spans
    assert out["spans"].count("execute_tool search") == 2
    assert not quiet_root["valid"]  # no trace at all, as without rewind
    assert (quiet_child["trace_id"], quiet_child["span_id"], quiet_child["state"]) == (0xABC, 0x123, "vendor=v1")
    assert watched_child["trace_id"] == 0xABC and watched_child["span_id"] != 0x123  # rewind's span, a child
    assert watched_root["valid"] and watched_root["trace_id"] != 0xABC

    def steps(path: Path) -> list[dict]:
        return [{k: v for k, v in e.items() if k not in ("ts", "duration_ms")} for e in file_events(path)]

    quiet_steps = steps(Path(f"{trace_path}.quiet"))
    assert [e["request"] for e in quiet_steps] == [{"query": "root"}, {"query": "child"}]
    assert quiet_steps == steps(Path(f"{trace_path}.watched"))


RUNS = r"""
import json, os
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import rewind

memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)

@rewind.llm
def model(**request):
    return {"content": "ok " + request["q"]}

@rewind.tool
def search(query):
    return [query]

def agent():
    model(q="plan")
    search("flights")
    model(q="answer")

path = os.environ["TRACE"]
with rewind.record(path):
    agent()
with rewind.replay(path):
    agent()
with trace.get_tracer("app").start_as_current_span("app request"):
    with rewind.replay(path):
        agent()
print(json.dumps([
    {"name": s.name, "trace_id": s.context.trace_id, "span_id": s.context.span_id,
     "parent": s.parent.span_id if s.parent else None, "attributes": dict(s.attributes)}
    for s in memory.get_finished_spans()
]))
"""


def test_one_run_is_one_trace(run_python, trace_path: Path) -> None:
    result = run_python(RUNS, env={"TRACE": str(trace_path)})
    assert result.returncode == 0, result.stderr
    spans = json.loads(result.stdout.strip().splitlines()[-1])
    roots = [s for s in spans if s["name"] == "invoke_agent"]
    # Recording and the first replay got a root each; the replay under the app's span did not.
    assert len(roots) == 2
    assert [r["attributes"]["rewind.mode"] for r in roots] == ["record", "replay"]
    assert all(r["parent"] is None and r["attributes"]["gen_ai.operation.name"] == "invoke_agent" for r in roots)
    assert roots[0]["trace_id"] != roots[1]["trace_id"]
    for root in roots:
        steps = [s for s in spans if s["trace_id"] == root["trace_id"] and s is not root]
        assert sorted(s["attributes"]["rewind.kind"] for s in steps) == ["llm", "llm", "tool"]
        assert all(s["parent"] == root["span_id"] for s in steps)  # every step nests under the run
    app = next(s for s in spans if s["name"] == "app request")
    under_app = [s for s in spans if s["trace_id"] == app["trace_id"] and s is not app]
    assert len(under_app) == 3 and all(s["parent"] == app["span_id"] for s in under_app)
