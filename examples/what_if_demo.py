"""What if? Edit and continue, fault injection and a guaranteed-offline replay, on the real agent.

The agent is the one of ``real_agent_demo.py``: ordinary OpenAI tool-calling code, run
against rewind's bundled stub model server, so everything here is offline:

    python examples/what_if_demo.py

1. record a run;
2. edit and continue: what if the model had asked for Tokyo only at step 0? The fork
   serves the edited answer, then the agent goes on live;
3. fault injection: replay the run once per fault (a 429, a timeout, a tool that raises,
   empty content, cut-off tool arguments) and tabulate what the agent did;
4. offline, guaranteed: a replay with ``network="block"`` stops an undecorated call that
   would have gone to the internet, and names it.
"""

from __future__ import annotations

import json
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_agent_demo as demo  # the folder of this file, just added

import rewind
from rewind.engine.network_guard import NetworkBlockedError
from rewind.inspection.diff import diff_traces, render_text
from rewind.stub_server import StubServer
from rewind.what_if import mutate

OFFLINE = "http://127.0.0.1:9/v1"  # nothing listens here: only the trace can answer


def tokyo_only(event: rewind.Event) -> Any:
    """Step 0 as recorded, except that the model asks for Tokyo's forecast only."""
    response = event.response
    message = response["choices"][0]["message"]
    first = message["tool_calls"][0]
    message["tool_calls"] = [{**first, "function": {"name": "get_weather", "arguments": json.dumps({"city": "Tokyo"})}}]
    return response


def uv_index(city: str) -> bytes:
    """An undecorated helper a replay cannot see: it would reach a real weather API."""
    with urllib.request.urlopen(f"http://203.0.113.7/uv?city={city}", timeout=5) as reply:
        return bytes(reply.read())


def main() -> int:
    unpatch = rewind.patch_openai()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            good, edited = Path(tmp) / "good.rewind", Path(tmp) / "tokyo.rewind"

            print("1. record a run")
            with StubServer(script=demo.GOOD_SCRIPT) as server, rewind.record(good):
                answer = demo.run_agent(demo._client(server.openai_base_url))
            print(f"   answer: {answer}")

            print("2. edit and continue: the model asks for Tokyo only at step 0")
            with (
                StubServer(script=["No umbrella: Tokyo will be dry and warm."]) as server,
                rewind.fork(good, at=0, edit=tokyo_only, save_as=edited),
            ):
                forked = demo.run_agent(demo._client(server.openai_base_url))
            print(f"   answer: {forked}")
            report = render_text(diff_traces(good, edited))
            print("   " + next(line for line in report.splitlines() if line.startswith("note:")))

            print("3. fault injection: one fault per replay")
            result = mutate(
                good,
                lambda: demo.run_agent(demo._client(OFFLINE)),
                faults=["rate_limit", "timeout", "tool_error", "empty_content", "malformed_tool_args"],
                steps=[0, 1],
                timeout=20,
            )
            print("   " + result.table().replace("\n", "\n   "))

            print("4. offline, guaranteed: nothing leaves the machine during the replay")
            with rewind.replay(good, network="block"):
                demo.run_agent(demo._client(OFFLINE))
                try:
                    uv_index("Paris")
                except NetworkBlockedError as error:
                    print(f"   blocked: {error.host}:{error.port}, attempted by {error.where}")
    finally:
        unpatch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
