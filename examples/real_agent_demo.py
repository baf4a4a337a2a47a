"""A real tool-calling agent on the real ``openai`` SDK: record, kill the server, replay, diff.

The agent is ordinary OpenAI code (chat completions with tools, a loop that runs the
tool calls the model asks for). ``rewind.patch_openai()`` captures it with zero code
changes. By default everything runs offline against rewind's bundled stub model server:

    python examples/real_agent_demo.py

1. record a run against the server;
2. stop the server and replay the run from the trace alone (no network, no key);
3. record a second run in which the "model" regressed, and let ``rewind.diff_traces``
   point at the step where the two runs diverged.

Point it at a real endpoint instead (Ollama, vLLM, OpenAI …) with ``BASE_URL``,
``MODEL`` and ``OPENAI_API_KEY``; step 3 then needs no regression to be interesting,
since a live model rarely answers the same way twice.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

try:
    import openai
except ImportError:
    sys.exit("This demo needs the openai SDK: pip install openai")

import rewind
from rewind.inspection.diff import diff_traces, render_text
from rewind.stub_server import StubServer

MODEL = os.environ.get("MODEL", "gpt-4o-mini")
QUESTION = "Should I pack an umbrella for Paris and Tokyo tomorrow?"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Tomorrow's forecast for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
FORECASTS = {"Paris": {"rain_mm": 6, "high_c": 17}, "Tokyo": {"rain_mm": 0, "high_c": 24}}

# What the stub "model" answers, turn by turn (ignored when BASE_URL points elsewhere).
GOOD_SCRIPT: list[Any] = [
    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}},
                    {"name": "get_weather", "arguments": {"city": "Tokyo"}}]},
    "Pack an umbrella for Paris (6 mm of rain expected); Tokyo will be dry and warm.",
]
REGRESSED_SCRIPT: list[Any] = [
    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},  # forgot Tokyo
    "No umbrella needed anywhere.",
]


@rewind.tool
def get_weather(city: str) -> dict[str, Any]:
    """The agent's tool; a real one would call a weather API. Recorded too."""
    return FORECASTS.get(city, {"rain_mm": None, "high_c": None})


def run_agent(client: openai.OpenAI) -> str:
    """A plain OpenAI tool-calling loop: nothing in it knows about rewind."""
    messages: list[Any] = [
        {"role": "system", "content": "You are a concise travel assistant. Use tools for forecasts."},
        {"role": "user", "content": QUESTION},
    ]
    for _ in range(5):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message)
        for call in message.tool_calls:
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return "(gave up after 5 turns)"


def _client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "stub"), max_retries=0)


def _record(path: Path, script: list[Any]) -> tuple[str, str]:
    """Record one run; returns its answer and the base URL it talked to (now shut down)."""
    external = os.environ.get("BASE_URL")
    if external:
        with rewind.record(path, meta={"demo": "real_agent"}):
            return run_agent(_client(external)), external
    with StubServer(script=script) as server, rewind.record(path, meta={"demo": "real_agent"}):
        return run_agent(_client(server.openai_base_url)), server.openai_base_url


def main() -> int:
    unpatch = rewind.patch_openai()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            good, regressed = Path(tmp) / "good.rewind", Path(tmp) / "regressed.rewind"

            print("1. record a live run")
            answer, base_url = _record(good, GOOD_SCRIPT)
            print(f"   answer: {answer}")
            print(f"   {len(rewind.Trace.load(good))} steps in {good.name}")

            print("2. the server is gone: replay offline from the trace")
            # Same client setup as the recording; any call that went live would now fail to connect.
            with rewind.replay(good, require_full_consumption=True):
                replayed = run_agent(_client(base_url))
            print(f"   answer: {replayed}")
            assert replayed == answer, "the replay must reproduce the run exactly"

            print("3. a regressed run, and where it diverged")
            _record(regressed, REGRESSED_SCRIPT)
            diff = diff_traces(good, regressed)
            print(render_text(diff, context=1))
            first = diff.first_divergence
            if first is not None:
                print(f"   first divergence: {first.explain()}")
    finally:
        unpatch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
