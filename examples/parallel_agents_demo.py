"""Three agents at once, recorded live and replayed offline with match="parallel".

Each agent is an ordinary tool-calling loop on the real ``openai`` SDK
(``AsyncOpenAI``), captured by ``patch_openai()`` without code changes. The agents
run concurrently with ``asyncio.gather``; the model asks for three tools at once
(parallel tool calls), which the agent also runs concurrently; a booking step
depends on what the searches returned. Model servers and tools answer after
random delays, so calls finish in a different order on every run.

Recording captures one interleaving. Positional replay would call any other
interleaving a divergence; ``match="parallel"`` serves each call by its exact
identity instead, so the same trace replays the run offline, again and again,
whatever order the calls arrive in.

    python examples/parallel_agents_demo.py            # needs: pip install openai

Everything runs on this machine: the "model" is rewind's loopback stub server.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

import rewind
from rewind.setup.integrations import patch_openai
from rewind.stub_server import StubServer

CITIES = ("Lisbon", "Kyoto", "Quito")
REPLAYS = 3
LIVE_TOOL_RUNS = {"count": 0}


def _schema(name: str, description: str, **properties: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in properties.items()},
                "required": list(properties),
            },
        },
    }


TOOLS = [
    _schema("search_flights", "Flight offers to a city.", city="string"),
    _schema("search_hotels", "Hotels in a city.", city="string"),
    _schema("get_weather", "Weekend forecast for a city.", city="string"),
    _schema("book_trip", "Book the cheapest flight and the best hotel found.", city="string"),
]


def model_script(city: str) -> list[Any]:
    """What this agent's model says: three tools at once, then a booking, then (unscripted) a summary."""
    return [
        {
            "text": f"Let me look up {city} in parallel.",
            "tool_calls": [
                {"name": "search_flights", "arguments": {"city": city}},
                {"name": "search_hotels", "arguments": {"city": city}},
                {"name": "get_weather", "arguments": {"city": city}},
            ],
        },
        {"tool_calls": [{"name": "book_trip", "arguments": {"city": city}}]},
    ]


# -- tools: deterministic answers after random delays ------------------------------------
_jitter = random.Random()


async def _backend_delay() -> None:
    LIVE_TOOL_RUNS["count"] += 1
    await asyncio.sleep(_jitter.uniform(0.0, 0.03))


@rewind.tool
async def search_flights(city: str) -> list[dict[str, Any]]:
    await _backend_delay()
    base = 90 + 37 * len(city)
    return [{"flight": f"{city[:3].upper()}{n}", "price": base + 45 * ((n * 7) % 5)} for n in range(1, 4)]


@rewind.tool
async def search_hotels(city: str) -> list[dict[str, Any]]:
    await _backend_delay()
    return [{"hotel": f"{city} {name}", "rating": 3 + (len(city) + i) % 3} for i, name in enumerate(("Inn", "Palace"))]


@rewind.tool
async def get_weather(city: str) -> str:
    await _backend_delay()
    return ("sunny", "showers", "cloudy")[len(city) % 3]


@rewind.tool
async def book_trip(city: str, flight: str, hotel: str) -> dict[str, str]:
    await _backend_delay()
    return {"status": "booked", "reference": f"{flight}-{hotel.split()[-1][:3].upper()}"}


# -- the agent ----------------------------------------------------------------------
class Trip:
    """What one agent learned so far; the booking depends on it."""

    def __init__(self) -> None:
        self.flights: list[dict[str, Any]] = []
        self.hotels: list[dict[str, Any]] = []

    async def run(self, name: str, args: dict[str, Any]) -> Any:
        if name == "search_flights":
            self.flights = await search_flights(**args)
            return self.flights
        if name == "search_hotels":
            self.hotels = await search_hotels(**args)
            return self.hotels
        if name == "get_weather":
            return await get_weather(**args)
        cheapest = min(self.flights, key=lambda offer: offer["price"])
        best = max(self.hotels, key=lambda hotel: hotel["rating"])
        return await book_trip(args["city"], cheapest["flight"], best["hotel"])


async def run_agent(client: openai.AsyncOpenAI, city: str) -> str:
    trip = Trip()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You plan weekend trips. Use the tools; book only after searching."},
        {"role": "user", "content": f"Plan and book a weekend in {city}."},
    ]
    for _ in range(6):
        await asyncio.sleep(_jitter.uniform(0.0, 0.01))  # "thinking": reshuffles the interleaving
        reply = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content or ""
        calls = message.tool_calls
        results = await asyncio.gather(*(trip.run(c.function.name, json.loads(c.function.arguments)) for c in calls))
        for call, result in zip(calls, results):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    raise RuntimeError(f"the {city} agent did not finish")


async def run_all(clients: dict[str, openai.AsyncOpenAI]) -> dict[str, str]:
    order = list(CITIES)
    _jitter.shuffle(order)  # start the agents in a different order each run, too
    answers = await asyncio.gather(*(run_agent(clients[city], city) for city in order))
    return dict(zip(order, answers))


def _clients(urls: dict[str, str]) -> dict[str, openai.AsyncOpenAI]:
    return {city: openai.AsyncOpenAI(base_url=url, api_key="stub", max_retries=0) for city, url in urls.items()}


def _labelled(on: list[str]) -> Callable[[rewind.Event], None]:
    def note(event: rewind.Event) -> None:
        request = event.request or {}
        city = request.get("city") or next((c for c in CITIES if c in json.dumps(request)), "?")
        on.append(f"{city[:3]}:{'model' if event.kind == 'llm' else event.name}")

    return note


def main(path: str | None = None) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="rewind-parallel-"))
    trace = Path(path) if path else workdir / "agents.rewind"
    unpatch = patch_openai()
    try:
        # 1. Record: three agents, each with its own randomly slow model server.
        servers = {
            city: StubServer(
                script=model_script(city), latency=0.005, latency_jitter=0.04, seed=random.randrange(1 << 30)
            )
            for city in CITIES
        }
        for server in servers.values():
            server.start()
        try:
            clients = _clients({city: server.openai_base_url for city, server in servers.items()})
            with rewind.record(trace, meta={"demo": "parallel agents"}) as session:
                recorded = asyncio.run(run_all(clients))
        finally:
            for server in servers.values():
                server.stop()
        urls = {city: server.openai_base_url for city, server in servers.items()}
        live_during_record = LIVE_TOOL_RUNS["count"]
        print(f"recorded {len(session.new_events)} calls from {len(CITIES)} concurrent agents to {trace}")
        for city in CITIES:
            print(f"  {city}: {recorded[city]}")
        recorded_order = [f"{e.seq}" for e in session.new_events]
        print(f"  calls finished in this order (by start seq): {' '.join(recorded_order)}")

        # 2. Replay, offline (every server is stopped), several times, in new orders.
        print(f"\nreplaying {REPLAYS} times with match='parallel' (servers stopped):")
        for attempt in range(1, REPLAYS + 1):
            served: list[str] = []
            with rewind.replay(trace, match="parallel", require_full_consumption=True, on_step=_labelled(served)):
                replayed = asyncio.run(run_all(_clients(urls)))
            assert replayed == recorded, (replayed, recorded)
            print(f"  replay {attempt}: identical answers; served {' '.join(served[:7])} …")
        assert LIVE_TOOL_RUNS["count"] == live_during_record, "a tool ran live during replay"
        print("  no model server and no tool was reached during any replay")

        # 3. For contrast: positional matching calls a new interleaving a divergence.
        print("\nthe same replay with match='strict':")
        try:
            with rewind.replay(trace):
                asyncio.run(run_all(_clients(urls)))
            print("  this run happened to arrive in the recorded order")
        except rewind.DivergenceError as error:
            print("  " + str(error).splitlines()[0])
            print(f"  hint: {error.hint}")
    finally:
        unpatch()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
