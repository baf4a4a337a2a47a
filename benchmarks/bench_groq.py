"""Groq instrumentor overhead (the ``bench_openai`` budgets; see ``_stainless_bench``).

python benchmarks/bench_groq.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import sys

from _stainless_bench import Target, run

from rewind.setup.integrations import patch_groq

TARGET = Target(
    package="groq",
    client="Groq",
    path="/openai/v1/chat/completions",
    chat_type="groq.types.chat:ChatCompletion",
    model="llama-3.3-70b-versatile",
    patch=patch_groq,
)

if __name__ == "__main__":
    sys.exit(run(TARGET, sys.argv[1:]))
