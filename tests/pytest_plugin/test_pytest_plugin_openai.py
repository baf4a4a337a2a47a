"""Golden traces of a real ``openai`` client: recorded against the loopback stub server,
replayed by plain pytest with the server stopped."""

from __future__ import annotations

import textwrap

import pytest

from rewind import Trace
from rewind.stub_server import StubServer

pytest_plugins = ["pytester"]

pytest.importorskip("openai")

CONFTEST = """
import pytest

from rewind.integrations import patch_openai


@pytest.fixture(scope="session", autouse=True)
def openai_hooks():
    unpatch = patch_openai()
    yield
    unpatch()
"""

TESTS = """
import json
import os

import openai
import pytest
import rewind

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@rewind.tool
def get_weather(city):
    if os.environ.get("AGENT_OFFLINE") == "1":
        raise RuntimeError("get_weather went live during an offline replay")
    return {"city": city, "sky": "sunny"}


def client_kwargs():
    # max_retries=0: with the server stopped, a call that escaped the replay fails at once.
    return {"base_url": os.environ["STUB_URL"], "api_key": "sk-test-do-not-store", "max_retries": 0}


def weather_agent(question):
    client = openai.OpenAI(**client_kwargs())
    messages = [{"role": "user", "content": question}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[WEATHER_TOOL])
    call = first.choices[0].message.tool_calls[0]
    result = get_weather(**json.loads(call.function.arguments))
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)},
    ]
    final = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[WEATHER_TOOL])
    return final.choices[0].message.content


@pytest.mark.rewind_trace("traces/weather.rewind")
def test_weather_agent(rewind_session):
    answer = weather_agent(os.environ.get("QUESTION", "What is the weather in Paris?"))
    assert isinstance(answer, str)
    assert "sunny" in answer


@pytest.mark.rewind_trace("traces/stream.rewind")
async def test_async_streaming(rewind_session):
    client = openai.AsyncOpenAI(**client_kwargs())
    stream = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Say hello in five words"}],
        stream=True,
    )
    pieces = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    assert "".join(pieces).startswith("Echo: Say hello")
"""


@pytest.fixture
def openai_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGENT_OFFLINE", "QUESTION", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(textwrap.dedent(CONFTEST))
    pytester.makepyfile(test_openai_agent=textwrap.dedent(TESTS))
    return pytester


def test_openai_agent_records_against_the_stub_and_replays_with_the_server_stopped(
    openai_project: pytest.Pytester, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUB_URL", stub.openai_base_url)
    recorded = openai_project.runpytest_subprocess("--rewind-record")
    recorded.assert_outcomes(passed=2)
    served = len(stub.requests)
    assert served == 3  # two chat turns around the tool call, one stream

    weather = openai_project.path / "traces/weather.rewind"
    events = Trace.load(weather).events
    assert [e.kind for e in events] == ["llm", "tool", "llm"]
    assert events[1].name == "get_weather"
    assert "Paris" in events[1].request["city"]
    assert "sk-test-do-not-store" not in weather.read_text()
    assert Trace.load(openai_project.path / "traces/stream.rewind").events[0].kind == "llm"

    stub.stop()
    monkeypatch.setenv("AGENT_OFFLINE", "1")
    replayed = openai_project.runpytest_subprocess()
    replayed.assert_outcomes(passed=2)
    assert len(stub.requests) == served

    # The agent now asks something else: the replay stops at the first model call and
    # the report explains it, without the server ever being contacted.
    monkeypatch.setenv("QUESTION", "What is the weather in Rome?")
    diverged = openai_project.runpytest_subprocess("-k", "weather")
    diverged.assert_outcomes(failed=1)
    diverged.stdout.fnmatch_lines(
        [
            "rewind: replay of traces/weather.rewind diverged at step 0: prompt/content drift",
            "*Paris*",
            "*Rome*",
            "    pytest --rewind-record test_openai_agent.py::test_weather_agent",
        ]
    )
    assert "Traceback" not in diverged.stdout.str()
    assert "APIConnectionError" not in diverged.stdout.str()


def test_recording_without_a_server_fails_and_leaves_no_golden(
    openai_project: pytest.Pytester, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUB_URL", stub.openai_base_url)
    stub.stop()
    result = openai_project.runpytest_subprocess("--rewind-record", "-k", "weather")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*APIConnectionError*", "*no golden trace was written (traces/weather.rewind)*"])
    assert not (openai_project.path / "traces/weather.rewind").exists()
    assert not list((openai_project.path / "traces").glob("*"))
