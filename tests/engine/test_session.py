from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.storage.trace import Trace

SECRET = "sk-live-123456"


@rewind.llm
def model(**request: Any) -> dict[str, Any]:
    return {"text": f"reply to {request['prompt']}", "echo_key": request.get("api_key")}


@rewind.tool
def flaky(x: int) -> int:
    raise RuntimeError(f"token {SECRET} rejected")


def scrub(payload: Any) -> Any:
    text = json.dumps(payload).replace(SECRET, "[REDACTED]")
    scrubbed = json.loads(text)
    if isinstance(scrubbed, dict):
        scrubbed.pop("api_key", None)
    return scrubbed


def test_current_session_and_session_attributes(trace_path: Path) -> None:
    assert rewind.current_session() is None
    with rewind.record(trace_path, meta={"git_sha": "abc"}) as session:
        assert rewind.current_session() is session
        model(prompt="a")
        assert session.mode == "record" and len(session.trace) == 1 and len(session.new_events) == 1
    assert rewind.current_session() is None
    assert Trace.load(trace_path).meta == {"git_sha": "abc"}


def test_redaction_happens_before_disk_and_the_trace_still_replays(trace_path: Path) -> None:
    with rewind.record(trace_path, redact=scrub):
        model(prompt="hello", api_key=SECRET)
        with pytest.raises(RuntimeError):
            flaky(1)
    text = trace_path.read_text()
    assert SECRET not in text and "[REDACTED]" in text
    with rewind.replay(trace_path) as session:
        # The fingerprint covers the un-redacted request, so the same call matches.
        assert model(prompt="hello", api_key=SECRET) == {"text": "reply to hello", "echo_key": "[REDACTED]"}
        with pytest.raises(RuntimeError, match=r"token \[REDACTED\] rejected"):
            flaky(1)
    assert session.cursor == 2


def test_normalize_drops_volatile_fields_from_identity_but_keeps_them_stored(trace_path: Path) -> None:
    def drop_time(request: Any) -> Any:
        request.pop("now", None)
        return request

    with rewind.record(trace_path, normalize=drop_time):
        model(prompt="p", now="2026-11-29T10:00:00")
    assert Trace.load(trace_path)[0].request["now"] == "2026-11-29T10:00:00"
    with rewind.replay(trace_path, normalize=drop_time):
        assert model(prompt="p", now="2030-01-01T00:00:00")["text"] == "reply to p"
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path):
        model(prompt="p", now="2030-01-01T00:00:00")
    assert info.value.reason == "volatile field" and "normalize=" in str(info.value)


def test_divergence_error_carries_step_reason_expected_and_got(trace_path: Path) -> None:
    with rewind.record(trace_path):
        model(prompt="one")
        model(prompt="two")
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path):
        model(prompt="one")
        model(prompt="TWO!")
    error = info.value
    assert error.step == 1 and error.reason == "prompt/content drift"
    assert error.expected.request == {"prompt": "two"} and error.got["request"] == {"prompt": "TWO!"}
    assert '-  "prompt": "two"' in error.diff and '+  "prompt": "TWO!"' in error.diff
    assert "hint:" in str(error)


def test_a_run_longer_than_the_recording_diverges(trace_path: Path) -> None:
    with rewind.record(trace_path):
        model(prompt="one")
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path):
        model(prompt="one")
        model(prompt="two")
    assert info.value.step == 1 and info.value.reason == "run longer than the recording"


def test_unconsumed_events_warn_or_fail(trace_path: Path) -> None:
    with rewind.record(trace_path):
        model(prompt="one")
        model(prompt="two")
    with pytest.warns(rewind.UnconsumedEventsWarning, match="1 recorded step never served"), rewind.replay(trace_path):
        model(prompt="one")
    strict = rewind.replay(trace_path, require_full_consumption=True)
    with pytest.raises(rewind.RewindError, match="require_full_consumption"), strict:
        model(prompt="one")


def test_on_step_fires_with_each_served_event(trace_path: Path) -> None:
    with rewind.record(trace_path):
        model(prompt="one")
        model(prompt="two")
    seen: list[int] = []
    with rewind.replay(trace_path, on_step=lambda event: seen.append(event.seq)):
        model(prompt="one")
        model(prompt="two")
    assert seen == [0, 1]


def test_ordered_replay_serves_by_position_with_a_drift_warning(trace_path: Path) -> None:
    with rewind.record(trace_path):
        model(prompt="one")
    # Its one step drifted: that is every step, so only tolerated drift ends well (issue 35).
    with pytest.warns(rewind.ReplayDriftWarning), rewind.replay(trace_path, match="ordered", tolerate_drift=True):
        assert model(prompt="changed")["text"] == "reply to one"


def test_async_with_and_tasks_inherit_the_session(trace_path: Path) -> None:
    async def main() -> list[Any]:
        async with rewind.record(trace_path):
            return await asyncio.gather(*(asyncio.to_thread(model, prompt=str(i)) for i in range(3)))

    asyncio.run(main())
    assert len(Trace.load(trace_path)) == 3


def test_bad_arguments_are_clear_errors(trace_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown match strategy 'exact'"):
        rewind.replay(trace_path, match="exact")
    with pytest.raises(TypeError, match="redact="):
        rewind.record(trace_path, redact="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fork"):
        rewind.fork(trace_path, at=-1)
    session = rewind.record(trace_path)
    with session:
        pass
    with pytest.raises(rewind.RewindError, match="only once"), session:
        pass


def test_no_events_are_written_when_nothing_is_called(trace_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with rewind.record(trace_path):
            pass
        with rewind.replay(trace_path):
            pass
    assert len(Trace.load(trace_path)) == 0


def test_a_recording_keeps_skeletons_in_memory_not_every_payload(trace_path: Path) -> None:
    import tracemalloc

    def megabyte(turn: int) -> str:
        return f"{turn:04d}" + "x" * 999_996  # a fresh string each turn, as a real screenshot would be

    @rewind.tool(name="screenshot")
    def screenshot(turn: int) -> dict[str, Any]:
        return {"turn": turn, "png": megabyte(turn)}

    tracemalloc.start()
    try:
        with rewind.record(trace_path) as session:
            for turn in range(40):
                screenshot(turn)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 15_000_000, f"recording 40 MB of payloads peaked at {peak / 1e6:.1f} MB"
    # The bodies are still there, read back from the file on access.
    assert len(session.trace) == 40 and session.new_events[7].response == {"turn": 7, "png": megabyte(7)}
    assert session.trace[39].request == {"turn": 39}
