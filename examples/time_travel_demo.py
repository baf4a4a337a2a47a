"""Time travel with rewind, fully offline: record, replay, diverge, fork, diff.

A small trip-planning agent makes 12 calls (model, tools, memory). We record it once,
replay it without running any backend, show what a divergence looks like, and fork
the run at a step to try a fix while reusing everything before it.

    python examples/time_travel_demo.py
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import rewind

BACKEND_CALLS = {"count": 0}
CITIES = ["Lisbon", "Porto", "Madrid"]


def fake_model(messages: list[dict[str, str]]) -> str:
    """A deterministic stand-in for a hosted model (no API key needed)."""
    BACKEND_CALLS["count"] += 1
    last = messages[-1]["content"]
    digest = int(hashlib.sha256(last.encode()).hexdigest(), 16)
    if last.startswith("plan:"):
        return f"Visit {CITIES[digest % len(CITIES)]} first."
    return f"Summary ({digest % 97}): {_clip_words(last, 60)}"


def _clip_words(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(" ,|:;") + "…"


def rewind_command() -> str:
    """How to run the `rewind` CLI from here: plain `rewind`, or the path of the one beside this Python."""
    beside = Path(sys.executable).with_name("rewind")
    found = shutil.which("rewind")
    if not beside.exists() or (found is not None and Path(found).resolve() == beside.resolve()):
        return "rewind"
    try:
        return str(beside.relative_to(Path.cwd()))  # e.g. .venv/bin/rewind after `make demo`
    except ValueError:
        return str(beside)


@rewind.llm
def call_model(model: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    return {"model": model, "content": fake_model(messages), "usage": {"input_tokens": 12, "output_tokens": 8}}


@rewind.tool
def search_flights(city: str, budget: int) -> list[dict[str, Any]]:
    BACKEND_CALLS["count"] += 1
    return [{"city": city, "price": budget - 40 * i, "flight": f"RW{100 + i}"} for i in range(2)]


@rewind.tool
def get_weather(city: str) -> dict[str, Any]:
    BACKEND_CALLS["count"] += 1
    return {"city": city, "forecast": "sunny", "high_c": 24}


@rewind.tool
def book_flight(flight: str) -> dict[str, str]:
    BACKEND_CALLS["count"] += 1
    return {"flight": flight, "status": "held", "locator": f"RWND{len(flight)}"}


@rewind.memory
def recall_preferences(user: str) -> list[str]:
    BACKEND_CALLS["count"] += 1
    return ["window seat", "no red-eyes"]


def trip_agent(user: str, budget: int, cities: list[str] = CITIES) -> str:
    """12 steps: memory, three rounds of plan → flights → weather, a summary, a booking."""
    prefs = recall_preferences(user)
    notes: list[str] = [f"preferences: {', '.join(prefs)}"]
    cheapest = ""
    for city in cities:
        plan = call_model("demo-model", [{"role": "user", "content": f"plan: {city} on ${budget}"}])["content"]
        flights = search_flights(city, budget)
        weather = get_weather(city)
        notes.append(f"{plan} cheapest {flights[-1]['flight']} at ${flights[-1]['price']}, {weather['forecast']}")
        cheapest = cheapest or flights[-1]["flight"]
    summary = call_model("demo-model", [{"role": "user", "content": " | ".join(notes)}])["content"]
    booking = book_flight(cheapest)
    return f"{summary} [booked {booking['flight']}: {booking['status']}]"


def show_diff(a: Path, b: Path) -> None:
    print(rewind.render_text(rewind.diff_traces(a, b)))


def section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 60 - len(title)))


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="rewind-demo-"))
    original = workdir / "trip.rewind"

    section("1. record a live run")
    with rewind.record(original, meta={"demo": "time-travel"}) as session:
        result = trip_agent("ada", budget=500)
    print(f"agent answered: {result}")
    print(f"recorded {len(session.trace)} steps to {original} ({BACKEND_CALLS['count']} backend calls)")

    section("2. replay it offline")
    BACKEND_CALLS["count"] = 0
    with rewind.replay(original) as replayed:
        again = trip_agent("ada", budget=500)
    print(f"same answer: {again == result}; backend calls during replay: {BACKEND_CALLS['count']}")
    print(f"served {replayed.cursor} recorded steps")

    section("3. change the input: strict replay explains the divergence")
    try:
        with rewind.replay(original):
            trip_agent("ada", budget=450)
    except rewind.DivergenceError as error:
        print(error)
        print(f"-> error.step={error.step}, error.reason={error.reason!r}")

    section("4. fork at step 11: reuse 11 recorded steps, run the last one live")
    BACKEND_CALLS["count"] = 0
    forked = workdir / "forked-at-11.rewind"
    with rewind.fork(original, at=11, save_as=forked) as fork_session:
        trip_agent("ada", budget=500)
    print(f"live backend calls: {BACKEND_CALLS['count']}; new events: {fork_session.new_events}")
    header = rewind.Trace.load(forked).header
    print(f"{forked.name} has {len(rewind.Trace.load(forked))} steps, forked_from={header['forked_from']}")

    section("5. fork at step 4 with a changed itinerary and watch the cascade")
    BACKEND_CALLS["count"] = 0
    changed = workdir / "seville.rewind"
    with rewind.fork(original, at=4, save_as=changed) as fork_session:
        print(trip_agent("ada", budget=500, cities=["Lisbon", "Seville", "Madrid"]))
    print(f"steps 0-3 came from the recording; {len(fork_session.new_events)} ran live")
    show_diff(original, changed)

    section("6. ordered replay tolerates the changed input with a warning")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with rewind.replay(original, match="ordered"):
            trip_agent("ada", budget=450)
    drift = [w for w in caught if issubclass(w.category, rewind.ReplayDriftWarning)]
    print(f"served all steps by position; {len(drift)} drift warnings, e.g.:\n  {drift[0].message}")

    section("7. see it: one HTML file per run, and one for the diff")
    from rewind.report import write_diff_report, write_report

    run_page = write_report(original, workdir / "trip.html")
    diff_page = write_diff_report(original, changed, workdir / "trip-vs-seville.html")
    print(f"report of the recorded run: {workdir / 'trip.html'} ({run_page.steps} steps)")
    print(f"report of the diff:         {workdir / 'trip-vs-seville.html'} ({diff_page.size // 1024} KB)")
    print("open them in any browser: they are self-contained and fetch nothing")

    command = rewind_command()
    print(f"\nTraces are in {workdir}. Inspect one with: {command} show {original} -v")
    if command != "rewind":
        activate = str(Path(command).with_name("activate"))
        print(f"(`rewind` is not on your PATH: run it as {command}, or first `source {activate}`)")
    print(f"Look at the run in a browser: {(workdir / 'trip.html').as_uri()}")


if __name__ == "__main__":
    main()
