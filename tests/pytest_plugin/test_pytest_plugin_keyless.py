"""Golden tests replay in CI without any API key: SDK clients get placeholder keys.

``openai.OpenAI()`` and ``anthropic.Anthropic()`` refuse to be constructed without a key,
before any call is made. A replay provides a placeholder for each unset key; a real key
is never overridden, and the placeholders are gone after the test.
"""

from __future__ import annotations

import textwrap

import pytest

from rewind.engine.placeholder_keys import PLACEHOLDER as PLACEHOLDER_KEY
from rewind.stub_server import StubServer

pytest_plugins = ["pytester"]

pytest.importorskip("openai")
pytest.importorskip("anthropic")

CONFTEST = """
import pytest
from rewind.integrations import patch_anthropic, patch_openai


@pytest.fixture(scope="session", autouse=True)
def hooks():
    undo = [patch_openai(), patch_anthropic()]
    yield
    for step in undo:
        step()
"""

TESTS = """
import os

import anthropic
import openai
import pytest


def agent():
    # No api_key=: the clients read OPENAI_API_KEY / ANTHROPIC_API_KEY, as a real agent does.
    chat = openai.OpenAI(base_url=os.environ["STUB_OPENAI"], max_retries=0).chat.completions
    first = chat.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    claude = anthropic.Anthropic(base_url=os.environ["STUB_ANTHROPIC"], max_retries=0)
    second = claude.messages.create(model="claude-stub", max_tokens=32, messages=[{"role": "user", "content": "yo"}])
    return first.choices[0].message.content + " / " + second.content[0].text


@pytest.mark.rewind_trace("traces/keys.rewind")
def test_agent(rewind_session):
    assert agent() == "Echo: hi / Echo: yo"
    print("KEYS", os.environ.get("OPENAI_API_KEY"), os.environ.get("ANTHROPIC_API_KEY"))


def test_unmarked_after():
    # The placeholders lived for the marked test only.
    print("AFTER", os.environ.get("OPENAI_API_KEY"), os.environ.get("ANTHROPIC_API_KEY"))
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, stub: StubServer) -> pytest.Pytester:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STUB_OPENAI", stub.openai_base_url)
    monkeypatch.setenv("STUB_ANTHROPIC", stub.anthropic_base_url)
    pytester.makeconftest(textwrap.dedent(CONFTEST))
    pytester.makepyfile(test_keys=textwrap.dedent(TESTS))
    return pytester


def test_replay_needs_no_key_and_never_overrides_one(
    project: pytest.Pytester, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-for-recording")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-real-for-recording")
    project.runpytest_subprocess("--rewind-record", "-s").assert_outcomes(passed=2)
    stub.stop()

    # Keyless CI: before placeholders, constructing openai.OpenAI() raised OpenAIError here.
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    keyless = project.runpytest_subprocess("-s")
    keyless.assert_outcomes(passed=2)
    keyless.stdout.fnmatch_lines([f"*KEYS {PLACEHOLDER_KEY} {PLACEHOLDER_KEY}*", "*AFTER None None*"])

    # A key that is set stays as it is.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-mine")
    mine = project.runpytest_subprocess("-s")
    mine.assert_outcomes(passed=2)
    mine.stdout.fnmatch_lines([f"*KEYS sk-mine {PLACEHOLDER_KEY}*", "*AFTER sk-mine None*"])


def test_recording_gets_no_placeholder(project: pytest.Pytester) -> None:
    # Recording talks to the real service: a missing key must fail as the SDK makes it fail.
    result = project.runpytest_subprocess("--rewind-record", "-k", "test_agent")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*OPENAI_API_KEY*"])


AT_IMPORT = """
import os

import openai
import pytest

# Built when the module is imported, during collection: before any test or fixture runs.
client = openai.OpenAI(base_url=os.environ["STUB_OPENAI"], max_retries=0)


@pytest.mark.rewind_trace("traces/import_time.rewind")
def test_agent(rewind_session):
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "Echo: hi"
"""


def test_a_client_built_at_import_time_is_collected_without_a_key(
    project: pytest.Pytester, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_import_time=textwrap.dedent(AT_IMPORT))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-for-recording")
    project.runpytest_subprocess("--rewind-record", "test_import_time.py").assert_outcomes(passed=1)
    stub.stop()
    monkeypatch.delenv("OPENAI_API_KEY")
    # Before: collection failed with "The api_key client option must be set".
    project.runpytest_subprocess("test_import_time.py").assert_outcomes(passed=1)
    # Recording still needs the real key: the SDK's own error, at collection.
    recording = project.runpytest_subprocess("--rewind-record", "test_import_time.py")
    recording.assert_outcomes(errors=1)
    recording.stdout.fnmatch_lines(["*OPENAI_API_KEY*"])
