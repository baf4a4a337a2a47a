"""Edit and continue: ``rewind.fork(path, at=N, edit=...)`` with the real openai SDK against the stub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion
from what_if_agent import LIVE, client, record, run_agent

import rewind
from rewind.errors import DivergenceError
from rewind.inspection.diff import diff_traces, render_text
from rewind.storage.trace import Trace
from rewind.stub_server import StubServer
from rewind.what_if import EditError, load_edit_file

UNUSED = "http://127.0.0.1:9/v1"  # nothing listens: a call that went live here would fail


@pytest.fixture(autouse=True)
def _patched() -> Any:
    LIVE.clear()
    unpatch = rewind.patch_openai()
    yield
    unpatch()


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.rewind"
    assert record(path) == {"tools": ["get_weather", "get_weather"], "answer": "Umbrella for Paris only."}
    LIVE.clear()
    return path


def _news_instead(event: rewind.Event) -> Any:
    """The recorded step 0, but the model called get_news for Paris only."""
    response = event.response
    message = response["choices"][0]["message"]
    message["tool_calls"] = [
        {**message["tool_calls"][0], "function": {"name": "get_news", "arguments": json.dumps({"city": "Paris"})}}
    ]
    return response


def test_edit_with_a_function_changes_what_the_agent_does(golden: Path, tmp_path: Path) -> None:
    forked = tmp_path / "news.rewind"
    with StubServer(script=["Paris opens a museum."]) as server:
        with rewind.fork(golden, at=0, edit=_news_instead, save_as=forked):
            result = run_agent(client(server.openai_base_url))
        assert server.request_count == 1  # only the step after the edit went to the model
    assert result == {"tools": ["get_news"], "answer": "Paris opens a museum."}
    assert LIVE == ["get_news:Paris"]  # the other tool really ran

    saved = Trace.load(forked)
    edit = saved.header["forked_from"]["edit"]
    assert edit["step"] == 0 and edit["then"] == "live" and edit["outcome"] == "response"
    assert "_news_instead" in edit["from"]
    first = saved.events[0]
    assert first.live is False and first.get("what_if") == {"edited": True}
    assert first.response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_news"
    assert [e.name for e in saved.events] == [
        "openai.chat.completions.create",
        "get_news",
        "openai.chat.completions.create",
    ]

    diff = diff_traces(golden, forked)
    text = render_text(diff)
    assert "step 0 (llm openai.chat.completions.create) was served an edited response" in text
    assert diff.first_divergence is not None and diff.first_divergence.step == 0


def test_the_edited_response_revives_as_the_sdk_type(golden: Path) -> None:
    seen: list[Any] = []
    recorded = Trace.load(golden).events[0].response
    edited = json.loads(json.dumps(recorded))
    edited["choices"][0]["message"] = {"role": "assistant", "content": "No tools today."}
    edited["choices"][0]["finish_reason"] = "stop"
    with rewind.fork(golden, at=0, edit=edited):
        reply = client(UNUSED).chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Umbrella for Paris and Tokyo tomorrow?"}],
            tools=run_agent.__globals__["TOOLS"],
            temperature=0,
        )
        seen.append(reply)
    assert isinstance(reply, ChatCompletion)
    assert reply.choices[0].message.content == "No tools today."
    assert reply.choices[0].message.tool_calls is None


def test_then_replay_serves_later_steps_while_they_still_match(golden: Path, tmp_path: Path) -> None:
    # Step 1 is get_weather(Paris): make it dry. Step 2 (Tokyo) still matches and is served;
    # step 3 (the model) now sees another request and goes live.
    with StubServer(script=["No umbrella anywhere."]) as server:
        with rewind.fork(golden, at=1, edit={"rain_mm": 0}, then="replay", save_as=tmp_path / "dry.rewind") as session:
            result = run_agent(client(server.openai_base_url))
        assert server.request_count == 1
    assert result["answer"] == "No umbrella anywhere."
    assert LIVE == []  # Tokyo's weather came from the recording
    matcher = session.matcher
    assert getattr(matcher, "live_from", None) == 3
    saved = Trace.load(tmp_path / "dry.rewind")
    assert [e.live for e in saved.events] == [False, False, False, True]
    assert saved.events[1].response == {"rain_mm": 0}


def test_then_live_runs_everything_after_the_edit(golden: Path) -> None:
    with StubServer(script=["No umbrella anywhere."]) as server, rewind.fork(golden, at=1, edit={"rain_mm": 0}):
        result = run_agent(client(server.openai_base_url))
    assert result["answer"] == "No umbrella anywhere."
    assert LIVE == ["get_weather:Tokyo"]  # step 2 ran live this time


def test_an_error_edit_raises_the_sdk_exception(golden: Path) -> None:
    error = {
        "type": "openai.RateLimitError",
        "module": "openai",
        "qualname": "RateLimitError",
        "message": "Error code: 429 - slow down",
        "attrs": {"status_code": 429},
        "response": {"status_code": 429, "headers": {"retry-after": "7"}, "text": "{}"},
    }
    with rewind.fork(golden, at=0, edit={"error": error}), pytest.raises(openai.RateLimitError) as caught:
        run_agent(client(UNUSED), retry_rate_limits=False)
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.status_code == 429


def test_a_streamed_step_is_restreamed_from_the_edit(tmp_path: Path) -> None:
    path = tmp_path / "stream.rewind"
    assert record(path, ["Take an umbrella."], stream=True)["answer"] == "Take an umbrella."
    edited = Trace.load(path).events[0].response
    edited["choices"][0]["message"]["content"] = "Leave the umbrella at home, it will be sunny."
    with rewind.fork(path, at=0, edit={"response": edited}):
        result = run_agent(client(UNUSED), stream=True)
    assert result["answer"] == "Leave the umbrella at home, it will be sunny."


def test_a_whole_step_as_show_prints_it_is_an_edit(golden: Path) -> None:
    step = Trace.load(golden).events[1].to_dict()
    step["response"] = {"rain_mm": 42}
    with StubServer(script=["Flood warning."]) as server, rewind.fork(golden, at=1, edit=step):
        assert run_agent(client(server.openai_base_url))["answer"] == "Flood warning."


# --------------------------------------------------------------------------- unhappy paths


def test_editing_a_step_that_does_not_exist_fails_at_once(golden: Path) -> None:
    with pytest.raises(EditError, match=r"has 4 steps \(steps 0-3\); there is no step 4 to edit"):
        rewind.fork(golden, at=4, edit={"x": 1})


def test_a_malformed_edit_file_names_its_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "step.json"
    bad.write_text('{"choices": [\n  {"message": }\n]}', encoding="utf-8")
    with pytest.raises(EditError, match=r"step\.json is not valid JSON \(line 2, column 15\): Expecting value"):
        load_edit_file(bad)
    with pytest.raises(EditError, match="cannot read the edit"):
        load_edit_file(tmp_path / "missing.json")


def test_an_error_edit_needs_a_message(golden: Path) -> None:
    with pytest.raises(EditError, match='an error is an object with at least a "message"'):
        rewind.fork(golden, at=0, edit={"error": {"type": "x"}})
    with pytest.raises(EditError, match="both a response and an error"):
        rewind.fork(golden, at=0, edit={"response": 1, "error": {"message": "m"}})


def test_then_needs_an_edit_and_a_known_value(golden: Path) -> None:
    with pytest.raises(ValueError, match=r"then=\.\.\.\) applies to an edit"):
        rewind.fork(golden, at=1, then="replay")
    with pytest.raises(ValueError, match="must be one of 'live', 'replay'"):
        rewind.fork(golden, at=1, edit={}, then="later")
    with pytest.raises(ValueError, match="positional"):
        rewind.fork(golden, at=1, edit={}, match="parallel")


def test_an_edit_answers_only_the_recorded_question(golden: Path) -> None:
    # The agent asks something else at the edited step: the edit does not apply to it.
    with (
        pytest.warns(rewind.UnconsumedEventsWarning),
        rewind.fork(golden, at=0, edit=_news_instead),
        pytest.raises(DivergenceError),
    ):
        client(UNUSED).chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])


def test_a_streamed_step_that_cannot_be_restreamed_says_so(tmp_path: Path) -> None:
    path = tmp_path / "stream.rewind"
    record(path, ["Take an umbrella."], stream=True)
    with pytest.raises(EditError, match="was streamed"):
        rewind.fork(path, at=0, edit="just text")
