"""Example projects for the pytest plugin's tests, each run by pytest in a subprocess."""

from __future__ import annotations

import pytest

# The agent under test. AGENT_OFFLINE=1 makes any live call fail loudly, which proves
# a replay never left the trace; AGENT_ANSWER changes what a live run answers.
AGENT = '''
import os

import rewind


def _live(name):
    if os.environ.get("AGENT_OFFLINE") == "1":
        raise RuntimeError(f"{name} went live during an offline replay")


@rewind.llm
def model(prompt):
    _live("model")
    return {"text": os.environ.get("AGENT_ANSWER", "SFO") + " for " + prompt}


@rewind.tool
def search(query):
    _live("search")
    return [query.split()[0], "JFK"]


def run_agent(prompt):
    reply = model(prompt)
    hits = search(reply["text"])
    return {"final": hits[0], "reply": reply["text"]}
'''

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester folder holding ``agent.py`` and an ini; live calls allowed."""
    for name in ("AGENT_OFFLINE", "AGENT_ANSWER", "AGENT_PROMPT"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(agent=AGENT)
    pytester.makeini(INI)
    return pytester

