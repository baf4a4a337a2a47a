"""litellm instrumentor overhead: ``litellm.completion`` recorded and replayed.

    python benchmarks/bench_litellm.py [--calls N] [--rounds R]

The ``bench_openai`` budgets, on non-streamed ``litellm.completion`` calls to an
``openai/...`` model whose HTTP answer comes from an in-process ``httpx`` mock transport
(litellm is handed an ``openai.OpenAI`` client built on it: no network, no server):

* record overhead: ``(recorded call - plain call) / plain call`` at most 20 %; the plain
  call is litellm's own in-process cost (routing, the openai SDK, building the
  ``ModelResponse``, its logging), through the same hook outside any session;
* replay: a replayed call (match, read the event back, rebuild the ``ModelResponse`` with
  its private state) at most as slow as litellm parsing the same response from wire
  bytes: the openai SDK's ``.parse()`` of the bytes into a ``ChatCompletion``, then
  litellm's conversion of it into a ``ModelResponse``, as its OpenAI route does.

CPU time of this thread per call in microseconds (litellm's background logging threads
are not counted, on either side). Each round alternates the two sides call by call; the
median round's ratio is reported. Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch at import

from _stainless_bench import MESSAGES, TOOLS, arguments, measure, report, response

MODEL = "openai/gpt-4o-mini"


def _openai_client(body: bytes) -> Any:
    import openai
    from rewind.instrumentors._stainless import SDKKit

    hx = SDKKit("openai").httpx

    def answer(request: Any) -> Any:
        return hx.Response(200, headers={"content-type": "application/json", "x-request-id": "req_1"}, content=body)

    http_client = hx.Client(transport=hx.MockTransport(answer))
    return openai.OpenAI(api_key="sk-bench", base_url="http://bench.invalid/v1", http_client=http_client, max_retries=0)


def _wire_parse(client: Any, body: bytes) -> Callable[[], Any]:
    """litellm's OpenAI route turning wire bytes into a ``ModelResponse``."""
    from litellm import ModelResponse
    from openai.types.chat import ChatCompletion
    from rewind.instrumentors._stainless import SDKKit, resolve
    from rewind.instrumentors.litellm import LiteLLMKit

    kit = SDKKit("openai")
    options = kit.request_options("/chat/completions")
    convert = LiteLLMKit().converter or resolve("litellm.utils:convert_to_model_response_object")

    def parse() -> Any:
        raw = kit.httpx.Response(
            200,
            headers={"content-type": "application/json"},
            content=body,
            request=kit.httpx.Request("POST", "http://bench.invalid/v1/chat/completions"),
        )
        wrapped = kit.api_response(
            raw=raw, cast_to=ChatCompletion, client=client, stream=False, stream_cls=None, options=options
        )
        completion = wrapped.parse()
        return convert(response_object=completion.model_dump(), model_response_object=ModelResponse())

    return parse


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__.split("\n\n")[0], argv)
    import litellm

    import rewind

    body = json.dumps(response("gpt-4o-mini")).encode()
    client = _openai_client(body)

    def call() -> Any:
        return litellm.completion(model=MODEL, messages=MESSAGES, tools=TOOLS, temperature=0, client=client)

    samples, unpatched = measure(call, _wire_parse(client, body), rewind.patch_litellm, args)
    return report("litellm", args.rounds, args.calls, samples, unpatched)


if __name__ == "__main__":
    sys.exit(main())
