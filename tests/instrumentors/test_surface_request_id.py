"""``request_id_of`` reads a response's ``_request_id`` exactly as ``getattr`` does, for SDK
models that declare it (openai) and for those that do not (fireworks)."""

from __future__ import annotations

from typing import Any

import pytest
from rewind.instrumentors._surface import request_id_of

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
}


def _models() -> list[Any]:
    models = []
    for module, name in (("openai.types.chat", "ChatCompletion"), ("fireworks.types.chat", "CompletionCreateResponse")):
        sdk = pytest.importorskip(module)
        models.append(getattr(sdk, name))
    return models


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__module__.split(".")[0])
def test_request_id_of_agrees_with_getattr(model: Any) -> None:
    missing = model.construct(**COMPLETION)
    assert request_id_of(missing) is getattr(missing, "_request_id", None) is None

    stamped = model.construct(**COMPLETION)
    object.__setattr__(stamped, "_request_id", "req_1")  # how replay stamps a revived model
    assert request_id_of(stamped) == getattr(stamped, "_request_id", None) == "req_1"

    if "_request_id" in model.__private_attributes__:  # the SDK's own stamp
        stamped = model.construct(**COMPLETION)
        stamped._request_id = "req_2"
        assert request_id_of(stamped) == getattr(stamped, "_request_id", None) == "req_2"
