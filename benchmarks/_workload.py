"""Deterministic synthetic agent workloads shared by the benchmark modules.

Every generator is seeded, so two runs (and two machines) measure the same bytes.
The chat workload models a long agent run: a fixed system prompt plus a sliding
window over a growing conversation, so each call re-sends most of the previous
call's history (what makes real traces compress well) and carries ~4.4 KB.
"""

from __future__ import annotations

import random
from typing import Any

# A small vocabulary keeps the text English-like: gzip ratios on random bytes
# would say nothing about real transcripts.
_VOCABULARY = (
    "the agent flight search result price booking seat window aisle departure arrival "
    "airport city hotel night weather forecast rain sun tool call returned json field "
    "user asked for a cheaper option tomorrow morning evening between and with from to "
    "confirm cancel itinerary passenger name email phone total currency euro dollar "
    "available sold out next step plan check compare choose because however then "
    "summary details reference code gate terminal baggage allowance kilogram meal "
    "vegetarian request note update status delayed on time boarding group priority"
)
_WORDS = tuple(_VOCABULARY.split())

SYSTEM_PROMPT = (
    "You are a careful travel assistant. Use the tools to search flights and hotels, "
    "compare options on price and duration, never invent availability, and confirm "
    "every booking with the user before calling book_flight or book_hotel. Answer "
    "concisely, cite the tool result you relied on, and ask one question at a time. "
    "When a tool fails, explain what happened and try an alternative. Prices are in "
    "the user's currency; convert when a tool returns another one. Keep a running "
    "plan of the remaining steps and update it after each tool result."
)

WINDOW = 10  # messages of history per call, besides the system prompt
MODEL = "gpt-4o-mini"


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def conversation(turns: int, *, seed: int = 7) -> list[dict[str, str]]:
    """``turns + WINDOW`` alternating user/assistant messages of ~370 bytes each."""
    rng = random.Random(seed)
    messages = []
    for index in range(turns + WINDOW):
        role = "user" if index % 2 == 0 else "assistant"
        body = " ".join(_sentence(rng, rng.randint(7, 11)) for _ in range(5))
        messages.append({"role": role, "content": body})
    return messages


def chat_requests(calls: int, *, seed: int = 7) -> list[dict[str, Any]]:
    """One chat request per call: the system prompt and the last ``WINDOW`` messages.

    Message dicts are shared between requests (as an agent's history list would be),
    so building 5,000 requests costs little memory.
    """
    history = conversation(calls, seed=seed)
    system = {"role": "system", "content": SYSTEM_PROMPT}
    return [{"messages": [system, *history[i : i + WINDOW]], "model": MODEL, "temperature": 0.0} for i in range(calls)]


def chat_response(index: int) -> dict[str, Any]:
    """An OpenAI-shaped chat completion, small and distinct per call."""
    return {
        "id": f"chatcmpl-{index:08d}",
        "object": "chat.completion",
        "created": 1_700_000_000 + index,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"Step {index}: checking the next option."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1100, "completion_tokens": 12, "total_tokens": 1112},
    }


def image_data_url(size: int, *, seed: int = 11) -> str:
    """A base64 data URL of ``size`` characters, as a vision request carries an image."""
    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    prefix = "data:image/png;base64,"
    body = "".join(rng.choices(alphabet, k=max(0, size - len(prefix))))
    return prefix + body


def vision_request(turn: int, image: str) -> dict[str, Any]:
    """Turn ``turn`` of a vision agent that re-sends the same screenshot every turn."""
    return {
        "model": MODEL,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"Turn {turn}: what changed on the screen? Answer in one line."},
                    {"type": "image_url", "image_url": {"url": image}},
                ],
            }
        ],
    }


# -- the standard long run: 5,000 chat calls, ~22 MB of trace ----------------------------

CALLS = 5_000
_RESPONSES = [chat_response(index) for index in range(64)]
_turn = [0]


def chat(messages: list[dict[str, Any]], model: str, temperature: float) -> dict[str, Any]:
    """The "model": answers instantly, so what is measured around it is rewind's cost."""
    index = _turn[0]
    _turn[0] = index + 1
    return _RESPONSES[index % len(_RESPONSES)]


def reset_chat() -> None:
    _turn[0] = 0


def record_chat_run(path: Any, requests: list[dict[str, Any]]) -> None:
    """Record one decorator-captured call per request into ``path``."""
    import rewind

    recorded = rewind.llm(chat)
    reset_chat()
    with rewind.record(path):
        for request in requests:
            recorded(**request)
