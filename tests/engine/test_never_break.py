"""The agent's own call survives rewind: odd values, failing redactors, cancellation, pickling."""

from __future__ import annotations

import asyncio
import copy
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind import LossySerializationWarning, ReplayedError, RewindError
from rewind.errors import DivergenceError, RedactionError, TraceFormatError
from rewind.storage.trace import Trace


class Opaque:
    """An object with no JSON form (recorded as its repr)."""

    def __repr__(self) -> str:
        return "<Opaque>"


# -- values with no JSON form ------------------------------------------------------------


def test_a_redactor_returning_bytes_and_objects_is_recorded_not_raised(trace_path: Path) -> None:
    @rewind.tool
    def fetch(query: str) -> dict[str, str]:
        return {"data": "secret"}

    def scrub(payload: Any) -> Any:
        if isinstance(payload, dict) and "data" in payload:
            return {"data": b"\x00\xffraw", "handle": Opaque()}
        return payload

    lossy = pytest.warns(LossySerializationWarning, match=r"redact\(response\)\.handle")
    with lossy, rewind.record(trace_path, redact=scrub):
        assert fetch("q") == {"data": "secret"}  # the agent gets the live value
    event = Trace.load(trace_path)[0]
    assert event.response == {"data": {"__bytes_hex__": "00ff726177"}, "handle": "<Opaque>"}
    with rewind.replay(trace_path):
        assert fetch("q") == {"data": b"\x00\xffraw", "handle": "<Opaque>"}  # bytes come back exactly


def test_meta_with_bytes_tuple_keys_and_objects_is_recorded(trace_path: Path) -> None:
    meta = {"blob": b"\xff\x02", (1, "a"): "tuple key", "handle": Opaque(), "ok": 1}
    with pytest.warns(LossySerializationWarning, match=r"meta\.handle"), rewind.record(trace_path, meta=meta):
        pass
    loaded = Trace.load(trace_path).meta
    assert loaded == {"blob": {"__bytes_hex__": "ff02"}, '[1,"a"]': "tuple key", "handle": "<Opaque>", "ok": 1}


def test_cyclic_arguments_and_results_degrade_with_a_warning_naming_the_path(trace_path: Path) -> None:
    @rewind.tool
    def walk(items: list[Any]) -> dict[str, Any]:
        result: dict[str, Any] = {"n": len(items)}
        result["self"] = result
        return result

    items: list[Any] = [1, 2]
    items.append(items)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with rewind.record(trace_path):
            live = walk(items)
    assert live["self"] is live
    messages = [str(w.message) for w in caught if issubclass(w.category, LossySerializationWarning)]
    assert any("request.items[2]" in m and "cycle" in m for m in messages), messages
    assert any("response.self" in m and "cycle" in m for m in messages), messages
    event = Trace.load(trace_path)[0]
    assert event.request["items"][:2] == [1, 2] and "cycle" in event.request["items"][2]
    assert event.response["n"] == 3 and "cycle" in event.response["self"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossySerializationWarning)
        with rewind.replay(trace_path):
            assert walk(items)["n"] == 3  # the same cyclic call has the same identity


def test_arguments_nested_thousands_deep_degrade_instead_of_recursion_error(trace_path: Path) -> None:
    @rewind.tool
    def deep(tree: Any) -> Any:
        return tree

    tree: Any = "leaf"
    for _ in range(5000):
        tree = [tree]
    with pytest.warns(LossySerializationWarning, match="deeper than"), rewind.record(trace_path):
        assert deep(tree) is tree
    event = Trace.load(trace_path)[0]
    depth, node = 0, event.request["tree"]
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert isinstance(node, str) and "deeper than" in node
    assert 50 <= depth < 5000


def test_moderately_nested_values_stay_lossless(trace_path: Path) -> None:
    @rewind.tool
    def deep(tree: Any) -> Any:
        return tree

    tree: Any = {"leaf": b"\x00"}
    for _ in range(60):
        tree = {"k": [tree]}
    with warnings.catch_warnings():
        warnings.simplefilter("error", LossySerializationWarning)
        with rewind.record(trace_path):
            deep(tree)
    with rewind.replay(trace_path):
        assert deep(tree) == tree


class BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")


class BrokenMapping(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("items is broken")


def test_values_whose_own_conversion_raises_degrade_instead(trace_path: Path) -> None:
    @rewind.tool
    def use(value: Any) -> Any:
        return [BrokenRepr(), BrokenMapping(a=1)]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with rewind.record(trace_path):
            result = use(BrokenRepr())
    assert isinstance(result[0], BrokenRepr)
    paths = " ".join(str(w.message) for w in caught if issubclass(w.category, LossySerializationWarning))
    assert "request.value" in paths and "response[0]" in paths and "response[1]" in paths
    event = Trace.load(trace_path)[0]
    assert "repr raised RuntimeError" in event.request["value"]


# -- a redactor that raises -----------------------------------------------------------------


def _failing_redactor(payload: Any) -> Any:
    if isinstance(payload, dict) and "answer" in payload:
        raise KeyError("sk-live-SECRET")  # a redactor's own error may echo what it saw
    return payload


def test_a_redactor_raising_on_a_response_records_the_step_as_a_redaction_error(trace_path: Path) -> None:
    ran: list[str] = []

    @rewind.tool
    def ask(question: str) -> dict[str, str]:
        ran.append(question)
        return {"answer": "sk-live-SECRET"}

    @rewind.tool
    def after(x: int) -> int:
        return x + 1

    with rewind.record(trace_path, redact=_failing_redactor):
        with pytest.raises(RedactionError) as info:
            ask("q")
        assert after(1) == 2  # the session goes on
    error = info.value
    assert ran == ["q"]
    assert "_failing_redactor" in str(error) and "step 0" in str(error) and "KeyError" in str(error)
    assert error.step == 0 and isinstance(error.__cause__, KeyError)
    raw = trace_path.read_bytes()
    assert b"sk-live-SECRET" not in raw  # nothing unredacted ever reaches disk
    trace = Trace.load(trace_path)
    assert [e.seq for e in trace] == [0, 1] and not trace[0].ok
    # Replay raises the same error at the same step: no gap, no divergence.
    with rewind.replay(trace_path, require_full_consumption=True):
        with pytest.raises(RedactionError):
            ask("q")
        assert after(1) == 2
    assert ran == ["q"]


def test_a_redactor_raising_on_an_error_record_replaces_it(trace_path: Path) -> None:
    @rewind.tool
    def broken(x: int) -> None:
        raise ValueError("boom")

    def scrub(payload: Any) -> Any:
        if isinstance(payload, dict) and payload.get("message") == "boom":
            raise RuntimeError("no")
        return payload

    with rewind.record(trace_path, redact=scrub), pytest.raises(RedactionError, match="error record") as info:
        broken(1)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert b"boom" not in trace_path.read_bytes()


def test_a_redactor_raising_on_a_request_stops_the_call_before_it_runs(trace_path: Path) -> None:
    ran: list[str] = []

    @rewind.tool
    def send(token: str) -> str:
        ran.append(token)
        return "sent"

    def scrub(payload: Any) -> Any:
        if isinstance(payload, dict) and "token" in payload:
            raise KeyError("token")
        return payload

    refused = pytest.raises(RedactionError, match=r"KeyError on the request of tool call '.*send'.*did not run")
    with rewind.record(trace_path, redact=scrub), refused:
        send("sk-live-SECRET")
    assert ran == []
    assert b"sk-live-SECRET" not in trace_path.read_bytes()
    assert len(Trace.load(trace_path)) == 0


# -- cancellation ------------------------------------------------------------------------------


async def _cancelling_program() -> list[str]:
    started = asyncio.Event()

    @rewind.tool(name="slow")
    async def slow(x: int) -> int:
        started.set()
        await asyncio.sleep(30)
        return x

    @rewind.tool
    async def fast(x: int) -> int:
        return x * 2

    seen: list[str] = []
    task = asyncio.ensure_future(slow(1))
    try:
        await asyncio.wait_for(started.wait(), 0.5)
    except asyncio.TimeoutError:
        pass  # at replay the served step finishes at once
    task.cancel()
    try:
        await task
        seen.append("finished")
    except asyncio.CancelledError:
        seen.append("cancelled")
    seen.append(str(await fast(21)))
    return seen


def test_a_cancelled_async_call_records_and_replays_without_divergence(trace_path: Path) -> None:
    async def run(session: rewind.Session) -> list[str]:
        async with session:
            return await _cancelling_program()

    assert asyncio.run(run(rewind.record(trace_path))) == ["cancelled", "42"]
    trace = Trace.load(trace_path)
    assert [e.seq for e in trace] == [0, 1]
    assert trace[0].error is not None and trace[0].error.get("cancelled") is True
    session = rewind.replay(trace_path, require_full_consumption=True)
    assert asyncio.run(run(session)) == ["cancelled", "42"]
    assert session.divergences == []


def test_a_recorded_cancellation_outside_a_task_is_a_plain_replayed_error(trace_path: Path) -> None:
    async def record() -> None:
        async with rewind.record(trace_path):
            await _cancelling_program()

    asyncio.run(record())

    @rewind.tool(name="slow")
    def slow(x: int) -> int:  # the same name and request, called synchronously
        return x

    with pytest.warns(rewind.UnconsumedEventsWarning), rewind.replay(trace_path), pytest.raises(ReplayedError) as info:
        slow(1)
    assert type(info.value) is ReplayedError and info.value.original_type.endswith("CancelledError")


# -- errors cross processes ----------------------------------------------------------------


def _round_trips(error: BaseException) -> list[BaseException]:
    return [pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)]


def _divergence(trace_path: Path) -> DivergenceError:
    @rewind.tool
    def step(x: int) -> int:
        return x

    with rewind.record(trace_path):
        step(1)
    with pytest.raises(DivergenceError) as info, rewind.replay(trace_path):
        step(2)
    return info.value


def test_divergence_errors_survive_pickle_and_copy(trace_path: Path) -> None:
    error = _divergence(trace_path)
    for clone in _round_trips(error):
        assert type(clone) is DivergenceError
        assert str(clone) == str(error)
        assert (clone.step, clone.reason, clone.diff, clone.hint) == (error.step, error.reason, error.diff, error.hint)
        assert clone.expected is not None and clone.expected.seq == error.expected.seq
        assert clone.expected.request == error.expected.request


class ToolFailure(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _replayed(trace_path: Path, exc: Exception) -> ReplayedError:
    @rewind.tool
    def fails() -> None:
        raise exc

    with rewind.record(trace_path), pytest.raises(type(exc)):
        fails()
    with rewind.replay(trace_path), pytest.raises(ReplayedError) as info:
        fails()
    return info.value


def test_replayed_errors_and_their_synthetic_subclass_survive_pickle_and_copy(trace_path: Path) -> None:
    error = _replayed(trace_path, ToolFailure("rate limited", 429))
    assert isinstance(error, ToolFailure)
    for clone in _round_trips(error):
        assert isinstance(clone, ReplayedError) and isinstance(clone, ToolFailure)
        assert (str(clone), clone.code, clone.step, clone.original_type) == (
            "rate limited",
            429,
            0,
            error.original_type,
        )


def test_a_replayed_error_crosses_a_process_pool(trace_path: Path) -> None:
    error = _replayed(trace_path, ToolFailure("rate limited", 429))
    with ProcessPoolExecutor(1) as pool:
        clone = pool.submit(_echo, error).result()
    # This test module is imported in the worker, so the original class is rebuilt there.
    assert isinstance(clone, ReplayedError) and clone.code == 429 and clone.step == 0


def _echo(value: Any) -> Any:
    return value


def test_a_replayed_error_degrades_to_the_base_class_when_its_class_is_gone(trace_path: Path, run_python) -> None:
    error = _replayed(trace_path, ToolFailure("rate limited", 429))
    blob = pickle.dumps(error)
    code = (
        "import pickle, sys\n"
        f"e = pickle.loads({blob!r})\n"
        "print(type(e).__name__, type(e).__mro__[1].__name__, e, e.code, e.step, e.original_type)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ReplayedError", "RewindError", "rate", "limited", "429", "0", error.original_type]


def test_rewinds_other_errors_survive_pickle_and_copy() -> None:
    errors: list[BaseException] = [
        TraceFormatError("corrupt event line", path="run.rewind", line=3),
        RedactionError("redact=scrub raised KeyError", step=4),
        RewindError("plain"),
        rewind.ScriptExhausted("done"),
        rewind.LiveCallDuringReplay("live"),
    ]
    for error in errors:
        for clone in _round_trips(error):
            assert type(clone) is type(error) and str(clone) == str(error)
            assert vars(clone) == vars(error)


# -- decorated calls that raised HTTP errors --------------------------------------------------


def test_a_decorated_calls_http_error_replays_with_the_response_shim(trace_path: Path) -> None:
    httpx = pytest.importorskip("httpx")

    @rewind.tool
    def fetch(url: str) -> str:
        request = httpx.Request("GET", url, headers={"authorization": "Bearer sk-live-SECRET"})
        response = httpx.Response(
            503,
            headers={"retry-after": "7", "set-cookie": "session=sk-live-SECRET"},
            json={"error": "busy"},
            request=request,
        )
        response.raise_for_status()
        return response.text

    with rewind.record(trace_path), pytest.raises(httpx.HTTPStatusError):
        fetch("http://127.0.0.1:9/x")
    assert b"sk-live-SECRET" not in trace_path.read_bytes()
    with rewind.replay(trace_path), pytest.raises(httpx.HTTPStatusError) as info:
        fetch("http://127.0.0.1:9/x")
    response = info.value.response
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "7"
    assert response.json() == {"error": "busy"} and "busy" in response.text
    assert "set-cookie" not in response.headers


# -- break_at -----------------------------------------------------------------------------------


def test_break_at_past_the_end_is_a_value_error_naming_the_step_count(trace_path: Path) -> None:
    @rewind.tool
    def step(x: int) -> int:
        return x

    with rewind.record(trace_path):
        step(1)
        step(2)
    with pytest.raises(ValueError, match=r"break_at=5.*2 steps"), rewind.replay(trace_path, break_at=5):
        pass
    with pytest.warns(rewind.UnconsumedEventsWarning), rewind.replay(trace_path, break_at=1) as session:
        assert session.break_at == 1  # a step that exists is fine


# -- the same contracts through a real SDK client ------------------------------------------------


def test_an_sdk_call_under_a_raising_redactor_records_and_replays_the_redaction_error(trace_path: Path) -> None:
    openai = pytest.importorskip("openai")
    from rewind.setup.integrations import patch_openai
    from rewind.stub_server import StubServer

    def scrub(payload: Any) -> Any:
        if isinstance(payload, dict) and "choices" in payload:
            raise KeyError("choices")
        return payload

    unpatch = patch_openai()
    try:
        with StubServer() as server, openai.OpenAI(base_url=server.openai_base_url, api_key="k") as client:

            def ask() -> Any:
                return client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

            with rewind.record(trace_path, redact=scrub), pytest.raises(RedactionError, match="step 0"):
                ask()
            assert server.request_count == 1
            with rewind.replay(trace_path), pytest.raises(RedactionError):
                ask()
            assert server.request_count == 1  # replayed, not sent
    finally:
        unpatch()


def test_a_cancelled_sdk_call_records_and_replays_without_divergence(trace_path: Path) -> None:
    openai = pytest.importorskip("openai")
    from rewind.setup.integrations import patch_openai
    from rewind.stub_server import StubServer

    async def program(session: rewind.Session, base_url: str) -> list[str]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        seen: list[str] = []
        async with session:
            task = asyncio.ensure_future(
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "slow"}])
            )
            await asyncio.sleep(0.2)
            task.cancel()
            try:
                await task
                seen.append("finished")
            except asyncio.CancelledError:
                seen.append("cancelled")
            reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "next"}])
            seen.append(reply.choices[0].message.content or "")
        await client.close()
        return seen

    unpatch = patch_openai()
    try:
        with StubServer(latency=1.0) as server:
            recorded = asyncio.run(program(rewind.record(trace_path), server.openai_base_url))
        assert recorded[0] == "cancelled"
        session = rewind.replay(trace_path, require_full_consumption=True)
        assert asyncio.run(program(session, "http://127.0.0.1:9/v1")) == recorded  # offline
        assert session.divergences == []
    finally:
        unpatch()
