"""OpenAI instrumentor overhead, as ratios against baselines measured in the same run.

    python benchmarks/bench_openai.py [--calls N] [--rounds R]

Two budgets, both on non-streamed ``chat.completions.create`` calls whose HTTP answer
comes from an in-process ``httpx`` mock transport (no network, no server):

* record overhead: ``(recorded call - plain call) / plain call`` at most 20 %. The plain
  call is the SDK's own in-process cost (unpatched, no session); the recorded call runs
  patched inside ``rewind.record()``, writing and flushing the trace file per call.
* replay: a replayed call (match, read the event back from the lazily opened trace,
  revive it into a ``ChatCompletion``) at most as slow as the SDK parsing the same
  response from wire bytes - an ``APIResponse`` over an ``httpx`` response holding the
  bytes, ``.parse()``d exactly as the SDK does after a real request. The full plain call
  is reported too, for scale.

Figures are CPU time per call in microseconds. Each round alternates the two sides of a
comparison call by call (the plain call runs in a context without the session, through
the same hooks, which pass it straight through); ratios are taken per round and the
median round is reported. Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import sys
from typing import Any

from _stainless_bench import Target, run

from rewind.setup.integrations import patch_openai


def _as_openai_sends_it(payload: dict[str, Any]) -> dict[str, Any]:
    """The fields OpenAI adds to the shared OpenAI-shaped answer (a dated model, refusal, token details)."""
    payload["model"] = "gpt-4o-mini-2024-07-18"
    payload["choices"][0]["message"]["refusal"] = None
    payload["usage"]["prompt_tokens_details"] = {"cached_tokens": 0, "audio_tokens": 0}
    payload["usage"]["completion_tokens_details"] = {"reasoning_tokens": 0, "audio_tokens": 0}
    return payload


TARGET = Target(
    package="openai",
    client="OpenAI",
    path="/chat/completions",
    chat_type="openai.types.chat:ChatCompletion",
    model="gpt-4o-mini",
    patch=patch_openai,
    reshape=_as_openai_sends_it,
)


def main(argv: list[str] | None = None) -> int:
    return run(TARGET, argv, description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
