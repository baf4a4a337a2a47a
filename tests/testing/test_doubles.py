from __future__ import annotations

from pathlib import Path

import pytest

import rewind


def test_scripted_llm_plays_values_exceptions_and_callables() -> None:
    llm = rewind.ScriptedLLM(["first", ValueError("second"), lambda request: request["prompt"].upper()])
    assert llm(prompt="a") == "first"
    with pytest.raises(ValueError, match="second"):
        llm.complete(prompt="b")
    assert llm(prompt="c") == "C"
    assert llm.remaining == 0 and [c["prompt"] for c in llm.calls] == ["a", "b", "c"]
    with pytest.raises(rewind.ScriptExhausted, match="ran out of script after 3"):
        llm(prompt="d")


def test_never_called_proves_a_replay_stayed_offline(trace_path: Path) -> None:
    backend = {"impl": rewind.ScriptedLLM([{"text": "hi"}])}

    @rewind.llm
    def model(prompt: str) -> dict[str, str]:
        return backend["impl"](prompt=prompt)

    with rewind.record(trace_path):
        model("x")
    backend["impl"] = rewind.NeverCalled(label="openai")
    with rewind.replay(trace_path):
        assert model("x") == {"text": "hi"}
    with pytest.raises(rewind.LiveCallDuringReplay, match=r"openai\.chat\.create was called"):
        backend["impl"].chat.create()
