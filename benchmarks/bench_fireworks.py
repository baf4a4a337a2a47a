"""Fireworks instrumentor overhead (the ``bench_openai`` budgets; see ``_stainless_bench``).

python benchmarks/bench_fireworks.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import sys

from _stainless_bench import Target, run

from rewind.setup.integrations import patch_fireworks

TARGET = Target(
    package="fireworks",
    client="Fireworks",
    path="/v1/chat/completions",
    chat_type="fireworks.types.chat:CompletionCreateResponse",
    model="accounts/fireworks/models/llama-v3p3-70b-instruct",
    patch=patch_fireworks,
)

if __name__ == "__main__":
    sys.exit(run(TARGET, sys.argv[1:]))
