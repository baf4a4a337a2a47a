"""Agent programs that misbehave under ``rewind mutate`` (each runs as ``python FILE``, with
``tests/`` on ``PYTHONPATH`` for ``what_if_agent``)."""

from __future__ import annotations

#: TEST-NET-3 (RFC 5737): a correct guard refuses it before any packet; run under netns().
OFF_HOST = "203.0.113.7"

#: When the model call fails, it falls back to a raw HTTP call of its own, then answers anyway.
FALLS_BACK_TO_RAW_HTTP = f"""
import json, os, urllib.request, what_if_agent as a
try:
    print(json.dumps(a.run_agent(a.client(os.environ["OPENAI_BASE_URL"]))))
except Exception:
    try:
        urllib.request.urlopen("http://{OFF_HOST}/v1/fallback", timeout=3)
    except Exception:
        pass  # swallowed: the run still "recovers"
    print("fallback answer")
"""

#: Prints ``MEGABYTES`` MB before its answer (a chatty agent, a debug dump).
PRINTS_A_LOT = """
import json, os, sys, what_if_agent as a
answer = a.run_agent(a.client(os.environ["OPENAI_BASE_URL"]))
chunk = "x" * (1 << 20) + "\\n"
for _ in range(int(os.environ.get("MEGABYTES", "300"))):
    sys.stdout.write(chunk)
print(json.dumps(answer))
"""
