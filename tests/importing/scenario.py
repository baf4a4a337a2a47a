"""One agent run under a third-party GenAI instrumentation, exported, imported, replayed.

The agent is the real ``openai`` (or ``anthropic``) SDK against the stub server: a
tool-calling turn, the tool run by plain code, then the answer streamed. The
instrumentation under test records it with its own TracerProvider/LoggerProvider;
the spans (and log records) are written as the Collector's file exporter writes
them (``otlp_files``). Then ``rewind import`` rebuilds the run and a replay of the same
agent, with the stub server stopped and rewind's own instrumentor patched in, must
give the same answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_files import write_json

import rewind
from rewind.stub_server import StubServer

try:  # renamed in newer SDKs
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter as InMemoryLogs  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older SDKs
    from opentelemetry.sdk._logs.export import InMemoryLogExporter as InMemoryLogs  # type: ignore[attr-defined,no-redef]
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

MODEL = "gpt-4o-mini"
CLAUDE = "claude-3-5-haiku-latest"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather", "parameters": SCHEMA}}]

#: instrument(tracer_provider, logger_provider) -> uninstrument
Instrument = Callable[[TracerProvider, LoggerProvider], Callable[[], None]]


def get_weather(city: str) -> str:
    return json.dumps({"city": city, "temp_c": 21})


def openai_agent(client: Any) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "what is the weather in Paris"},
    ]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0.2)
    call = first.choices[0].message.tool_calls[0]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append(
        {"role": "tool", "tool_call_id": call.id, "content": get_weather(**json.loads(call.function.arguments))}
    )
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True}
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    return f"{call.id} {call.function.name}({call.function.arguments}) -> {text}"


def anthropic_agent(client: Any) -> str:
    tools = [{"name": "get_weather", "description": "The weather", "input_schema": SCHEMA}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "what is the weather in Paris"}]
    first = client.messages.create(model=CLAUDE, max_tokens=200, system="be brief", messages=messages, tools=tools)
    use = next(block for block in first.content if block.type == "tool_use")
    messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]})
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": get_weather(**use.input)}],
        }
    )
    with client.messages.stream(model=CLAUDE, max_tokens=200, system="be brief", messages=messages, tools=tools) as s:
        text = "".join(s.text_stream)
    return f"{use.id} {use.name}({json.dumps(use.input)}) -> {text}"


def openai_client(stub: StubServer) -> Any:
    import openai

    return openai.OpenAI(base_url=stub.openai_base_url, api_key="sk-test-not-exported", max_retries=0)


def anthropic_client(stub: StubServer) -> Any:
    import anthropic

    return anthropic.Anthropic(base_url=stub.anthropic_base_url, api_key="sk-ant-not-exported", max_retries=0)


def record_spans(
    tmp_path: Path, stub: StubServer, instrument: Instrument, *, provider: str = "openai", name: str = "spans.jsonl"
) -> tuple[Path, str]:
    """Run the agent under ``instrument``; return the OTLP JSON file and the agent's answer."""
    spans, logs = InMemorySpanExporter(), InMemoryLogs()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    uninstrument = instrument(tracer_provider, logger_provider)
    try:
        client = openai_client(stub) if provider == "openai" else anthropic_client(stub)
        # The application's span around the run, so its calls are one trace (as in any served request).
        with tracer_provider.get_tracer("weather-app").start_as_current_span("handle weather question"):
            answer = (openai_agent if provider == "openai" else anthropic_agent)(client)
    finally:
        uninstrument()
    path = write_json(tmp_path / name, list(spans.get_finished_spans()), logs=list(logs.get_finished_logs()))
    return path, answer


def replay_answer(trace: Path, stub: StubServer, *, provider: str = "openai") -> str:
    """The agent replayed from ``trace`` with the model server stopped."""
    stub.stop()
    unpatch = rewind.patch_openai() if provider == "openai" else rewind.patch_anthropic()
    try:
        client = openai_client(stub) if provider == "openai" else anthropic_client(stub)
        with rewind.replay(trace, require_full_consumption=True):
            return (openai_agent if provider == "openai" else anthropic_agent)(client)
    finally:
        unpatch()
