"""An in-process xAI chat server over loopback gRPC, built from the ``xai_sdk``'s own generated stubs.

Deterministic: the answer echoes the last user text, a request that offers tools gets a
call to the first tool until a tool result is in the conversation, and ``fail_next``
makes the next call fail with a gRPC status (optionally after some stream chunks).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
from xai_sdk.proto import chat_pb2, chat_pb2_grpc, sample_pb2, usage_pb2

MODEL = "grok-stub"


class _Failure:
    def __init__(self, code: grpc.StatusCode, details: str, after_chunks: int | None) -> None:
        self.code = code
        self.details = details
        self.after_chunks = after_chunks


class XAIStubServicer(chat_pb2_grpc.ChatServicer):
    """Answers ``GetCompletion`` and ``GetCompletionChunk`` like the real service, deterministically."""

    def __init__(self) -> None:
        self.requests: list[chat_pb2.GetCompletionsRequest] = []
        self.metadata: list[dict[str, str]] = []
        self._failures: list[_Failure] = []
        self._lock = threading.Lock()

    def fail_next(
        self,
        code: grpc.StatusCode = grpc.StatusCode.RESOURCE_EXHAUSTED,
        details: str = "rate limited",
        *,
        after_chunks: int | None = None,
    ) -> None:
        with self._lock:
            self._failures.append(_Failure(code, details, after_chunks))

    def _log(self, request: chat_pb2.GetCompletionsRequest, context: grpc.ServicerContext) -> _Failure | None:
        with self._lock:
            self.requests.append(request)
            self.metadata.append({k: v for k, v in context.invocation_metadata() if isinstance(v, str)})
            return self._failures.pop(0) if self._failures else None

    # -- the answer --------------------------------------------------------------------
    @staticmethod
    def _answer(request: chat_pb2.GetCompletionsRequest) -> tuple[str, chat_pb2.ToolCall | None]:
        last_user = ""
        has_tool_result = False
        for message in request.messages:
            if message.role == chat_pb2.MessageRole.ROLE_USER:
                last_user = "".join(part.text for part in message.content)
            elif message.role == chat_pb2.MessageRole.ROLE_TOOL:
                has_tool_result = True
        tools = [t for t in request.tools if t.HasField("function")]
        if tools and not has_tool_result:
            fn = tools[0].function
            call = chat_pb2.ToolCall(
                id=f"call_{len(request.messages)}",
                type=chat_pb2.ToolCallType.TOOL_CALL_TYPE_CLIENT_SIDE_TOOL,
                function=chat_pb2.FunctionCall(name=fn.name, arguments=json.dumps({"query": last_user})),
            )
            return "", call
        if has_tool_result:
            results = [
                "".join(p.text for p in m.content) for m in request.messages if m.role == chat_pb2.MessageRole.ROLE_TOOL
            ]
            return f"Based on the tool: {results[-1]}", None
        return f"Grok stub says: {last_user}", None

    @staticmethod
    def _usage(request: chat_pb2.GetCompletionsRequest, text: str) -> usage_pb2.SamplingUsage:
        prompt = sum(len("".join(p.text for p in m.content).split()) for m in request.messages)
        completion = max(1, len(text.split()))
        return usage_pb2.SamplingUsage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        )

    def GetCompletion(self, request: chat_pb2.GetCompletionsRequest, context: grpc.ServicerContext) -> Any:
        failure = self._log(request, context)
        if failure is not None:
            context.abort(failure.code, failure.details)
        text, call = self._answer(request)
        outputs = []
        for index in range(max(1, request.n or 1)):
            message = chat_pb2.CompletionMessage(content=text, role=chat_pb2.MessageRole.ROLE_ASSISTANT)
            if call is not None:
                message.tool_calls.append(call)
            reason = sample_pb2.FinishReason.REASON_TOOL_CALLS if call else sample_pb2.FinishReason.REASON_STOP
            outputs.append(chat_pb2.CompletionOutput(index=index, finish_reason=reason, message=message))
        response = chat_pb2.GetChatCompletionResponse(
            id=f"resp-{len(self.requests)}",
            model=request.model or MODEL,
            outputs=outputs,
            usage=self._usage(request, text),
            system_fingerprint="fp-stub",
        )
        response.created.FromSeconds(1_700_000_000)
        return response

    def GetCompletionChunk(
        self, request: chat_pb2.GetCompletionsRequest, context: grpc.ServicerContext
    ) -> Iterator[chat_pb2.GetChatCompletionChunk]:
        failure = self._log(request, context)
        if failure is not None and failure.after_chunks is None:
            context.abort(failure.code, failure.details)
        text, call = self._answer(request)
        pieces = [text[i : i + 8] for i in range(0, len(text), 8)] or [""]
        response_id = f"resp-{len(self.requests)}"
        for number, piece in enumerate(pieces):
            if failure is not None and number == failure.after_chunks:
                context.abort(failure.code, failure.details)
            delta = chat_pb2.Delta(content=piece, role=chat_pb2.MessageRole.ROLE_ASSISTANT)
            chunk = chat_pb2.GetChatCompletionChunk(id=response_id, model=request.model or MODEL)
            chunk.outputs.append(chat_pb2.CompletionOutputChunk(index=0, delta=delta))
            yield chunk
        final = chat_pb2.CompletionOutputChunk(index=0, delta=chat_pb2.Delta())
        if call is not None:
            final.delta.tool_calls.append(call)
        final.finish_reason = sample_pb2.FinishReason.REASON_TOOL_CALLS if call else sample_pb2.FinishReason.REASON_STOP
        last = chat_pb2.GetChatCompletionChunk(id=response_id, model=request.model or MODEL)
        last.outputs.append(final)
        last.usage.CopyFrom(self._usage(request, text))
        yield last


class XAIStubServer:
    """``with XAIStubServer() as server: xai_sdk.Client(api_host=server.address, use_insecure_channel=True)``."""

    def __init__(self) -> None:
        self.servicer = XAIStubServicer()
        self._server: grpc.Server | None = None
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> XAIStubServer:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        chat_pb2_grpc.add_ChatServicer_to_server(self.servicer, server)
        self.port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._server = None

    def __enter__(self) -> XAIStubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
