"""Provider faults (429, 500, overloaded, timeout) injected into every non-Stainless SDK's steps.

For each SDK (mistralai, cohere, google-genai, boto3 Bedrock, litellm, xai-sdk) a two-turn
agent on the real SDK client is recorded against the stub server (or the in-process xAI
gRPC server). Then, for each provider fault, the test provokes the same failure LIVE
(``fail_next`` / a server slower than the client's timeout) and checks that the injected
fault is that very class with the same attributes an agent's retry code reads (status,
retry-after, error code). Last, ``mutate`` runs a retrying agent against every fault at
every step: the SDK's own ``except`` catches each one, and the recording answers the retry.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import inspect
import itertools
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dropping_proxy import DroppingProxy

import rewind
from rewind.errors import ReplayedError
from rewind.storage.trace import Trace
from rewind.stub_server import StubServer
from rewind.testing.pytest_plugin import assert_resilient, resilience_cases
from rewind.what_if import mutate, plan

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch its cost map

PROVIDER_FAULTS = ["rate_limit", "server_error", "overloaded", "timeout"]
DEAD = "http://127.0.0.1:9"  # nothing listens: only the trace can answer
RETRY_AFTER = "2"
QUESTIONS = ("Plan a day in Paris.", "Shorten this plan: {answer}")


# --------------------------------------------------------------------------- one SDK


@dataclass
class Case:
    """One SDK: how to reach the servers, what its agent catches, and what its retry code reads."""

    name: str
    patch: Callable[[], Callable[[], None]]
    #: ``client(where, timeout)``: a client of the live server (``None``: the dead address).
    client: Callable[[Any, float | None], Any]
    ask: Callable[[Any, str], str]
    #: fault -> the SDK's class the agent's ``except`` names.
    errors: dict[str, Any]
    #: What retry logic reads from a caught error (status, retry-after, error code …).
    reads: Callable[[BaseException], dict[str, Any]]
    #: HTTP status of the provider's "overloaded" answer (``None``: gRPC).
    overloaded: int | None = 503

    def retryable(self) -> tuple[type[BaseException], ...]:
        found: list[type[BaseException]] = []
        for value in self.errors.values():
            found += list(value) if isinstance(value, tuple) else [value]
        return tuple(found)


def _header(headers: Any, name: str) -> Any:
    return None if headers is None else headers.get(name)


def _modules(*names: str) -> list[Any]:
    found = []
    for name in names:
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            pass
    return found


def _timeouts(*libraries: str) -> tuple[type[BaseException], ...]:
    """The timeout base class of every HTTP library installed: which one the SDK uses is its business."""
    classes = []
    for module in _modules(*libraries):
        classes.append(module.TimeoutException if hasattr(module, "TimeoutException") else module.exceptions.Timeout)
    return tuple(classes)


def mistral_case() -> Case:
    pytest.importorskip("mistralai")
    try:  # 2.x and later keep the SDK under mistralai.client
        from mistralai.client import Mistral, errors  # type: ignore[attr-defined,unused-ignore]
    except ImportError:  # 1.x
        from mistralai import Mistral  # type: ignore[attr-defined,no-redef,unused-ignore]
        from mistralai import models as errors  # type: ignore[no-redef,unused-ignore]

    def client(where: Any, timeout: float | None) -> Any:
        url = where.mistral_base_url if where is not None else DEAD + "/mistral"
        return Mistral(api_key="stub", server_url=url, **({"timeout_ms": int(timeout * 1000)} if timeout else {}))

    def reads(exc: BaseException) -> dict[str, Any]:
        if not isinstance(exc, errors.SDKError):
            return {}
        raw = exc.raw_response
        return {"status": exc.status_code, "raw": raw.status_code, "retry_after": _header(raw.headers, "retry-after")}

    status = errors.SDKError
    return Case(
        "mistral",
        rewind.patch_mistral,
        client,
        lambda c, text: (
            c.chat.complete(model="mistral-small-latest", messages=[{"role": "user", "content": text}])
            .choices[0]
            .message.content
        ),
        {"rate_limit": status, "server_error": status, "overloaded": status, "timeout": _timeouts("httpx", "httpx2")},
        reads,
    )


def cohere_case() -> Case:
    cohere = pytest.importorskip("cohere")
    from cohere.core.api_error import ApiError

    no_retries = {"max_retries": 0} if "max_retries" in inspect.signature(cohere.ClientV2.__init__).parameters else {}
    has_headers = "headers" in inspect.signature(ApiError.__init__).parameters  # 5.16 on

    def client(where: Any, timeout: float | None) -> Any:
        url = where.cohere_base_url if where is not None else DEAD
        return cohere.ClientV2(api_key="stub", base_url=url, timeout=timeout or 30, **no_retries)

    def reads(exc: BaseException) -> dict[str, Any]:
        if not isinstance(exc, ApiError):
            return {}
        out = {"status": exc.status_code, "body": type(exc.body).__name__}  # 5.13 parses a 429's body
        if has_headers:
            out["retry_after"] = _header(exc.headers, "retry-after")
        return out

    return Case(
        "cohere",
        rewind.patch_cohere,
        client,
        lambda c, text: (
            c.chat(model="command-a-03-2025", messages=[{"role": "user", "content": text}]).message.content[0].text
        ),
        {
            "rate_limit": cohere.errors.TooManyRequestsError,
            "server_error": cohere.errors.InternalServerError,
            "overloaded": cohere.errors.ServiceUnavailableError,
            "timeout": _timeouts("httpx"),
        },
        reads,
    )


def gemini_case() -> Case:
    pytest.importorskip("google.genai")
    from google import genai
    from google.genai import errors

    def client(where: Any, timeout: float | None) -> Any:
        options: dict[str, Any] = {"base_url": where.gemini_base_url if where is not None else DEAD}
        if timeout:
            options["timeout"] = int(timeout * 1000)
        return genai.Client(api_key="stub", http_options=options)

    def reads(exc: BaseException) -> dict[str, Any]:
        if not isinstance(exc, errors.APIError):
            return {}
        headers = getattr(exc.response, "headers", None)
        return {"code": exc.code, "status": exc.status, "retry_after": _header(headers, "retry-after")}

    return Case(
        "gemini",
        rewind.patch_gemini,
        client,
        lambda c, text: c.models.generate_content(model="gemini-2.5-flash", contents=text).text,
        {
            "rate_limit": errors.ClientError,
            "server_error": errors.ServerError,
            "overloaded": errors.ServerError,
            "timeout": _timeouts("httpx", "httpx2", "requests"),
        },
        reads,
    )


def bedrock_case() -> Case:
    boto3 = pytest.importorskip("boto3")
    from botocore import UNSIGNED
    from botocore.config import Config
    from botocore.exceptions import ClientError, ReadTimeoutError

    def client(where: Any, timeout: float | None) -> Any:
        if where is None:  # replay needs neither an endpoint nor credentials
            config = Config(signature_version=UNSIGNED)
            return boto3.client("bedrock-runtime", endpoint_url=DEAD, region_name="us-east-1", config=config)
        config = Config(retries={"total_max_attempts": 1}, read_timeout=timeout or 60)
        return boto3.client(
            "bedrock-runtime",
            endpoint_url=where.bedrock_endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="AKIAREWINDTESTKEY123",
            aws_secret_access_key="stub-secret",
            config=config,
        )

    def ask(c: Any, text: str) -> str:
        messages = [{"role": "user", "content": [{"text": text}]}]
        reply = c.converse(modelId="anthropic.claude-3-haiku-20240307-v1:0", messages=messages)
        return str(reply["output"]["message"]["content"][0]["text"])

    def reads(exc: BaseException) -> dict[str, Any]:
        if not isinstance(exc, ClientError):
            return {}
        response = exc.response
        return {
            "code": response["Error"]["Code"],
            "status": response["ResponseMetadata"]["HTTPStatusCode"],
            "operation": exc.operation_name,
        }

    modeled = client(None, None).exceptions  # the client's own classes, as an agent names them
    return Case(
        "bedrock",
        rewind.patch_bedrock,
        client,
        ask,
        {
            "rate_limit": modeled.ThrottlingException,
            "server_error": modeled.InternalServerException,
            # the 1.34 floor does not model ServiceUnavailableException: a plain ClientError there.
            "overloaded": getattr(modeled, "ServiceUnavailableException", ClientError),
            "timeout": ReadTimeoutError,
        },
        reads,
    )


def litellm_case() -> Case:
    litellm = pytest.importorskip("litellm")

    def client(where: Any, timeout: float | None) -> Any:
        route = {"api_base": where.openai_base_url if where is not None else DEAD + "/v1", "api_key": "stub"}
        return {**route, "num_retries": 0, "max_retries": 0, **({"timeout": timeout} if timeout else {})}

    def ask(route: Any, text: str) -> str:
        reply = litellm.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": text}], **route)
        return str(reply.choices[0].message.content)

    def reads(exc: BaseException) -> dict[str, Any]:
        headers = getattr(exc, "litellm_response_headers", None)
        return {
            "status": getattr(exc, "status_code", None),
            "provider": getattr(exc, "llm_provider", None),
            "model": getattr(exc, "model", None),
            "retry_after": _header(headers, "retry-after"),
        }

    return Case(
        "litellm",
        rewind.patch_litellm,
        client,
        ask,
        {
            "rate_limit": litellm.RateLimitError,
            # litellm maps an OpenAI-route 500 to InternalServerError now, to APIError in 1.5x.
            "server_error": (litellm.InternalServerError, litellm.APIError),
            "overloaded": litellm.ServiceUnavailableError,
            "timeout": litellm.Timeout,
        },
        reads,
    )


def _xai_server_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_xai_server", Path(__file__).parent.parent / "instrumentors" / "_xai_server.py"
    )
    assert spec is not None and spec.loader is not None
    module = sys.modules.get("_xai_server") or importlib.util.module_from_spec(spec)
    if "_xai_server" not in sys.modules:
        sys.modules["_xai_server"] = module
        spec.loader.exec_module(module)
    return module


def xai_case() -> Case:
    xai_sdk = pytest.importorskip("xai_sdk")
    grpc = pytest.importorskip("grpc")
    from xai_sdk.chat import user

    def client(where: Any, timeout: float | None) -> Any:
        address = where.address if where is not None else DEAD.removeprefix("http://")
        return xai_sdk.Client(api_key="stub", api_host=address, use_insecure_channel=True)

    def ask(c: Any, text: str) -> str:
        chat = c.chat.create(model="grok-4")
        chat.append(user(text))
        return str(chat.sample().content)

    def reads(exc: BaseException) -> dict[str, Any]:
        return {"code": exc.code()} if isinstance(exc, grpc.RpcError) else {}

    rpc = grpc.RpcError
    errors = {"rate_limit": rpc, "server_error": rpc, "overloaded": rpc, "timeout": rpc}
    return Case("xai", rewind.patch_xai, client, ask, errors, reads, overloaded=None)


CASES = {
    "mistral": mistral_case,
    "cohere": cohere_case,
    "gemini": gemini_case,
    "bedrock": bedrock_case,
    "litellm": litellm_case,
    "xai": xai_case,
}


def _streamed(name: str) -> Callable[[Any, str], str]:
    """``ask`` again, streaming: the text of every chunk the SDK yields."""
    if name == "mistral":
        return lambda c, text: "".join(
            chunk.data.choices[0].delta.content or ""
            for chunk in c.chat.stream(model="mistral-small-latest", messages=[{"role": "user", "content": text}])
        )
    if name == "cohere":
        return lambda c, text: "".join(
            str(event.type)
            for event in c.chat_stream(model="command-a-03-2025", messages=[{"role": "user", "content": text}])
        )
    if name == "gemini":
        return lambda c, text: "".join(
            chunk.text or "" for chunk in c.models.generate_content_stream(model="gemini-2.5-flash", contents=text)
        )
    if name == "bedrock":

        def converse_stream(c: Any, text: str) -> str:
            messages = [{"role": "user", "content": [{"text": text}]}]
            reply = c.converse_stream(modelId="anthropic.claude-3-haiku-20240307-v1:0", messages=messages)
            return "".join(e.get("contentBlockDelta", {}).get("delta", {}).get("text", "") for e in reply["stream"])

        return converse_stream
    if name == "litellm":
        import litellm

        return lambda route, text: "".join(
            chunk.choices[0].delta.content or ""
            for chunk in litellm.completion(
                model="openai/gpt-4o-mini", messages=[{"role": "user", "content": text}], stream=True, **route
            )
        )
    from xai_sdk.chat import user

    def sample_stream(c: Any, text: str) -> str:
        chat = c.chat.create(model="grok-4")
        chat.append(user(text))
        return "".join(chunk.content for _, chunk in chat.stream())

    return sample_stream


class Behind:
    """The stub server's base URLs, reached through a ``DroppingProxy`` at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.openai_base_url = url + "/v1"
        self.mistral_base_url = url + "/mistral"
        self.cohere_base_url = self.gemini_base_url = self.bedrock_endpoint_url = url


# --------------------------------------------------------------------------- the agent


def run_agent(case: Case, client: Any, *, retries: int = 0, seen: list[BaseException] | None = None) -> str:
    """Two turns, the second built on the first answer; retries what the SDK raises, honouring retry-after."""
    answer = ""
    for question in QUESTIONS:
        for attempt in itertools.count():
            try:
                answer = case.ask(client, question.format(answer=answer))
                break
            except case.retryable() as exc:
                if seen is not None:
                    seen.append(exc)
                if attempt >= retries:
                    raise
                wait = case.reads(exc).get("retry_after")
                time.sleep(min(float(wait or 0), 0.05))
    return answer


@pytest.fixture(params=list(CASES))
def case(request: pytest.FixtureRequest) -> Iterator[Case]:
    made = CASES[request.param]()
    undo = made.patch()
    try:
        yield made
    finally:
        undo()


def _record_golden(case: Case, path: Path) -> str:
    if case.name == "xai":
        with _xai_server_module().XAIStubServer() as server, rewind.record(path):
            return run_agent(case, case.client(server, None))
    with StubServer() as server, rewind.record(path):
        return run_agent(case, case.client(server, None))


def _live_failure(case: Case, fault: str, path: Path) -> tuple[BaseException, BaseException]:
    """The error the SDK raises when the provider really answers with ``fault``, recorded in ``path``,
    and the same error replayed from that recording (the class the instrumentor revives it as)."""
    with rewind.record(path), pytest.raises(Exception) as live:
        _fail_live(case, fault)
    with pytest.raises(Exception) as replayed, rewind.replay(path):
        case.ask(case.client(None, None), "hi")
    return live.value, replayed.value


def _fail_live(case: Case, fault: str) -> None:
    if case.name == "xai":
        import grpc

        code = {
            "rate_limit": grpc.StatusCode.RESOURCE_EXHAUSTED,
            "server_error": grpc.StatusCode.INTERNAL,
            "overloaded": grpc.StatusCode.UNAVAILABLE,
            "timeout": grpc.StatusCode.DEADLINE_EXCEEDED,
        }[fault]
        with _xai_server_module().XAIStubServer() as server:
            for _ in range(10):  # the channel's own retry policy retries UNAVAILABLE a few times
                server.servicer.fail_next(code, "failed")
            case.ask(case.client(server, None), "hi")
        return
    if fault == "timeout":
        with StubServer(latency=1.5) as slow:
            case.ask(case.client(slow, 0.3), "hi")
        return
    status = {"rate_limit": 429, "server_error": 500, "overloaded": case.overloaded}[fault]
    with StubServer() as server:
        server.fail_next(status or 500, headers=None if fault == "server_error" else {"retry-after": RETRY_AFTER})
        case.ask(case.client(server, None), "hi")


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("fault", PROVIDER_FAULTS)
def test_an_injected_provider_fault_is_the_error_the_sdk_raises_live(case: Case, fault: str, tmp_path: Path) -> None:
    golden = tmp_path / f"{case.name}.rewind"
    _record_golden(case, golden)
    live, replayed = _live_failure(case, fault, tmp_path / "live-error.rewind")

    (mutation,) = plan(golden, faults=[fault], steps=[0], retry_after=RETRY_AFTER)
    with (
        pytest.warns(rewind.UnconsumedEventsWarning),
        mutation.session(),
        pytest.raises(case.errors[fault]) as caught,
    ):
        run_agent(case, case.client(None, None))
    injected = caught.value
    assert isinstance(injected, ReplayedError) and injected.step == 0
    # The class a recording of the live error replays as (the SDK's own, as a ReplayedError) …
    assert type(injected) is type(replayed), f"{type(replayed).__mro__} replayed, {type(injected).__mro__} injected"
    assert isinstance(live, case.errors[fault])  # … which the agent's except clause catches live too
    assert case.reads(injected) == case.reads(live)
    if fault in ("rate_limit", "overloaded") and "retry_after" in case.reads(live):
        assert case.reads(injected)["retry_after"] == RETRY_AFTER


def test_a_retrying_agent_recovers_from_every_provider_fault(case: Case, tmp_path: Path) -> None:
    golden = tmp_path / f"{case.name}.rewind"
    answer = _record_golden(case, golden)
    seen: list[BaseException] = []

    def agent() -> str:
        return run_agent(case, case.client(None, None), retries=1, seen=seen)

    report = mutate(golden, agent, faults=PROVIDER_FAULTS, retry_after="0.01", timeout=30)
    assert report.baseline == answer
    assert [(r.mutation.step, r.mutation.fault) for r in report.results] == [
        (step, fault) for step in (0, 1) for fault in PROVIDER_FAULTS
    ]
    assert {r.outcome for r in report.results} == {"same"}, report.table()
    assert len(seen) == 2 * len(PROVIDER_FAULTS)  # each fault caught once, by the SDK's own class
    for exc, fault in zip(seen, PROVIDER_FAULTS * 2):
        assert isinstance(exc, case.errors[fault]) and isinstance(exc, ReplayedError)


def test_a_non_retrying_agent_crashes_with_the_class_a_live_error_is_recorded_as(case: Case, tmp_path: Path) -> None:
    golden = tmp_path / f"{case.name}.rewind"
    _record_golden(case, golden)
    _live, replayed = _live_failure(case, "rate_limit", tmp_path / "live-error.rewind")
    report = mutate(golden, lambda: run_agent(case, case.client(None, None)), faults=["rate_limit"], steps=[1])
    (result,) = report.results
    assert result.outcome == "crashed"
    assert isinstance(replayed, ReplayedError)
    assert result.error == replayed.original_type  # the report names the class the SDK raised live


def test_a_gemini_rate_limit_carries_the_apis_retry_info(tmp_path: Path) -> None:
    case = gemini_case()
    undo = case.patch()
    try:
        golden = tmp_path / "gemini.rewind"
        _record_golden(case, golden)
        (mutation,) = plan(golden, faults=["rate_limit"], steps=[0], retry_after="7")
        with pytest.warns(rewind.UnconsumedEventsWarning), mutation.session(), pytest.raises(Exception) as caught:
            run_agent(case, case.client(None, None))
    finally:
        undo()
    details = caught.value.details["error"]["details"]  # type: ignore[attr-defined]
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"} in details
    assert caught.value.code == 429 and caught.value.status == "RESOURCE_EXHAUSTED"  # type: ignore[attr-defined]


LONG = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"


def _drop_live(case: Case, path: Path) -> BaseException:
    """Record a stream whose connection drops live, and return the error its replay raises."""
    with rewind.record(path):
        try:
            if case.name == "xai":
                import grpc

                with _xai_server_module().XAIStubServer() as server:
                    server.servicer.fail_next(grpc.StatusCode.UNAVAILABLE, "Socket closed", after_chunks=2)
                    case.ask(case.client(server, None), LONG)
            else:
                with StubServer() as server, DroppingProxy(server.url) as proxy:
                    case.ask(case.client(Behind(proxy.url), None), LONG)
        except Exception:
            pass  # the SDK's error, recorded
        else:
            pytest.fail("the dropped connection did not reach the agent")
    with pytest.raises(Exception) as replayed, rewind.replay(path):
        case.ask(case.client(None, None), LONG)
    return replayed.value


def test_a_connection_reset_is_the_error_the_sdk_raises_when_a_stream_drops_live(case: Case, tmp_path: Path) -> None:
    streamed = dataclasses.replace(case, ask=_streamed(case.name))
    golden = tmp_path / f"{case.name}-stream.rewind"
    _record_golden(streamed, golden)
    assert Trace.load(golden).events[0].get("stream") is not None
    replayed = _drop_live(streamed, tmp_path / "live-drop.rewind")

    (mutation,) = plan(golden, faults=["connection_reset"], steps=[0])
    with pytest.warns(rewind.UnconsumedEventsWarning), mutation.session(), pytest.raises(Exception) as caught:
        run_agent(streamed, case.client(None, None))
    injected = caught.value
    assert isinstance(injected, ReplayedError) and injected.step == 0
    assert type(injected) is type(replayed), f"{type(replayed).__mro__} live, {type(injected).__mro__} injected"
    assert case.reads(injected) == case.reads(replayed)


def test_resilience_cases_cover_the_provider_faults_of_every_sdk(case: Case, tmp_path: Path) -> None:
    golden = tmp_path / f"{case.name}.rewind"
    _record_golden(case, golden)
    cases = resilience_cases(golden, faults=PROVIDER_FAULTS, steps=[1], retry_after="0.01")
    assert [c.id for c in cases] == [f"step1-{fault}" for fault in PROVIDER_FAULTS]
    for param in cases:
        survived = assert_resilient(param.values[0], lambda: run_agent(case, case.client(None, None), retries=1))
        assert survived.outcome == "same"
    with pytest.raises(pytest.fail.Exception, match=r"with rate_limit injected at step 1 .* crashed"):
        assert_resilient(cases[0].values[0], lambda: run_agent(case, case.client(None, None)))


def test_planning_imports_no_sdk(run_python: Any, tmp_path: Path) -> None:
    """``plan`` (the CLI's parent process, pytest collection) never pays for an SDK import:
    litellm's alone takes seconds. The fault's record is built when its run starts."""
    case = litellm_case()
    undo = case.patch()
    try:
        golden = tmp_path / "litellm.rewind"
        _record_golden(case, golden)
    finally:
        undo()
    result = run_python(
        f"""
        import sys
        from rewind.what_if import plan
        faults = sorted({{m.fault for m in plan({str(golden)!r})}})
        print(faults, [name for name in ("litellm", "openai") if name in sys.modules])
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['empty_content', 'overloaded', 'rate_limit', 'server_error', 'timeout'] []"


# --------------------------------------------------------------------------- async clients


def _async_asks(name: str) -> tuple[Callable[[Any, str], Any], Callable[[Any, str], Any]]:
    """(ask, ask streaming) of the SDK's async client: coroutine functions returning the text."""
    if name == "gemini":

        async def ask(c: Any, text: str) -> str:
            return str((await c.aio.models.generate_content(model="gemini-2.5-flash", contents=text)).text)

        async def stream(c: Any, text: str) -> str:
            chunks = await c.aio.models.generate_content_stream(model="gemini-2.5-flash", contents=text)
            return "".join([chunk.text or "" async for chunk in chunks])

        return ask, stream
    import xai_sdk
    from xai_sdk.chat import user

    def chat(c: Any, text: str) -> Any:
        client = xai_sdk.AsyncClient(api_key="stub", api_host=c._address, use_insecure_channel=True)
        made = client.chat.create(model="grok-4")
        made.append(user(text))
        return made

    async def ask_xai(c: Any, text: str) -> str:
        return str((await chat(c, text).sample()).content)

    async def stream_xai(c: Any, text: str) -> str:
        return "".join([chunk.content async for _, chunk in chat(c, text).stream()])

    return ask_xai, stream_xai


class _Address:
    """What the async xAI helpers build their client from (an AsyncClient per call, as its channel is per loop)."""

    def __init__(self, address: str) -> None:
        self._address = address


@pytest.mark.parametrize(
    ("sdk", "fault"),
    [
        ("gemini", "rate_limit"),
        ("gemini", "timeout"),
        ("gemini", "connection_reset"),
        ("xai", "rate_limit"),
        ("xai", "timeout"),
        ("xai", "connection_reset"),
    ],
)
def test_an_async_agent_gets_what_the_async_client_raises_live(sdk: str, fault: str, tmp_path: Path) -> None:
    """google-genai's async client talks through aiohttp (other timeout and dropped-stream classes),
    xai-sdk's through grpc.aio (AioRpcError): the fault served to a coroutine is that one."""
    case = CASES[sdk]()
    ask, stream = _async_asks(sdk)
    asker = stream if fault == "connection_reset" else ask
    offline = _Address(DEAD.removeprefix("http://")) if sdk == "xai" else case.client(None, None)
    undo = case.patch()
    try:
        golden = tmp_path / "golden.rewind"
        if sdk == "xai":
            with _xai_server_module().XAIStubServer() as server, rewind.record(golden):
                asyncio.run(asker(_Address(server.address), LONG))
        else:
            with StubServer() as server, rewind.record(golden):
                asyncio.run(asker(case.client(server, None), LONG))
        live_path = tmp_path / "live.rewind"
        with rewind.record(live_path):
            try:
                asyncio.run(_fail_async_live(case, fault, asker))
            except Exception:
                pass  # recorded
            else:
                pytest.fail("the live failure did not reach the agent")
        with pytest.raises(Exception) as replayed, rewind.replay(live_path):
            asyncio.run(asker(offline, LONG))
        (mutation,) = plan(golden, faults=[fault], steps=[0], retry_after=RETRY_AFTER)
        with warnings.catch_warnings(), mutation.session(), pytest.raises(Exception) as injected:
            warnings.simplefilter("ignore", rewind.UnconsumedEventsWarning)
            asyncio.run(asker(offline, LONG))
    finally:
        undo()
    assert isinstance(injected.value, ReplayedError)
    assert type(injected.value) is type(replayed.value), f"{type(replayed.value).__mro__} live"
    assert case.reads(injected.value) == case.reads(replayed.value)


async def _fail_async_live(case: Case, fault: str, asker: Callable[[Any, str], Any]) -> None:
    if case.name == "xai":
        import grpc

        code = {
            "rate_limit": grpc.StatusCode.RESOURCE_EXHAUSTED,
            "timeout": grpc.StatusCode.DEADLINE_EXCEEDED,
            "connection_reset": grpc.StatusCode.UNAVAILABLE,
        }[fault]
        with _xai_server_module().XAIStubServer() as server:
            server.servicer.fail_next(code, "failed", after_chunks=2 if fault == "connection_reset" else None)
            await asker(_Address(server.address), LONG)
        return
    if fault == "timeout":
        with StubServer(latency=1.5) as slow:
            await asker(case.client(slow, 0.3), LONG)
    elif fault == "connection_reset":
        with StubServer() as server, DroppingProxy(server.url) as proxy:
            await asker(case.client(Behind(proxy.url), None), LONG)
    else:
        with StubServer() as server:
            server.fail_next(429, headers={"retry-after": RETRY_AFTER})
            await asker(case.client(server, None), LONG)


@pytest.mark.parametrize("live", [False, True], ids=["replay", "live-fork"])
@pytest.mark.parametrize(("sdk", "fault"), [("xai", "rate_limit"), ("xai", "timeout"), ("gemini", "timeout")])
def test_a_sync_client_called_from_a_coroutine_gets_what_the_sync_client_raises(
    sdk: str, fault: str, live: bool, tmp_path: Path
) -> None:
    """Blocking calls inside ``async def`` are common (a sync client in an async web handler):
    the fault is the sync client's class, whatever the caller runs in."""
    case = CASES[sdk]()
    offline = case.client(None, None)
    undo = case.patch()
    try:
        golden = tmp_path / "golden.rewind"
        _record_golden(case, golden)
        _live, replayed = _live_failure(case, fault, tmp_path / "live-error.rewind")

        async def agent() -> str:
            return run_agent(case, offline)

        (mutation,) = plan(golden, faults=[fault], steps=[0], retry_after=RETRY_AFTER)
        with warnings.catch_warnings(), mutation.session(live=live), pytest.raises(Exception) as injected:
            warnings.simplefilter("ignore", rewind.UnconsumedEventsWarning)
            asyncio.run(agent())
    finally:
        undo()
    assert isinstance(injected.value, ReplayedError)
    assert type(injected.value) is type(replayed), f"{type(injected.value).__mro__} injected"
    assert case.reads(injected.value) == case.reads(replayed)
