"""Together instrumentor overhead (the ``bench_openai`` budgets; see ``_stainless_bench``).

python benchmarks/bench_together.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import sys
from typing import Any

from _stainless_bench import Target, run

from rewind.setup.integrations import patch_together


def _together_shape(payload: dict[str, Any]) -> dict[str, Any]:
    """Together's schema requires the echoed ``prompt`` and each tool call's ``index``."""
    payload["prompt"] = []
    for index, call in enumerate(payload["choices"][0]["message"]["tool_calls"]):
        call["index"] = index
    return payload


TARGET = Target(
    package="together",
    client="Together",
    path="/v1/chat/completions",
    chat_type="together.types.chat:ChatCompletion",
    model="meta-llama/Llama-3.3-70B-Instruct-Turbo",
    patch=patch_together,
    reshape=_together_shape,
)

if __name__ == "__main__":
    sys.exit(run(TARGET, sys.argv[1:]))
