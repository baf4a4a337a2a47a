"""Reading a tool-calling run: ``show -v`` leads with the newest message; the filter sees everything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rewind
from rewind.cli.tui import Browser

SYSTEM = "You are a travel agent. Always check flights with the search tool before you answer. " * 8


def _record(path: Path) -> None:
    @rewind.llm(name="chat")
    def chat(**request: Any) -> dict[str, Any]:
        last = request["messages"][-1]
        if last["role"] == "user":
            call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "LIS"}'}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            message = {"role": "assistant", "content": "Take RW100." + " Details follow." * 60 + " zebra-fare"}
        return {"model": "gpt-4o-mini", "choices": [{"message": message, "finish_reason": "stop"}]}

    with rewind.record(path):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "find me a flight to Lisbon"},
        ]
        first = chat(model="gpt-4o-mini", messages=messages)
        messages.append(first["choices"][0]["message"])
        messages.append({"role": "tool", "tool_call_id": "c1", "content": "RW100 at $120"})
        chat(model="gpt-4o-mini", messages=messages)


def test_show_v_previews_the_newest_message(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    _record(path)
    result = run_cli("show", path, "-v")
    assert result.returncode == 0, result.stderr
    requests = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("request:")]
    # Before: both lines began with the system prompt, which said nothing about either step.
    assert requests == [
        "request:  [2 messages] user: find me a flight to Lisbon",
        "request:  [4 messages] tool: RW100 at $120",
    ]
    lines = result.stdout.splitlines()
    assert any("#0" in line and "→ search(q=LIS)" in line for line in lines)  # the step's outcome


def test_the_filter_searches_the_whole_request_and_response(tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    _record(path)
    browser = Browser(rewind.Trace.load(path), title="run")
    browser.apply_filter("zebra-fare")  # at the end of a long answer
    assert [browser.events[i].seq for i in browser.visible] == [1]
    browser.apply_filter("lisbon")  # in the request, after the long system prompt
    assert [browser.events[i].seq for i in browser.visible] == [0, 1]
