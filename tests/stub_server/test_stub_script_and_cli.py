"""Script semantics (queue, conversation, restart), the default brain across tool turns, and CLI errors."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import types

from rewind.stub_server import StubServer

REPO = Path(__file__).resolve().parents[2]
SCRIPT = [{"tool_calls": [{"name": "lookup", "arguments": {"id": 7}}]}, "All done."]
LOOKUP: Any = {
    "type": "function",
    "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}}},
}


def _tool(name: str, arg: str) -> Any:
    params = {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}
    return {"type": "function", "function": {"name": name, "parameters": params}}


def _run_openai_agent(base_url: str, question: str, tools: list[Any], results: dict[str, str]) -> list[Any]:
    """A minimal tool loop: call tools until the model answers in words. Returns every answer."""
    client = openai.OpenAI(base_url=base_url, api_key="stub", max_retries=0, timeout=10)
    messages: list[Any] = [{"role": "user", "content": question}]
    answers = []
    for _ in range(6):
        message = client.chat.completions.create(model="m", messages=messages, tools=tools).choices[0].message
        answers.append(message)
        if not message.tool_calls:
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            assert call.type == "function"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": results[call.function.name]})
    client.close()
    return answers


# --------------------------------------------------------------------------- script modes


def test_queue_mode_is_used_up_once_and_restart_queues_it_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rewind.stub_server")
    with StubServer(script=SCRIPT) as server:
        first = _run_openai_agent(server.openai_base_url, "go", [LOOKUP], {"lookup": "found"})
        assert [a.content for a in first] == [None, "All done."]
        assert server.script_remaining == 0
        # Used up: a second run gets the default brain, and the log says so.
        assert any("script used up after 2 turns" in r.getMessage() for r in caplog.records)
        second = _run_openai_agent(server.openai_base_url, "go", [LOOKUP], {"lookup": "found"})
        assert second[-1].content == "Based on the tool result: found"

        restarted = httpx.post(server.url + "/_stub/restart").json()
        assert restarted == {"status": "restarted", "script_turns": 2}
        assert server.request_count == 0
        third = _run_openai_agent(server.openai_base_url, "go", [LOOKUP], {"lookup": "found"})
        assert [a.content for a in third] == [None, "All done."]
        assert third[0].tool_calls[0].id == "call_stub_1"  # ids restart too

        server.add_script("added later")
        server.restart()
        assert server.script_remaining == 3


def test_conversation_mode_replays_the_script_for_every_conversation() -> None:
    with StubServer(script=SCRIPT, script_mode="conversation") as server:
        for _ in range(3):
            answers = _run_openai_agent(server.openai_base_url, "go", [LOOKUP], {"lookup": "found"})
            assert answers[0].tool_calls[0].function.name == "lookup"
            assert [a.content for a in answers] == [None, "All done."]
        assert server.script_remaining == 2
        # Past the script's end the default brain answers.
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="stub", max_retries=0)
        long = [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "1"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": "2"},
            {"role": "user", "content": "c"},
        ]
        assert client.chat.completions.create(model="m", messages=long).choices[0].message.content == "Echo: c"


def test_conversation_mode_counts_answers_in_each_wire_format() -> None:
    with StubServer(script=["first", "second"], script_mode="conversation") as server:
        claude = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="stub", max_retries=0)
        history: list[Any] = [{"role": "user", "content": "hi"}]
        one = claude.messages.create(model="c", max_tokens=32, messages=history)
        history += [{"role": "assistant", "content": one.content}, {"role": "user", "content": "more"}]
        two = claude.messages.create(model="c", max_tokens=32, messages=history)
        assert [one.content[0].text, two.content[0].text] == ["first", "second"]  # type: ignore[union-attr]

        gemini = genai.Client(api_key="stub", http_options={"base_url": server.gemini_base_url})
        chat = gemini.chats.create(model="gemini-2.5-flash")
        assert [chat.send_message("hi").text, chat.send_message("more").text] == ["first", "second"]

        # Parallel function calls are separate Responses items but one model answer.
        oai = openai.OpenAI(base_url=server.openai_base_url, api_key="stub", max_retries=0)
        items: list[Any] = [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
            {"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "1"},
            {"type": "function_call_output", "call_id": "b", "output": "2"},
        ]
        assert oai.responses.create(model="m", input=items).output_text == "second"


def test_script_mode_is_checked() -> None:
    with pytest.raises(ValueError, match="script_mode"):
        StubServer(script_mode="loop")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the default brain across turns


def test_default_brain_calls_each_mentioned_tool_in_turn_then_answers() -> None:
    tools = [_tool("search_hotels", "city"), _tool("get_weather", "city"), _tool("send_email", "to")]
    with StubServer() as server:
        answers = _run_openai_agent(
            server.openai_base_url,
            "What is the weather in city=Paris, and find hotels there?",
            tools,
            {"get_weather": "sunny", "search_hotels": "Hotel Lutetia", "send_email": "sent"},
        )
    calls = [(c.function.name, json.loads(c.function.arguments)) for a in answers for c in a.tool_calls or []]
    # In the order the user asked for them; send_email was not asked for.
    assert calls == [("get_weather", {"city": "Paris"}), ("search_hotels", {"city": "Paris"})]
    assert answers[-1].content == "Based on the tool result: sunny; Hotel Lutetia"


def test_default_brain_multi_tool_in_anthropic_and_gemini() -> None:
    with StubServer() as server:
        claude = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="stub", max_retries=0)
        tools: Any = [
            {"name": n, "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}
            for n in ("lookupOrder", "refund_payment")
        ]
        history: list[Any] = [{"role": "user", "content": "Look up order q=42 and refund the payment"}]
        names = []
        for _ in range(4):
            reply = claude.messages.create(model="c", max_tokens=64, messages=history, tools=tools)
            uses = [b for b in reply.content if b.type == "tool_use"]
            if not uses:
                break
            names += [u.name for u in uses]
            history.append({"role": "assistant", "content": reply.content})
            results = [{"type": "tool_result", "tool_use_id": u.id, "content": f"{u.name} ok"} for u in uses]
            history.append({"role": "user", "content": results})
        assert names == ["lookupOrder", "refund_payment"]
        assert reply.content[0].text == "Based on the tool result: lookupOrder ok; refund_payment ok"  # type: ignore[union-attr]

        ran: list[str] = []

        def get_weather(city: str) -> str:
            """Weather for a city."""
            ran.append("weather")
            return "sunny"

        def book_restaurant(city: str) -> str:
            """Book a table."""
            ran.append("book")
            return "booked"

        gemini = genai.Client(api_key="stub", http_options={"base_url": server.gemini_base_url})
        chat = gemini.chats.create(
            model="gemini-2.5-flash", config=types.GenerateContentConfig(tools=[get_weather, book_restaurant])
        )
        answer = chat.send_message("Check the weather in city=Rome, then book a restaurant")
        assert ran == ["weather", "book"]
        assert answer.text == "Based on the tool result: sunny; booked"


# --------------------------------------------------------------------------- the CLI


def _cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewind.stub_server", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rewind stub server: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_cli_missing_and_bad_scripts_are_one_line_errors(tmp_path: Path) -> None:
    _one_line_error(_cli("--port", "0", "--script", str(tmp_path / "nope.json")), "script file not found", "nope.json")

    broken = tmp_path / "broken.json"
    broken.write_text('[{"text": "a"},\n')
    _one_line_error(_cli("--port", "0", "--script", str(broken)), "not valid JSON", "line 2")

    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps(["fine", {"txt": "typo"}]))
    _one_line_error(_cli("--port", "0", "--script", str(typo)), "turn 2", "unknown keys", "txt")

    mapping = tmp_path / "mapping.json"
    mapping.write_text('{"text": "a"}')
    _one_line_error(_cli("--port", "0", "--script", str(mapping)), "JSON list of turns", "JSON object")


def test_cli_port_in_use_is_a_one_line_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        _one_line_error(_cli("--port", str(port)), f"port {port}", "already in use", "--port 0")


@pytest.fixture
def cli_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rewind.stub_server", "--port", "0", "--script", str(script), *request.param],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None
        banner = []
        while not banner or not banner[-1].startswith("Press Ctrl+C"):
            line = proc.stdout.readline()
            assert line, "the stub server exited before it was ready"
            banner.append(line)
        url = banner[0].split()[-1]
        assert any("Script: 2 turns" in line for line in banner)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("cli_server", [[]], indirect=True)
def test_cli_defaults_to_conversation_mode_so_every_run_gets_the_script(cli_server: tuple[str, Any]) -> None:
    url, _proc = cli_server
    for _ in range(2):
        answers = _run_openai_agent(url + "/v1", "go", [LOOKUP], {"lookup": "found"})
        assert [a.content for a in answers] == [None, "All done."]


@pytest.mark.parametrize("cli_server", [["--script-mode", "queue"]], indirect=True)
def test_cli_queue_mode_says_when_used_up_and_restarts(cli_server: tuple[str, Any]) -> None:
    url, proc = cli_server
    assert [a.content for a in _run_openai_agent(url + "/v1", "go", [LOOKUP], {"lookup": "x"})] == [None, "All done."]
    again = _run_openai_agent(url + "/v1", "go", [LOOKUP], {"lookup": "x"})
    assert again[-1].content == "Based on the tool result: x"
    httpx.post(url + "/_stub/restart").raise_for_status()
    assert [a.content for a in _run_openai_agent(url + "/v1", "go", [LOOKUP], {"lookup": "x"})] == [None, "All done."]
    proc.terminate()
    _out, err = proc.communicate(timeout=10)
    assert err.count("[rewind-stub] script used up after 2 turns") == 2


def test_default_brain_multi_tool_over_bedrock_converse() -> None:
    import boto3

    spec = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tool_config: Any = {
        "tools": [{"toolSpec": {"name": n, "inputSchema": {"json": spec}}} for n in ("get_weather", "find_hotels")]
    }
    with StubServer() as server:
        client = boto3.client(
            "bedrock-runtime",
            endpoint_url=server.bedrock_endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="stub",
            aws_secret_access_key="stub",
        )
        messages: list[Any] = [{"role": "user", "content": [{"text": "weather in city=Oslo and hotels too"}]}]
        names = []
        for _ in range(4):
            reply = client.converse(modelId="anthropic.claude-stub", messages=messages, toolConfig=tool_config)
            message = reply["output"]["message"]
            uses = [block["toolUse"] for block in message["content"] if "toolUse" in block]
            if not uses:
                break
            names += [use["name"] for use in uses]
            messages.append(message)
            results = [
                {"toolResult": {"toolUseId": u["toolUseId"], "content": [{"text": f"{u['name']} ok"}]}} for u in uses
            ]
            messages.append({"role": "user", "content": results})
        assert names == ["get_weather", "find_hotels"]
        assert message["content"][0]["text"] == "Based on the tool result: get_weather ok; find_hotels ok"
