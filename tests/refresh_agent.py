"""An unmodified tool-calling agent for the refresh and many-runs tests: run it as a program.

``AGENT_STYLE`` adds an instruction before the last model call, so a change of prompt makes
the run diverge from its golden at that call (step 3), after two tool steps that still match.
The agent prints its final answer as the last line of stdout and exits 0, or 3 when the model
answered "(gave up)".
"""

from __future__ import annotations

import json
import os
import sys

import what_if_agent as agent


def main() -> int:
    oai = agent.client(os.environ["OPENAI_BASE_URL"])
    messages: list[object] = [{"role": "user", "content": "Umbrella for Paris and Tokyo tomorrow?"}]
    first = oai.chat.completions.create(model=agent.MODEL, messages=messages, tools=agent.TOOLS).choices[0].message
    messages.append(first.model_dump(exclude_none=True))
    for call in first.tool_calls or []:
        result = agent.FUNCTIONS[call.function.name](**json.loads(call.function.arguments))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    style = os.environ.get("AGENT_STYLE")
    if style:
        messages.append({"role": "user", "content": style})
    answer = oai.chat.completions.create(model=agent.MODEL, messages=messages, tools=agent.TOOLS)
    text = answer.choices[0].message.content or ""
    print(f"tools run live: {agent.LIVE}")
    print(text)
    return 3 if text == "(gave up)" else 0


if __name__ == "__main__":
    sys.exit(main())
