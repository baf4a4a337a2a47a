from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rewind_runs import anthropic_response, chat_response, record_calls, record_trip, trip_agent

import rewind
from rewind.inspection.accounting import (
    DEFAULT_PRICES,
    UNKNOWN_MODEL,
    Accounting,
    ModelPrice,
    ModelUsage,
    account,
    load_prices,
    parse_price,
    price_for,
    usage_of,
)


def record_stream(path: Path, chunks: list[Any], summary: Any = None, *, truncated: bool = False) -> Path:
    """One streamed llm step, recorded the way instrumentors record streams (through the core)."""
    with rewind.record(path):
        call = rewind.begin_call("llm", "chat.completions.create", {"model": "gpt-4o", "stream": True})
        assert call is not None
        call.succeed(summary, extra={"stream": {"chunks": chunks, "truncated": truncated}}, converted=True)
    return path


def only(acc: Accounting) -> ModelUsage:
    assert len(acc.per_model) == 1, acc.per_model
    return acc.per_model[0]


# -- usage shapes -----------------------------------------------------------------------


def test_openai_chat_usage_and_cost(tmp_path: Path) -> None:
    path = record_calls(tmp_path / "t.rewind", [chat_response("a", usage=(1200, 340))] * 2)
    acc = account(path)
    row = only(acc)
    assert (row.model, row.calls, row.calls_with_usage, row.calls_without_usage) == ("gpt-4o-2024-08-06", 2, 2, 0)
    assert (row.input_tokens, row.output_tokens, row.total_tokens) == (2400, 680, 3080)
    assert row.price == DEFAULT_PRICES["gpt-4o"] and row.priced
    assert row.cost == pytest.approx(0.0128)
    assert acc.total_cost == pytest.approx(0.0128)
    assert (acc.total_input_tokens, acc.total_output_tokens, acc.total_tokens) == (2400, 680, 3080)
    assert acc.complete and acc.unpriced_models == [] and acc.calls_without_usage == 0


def test_openai_responses_usage(tmp_path: Path) -> None:
    response = {
        "id": "resp_68ab12cd34ef56ab78cd90ef",
        "object": "response",
        "model": "gpt-4.1-2025-04-14",
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}],
        "usage": {"input_tokens": 1000, "output_tokens": 100, "total_tokens": 1100},
    }
    row = only(account(record_calls(tmp_path / "t.rewind", [response])))
    assert (row.model, row.input_tokens, row.output_tokens) == ("gpt-4.1-2025-04-14", 1000, 100)
    assert row.cost == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6)


def test_anthropic_usage_includes_cached_prompt_tokens(tmp_path: Path) -> None:
    row = only(account(record_calls(tmp_path / "t.rewind", [anthropic_response("hi", cache_read=1500)])))
    assert (row.model, row.input_tokens, row.output_tokens) == ("claude-sonnet-4-5-20250929", 2000, 120)


def test_gemini_and_cohere_usage(tmp_path: Path) -> None:
    gemini = {
        "candidates": [{"content": {"parts": [{"text": "hi"}]}}],
        "usage_metadata": {"prompt_token_count": 100, "candidates_token_count": 20, "thoughts_token_count": 5},
        "model_version": "gemini-2.5-flash",
    }
    cohere = {"id": "x", "message": {"content": []}, "usage": {"billed_units": {"input_tokens": 7, "output_tokens": 3}}}
    acc = account(record_calls(tmp_path / "t.rewind", [gemini, cohere]))
    rows = {m.model: m for m in acc.per_model}
    assert (rows["gemini-2.5-flash"].input_tokens, rows["gemini-2.5-flash"].output_tokens) == (100, 25)
    # The cohere reply names no model, so the request's model ("any") is used.
    assert (rows["any"].input_tokens, rows["any"].output_tokens, rows["any"].priced) == (7, 3, False)
    assert acc.unpriced_models == ["any"]


def test_openai_stream_usage_from_the_final_chunk(tmp_path: Path) -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini-2024-07-18", "choices": []}
    chunks = [
        {**chunk, "choices": [{"index": 0, "delta": {"content": "Hel"}}]},
        {**chunk, "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}], "usage": None},
        {**chunk, "usage": {"prompt_tokens": 50, "completion_tokens": 2, "total_tokens": 52}},
    ]
    row = only(account(record_stream(tmp_path / "t.rewind", chunks)))
    assert (row.model, row.calls_with_usage) == ("gpt-4o-mini-2024-07-18", 1)
    assert (row.input_tokens, row.output_tokens) == (50, 2)
    assert row.price == DEFAULT_PRICES["gpt-4o-mini"]


def test_stream_summary_usage_wins(tmp_path: Path) -> None:
    summary = chat_response("Hello", usage=(10, 1))
    row = only(account(record_stream(tmp_path / "t.rewind", [{"choices": []}], summary)))
    assert (row.input_tokens, row.output_tokens) == (10, 1)


def test_anthropic_stream_usage_is_split_across_events(tmp_path: Path) -> None:
    chunks = [
        {
            "type": "message_start",
            "message": {"model": "claude-haiku-4-5-20251001", "usage": {"input_tokens": 300, "output_tokens": 1}},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 42}},
        {"type": "message_stop"},
    ]
    row = only(account(record_stream(tmp_path / "t.rewind", chunks)))
    assert (row.model, row.input_tokens, row.output_tokens) == ("claude-haiku-4-5-20251001", 300, 42)
    assert row.cost == pytest.approx((300 * 1.0 + 42 * 5.0) / 1e6)


def test_responses_stream_usage_from_response_completed(tmp_path: Path) -> None:
    chunks = [
        {"type": "response.created", "response": {"model": "o4-mini", "usage": None}},
        {"type": "response.output_text.delta", "delta": "Hi"},
        {
            "type": "response.completed",
            "response": {"model": "o4-mini", "usage": {"input_tokens": 9, "output_tokens": 4}},
        },
    ]
    row = only(account(record_stream(tmp_path / "t.rewind", chunks)))
    assert (row.model, row.input_tokens, row.output_tokens) == ("o4-mini", 9, 4)


def test_streams_without_usage_are_unknown(tmp_path: Path) -> None:
    # A stream without stream_options={"include_usage": True}, and one cut short before its usage.
    plain = [{"model": "gpt-4o", "choices": [{"index": 0, "delta": {"content": "x"}}]}]
    for name, truncated in (("plain", False), ("cut", True)):
        acc = account(record_stream(tmp_path / f"{name}.rewind", plain, truncated=truncated))
        row = only(acc)
        assert (row.calls, row.calls_with_usage, row.calls_without_usage) == (1, 0, 1)
        assert (row.input_tokens, row.output_tokens, row.cost) == (0, 0, None)
        assert acc.total_cost is None and not acc.complete


def test_errored_and_usageless_calls_are_unknown_not_zero(tmp_path: Path) -> None:
    path = tmp_path / "t.rewind"

    @rewind.llm(name="chat")
    def chat(**request: Any) -> Any:
        if request["turn"] == 1:
            raise TimeoutError("timed out")
        return chat_response("ok", usage=(100, 10)) if request["turn"] == 0 else "plain text reply"

    with rewind.record(path):
        for turn in range(3):
            try:
                chat(model="gpt-4o", turn=turn)
            except TimeoutError:
                pass
    acc = account(path)
    rows = {m.model: m for m in acc.per_model}
    assert rows["gpt-4o-2024-08-06"].calls_with_usage == 1
    assert (rows["gpt-4o"].calls, rows["gpt-4o"].calls_without_usage, rows["gpt-4o"].cost) == (2, 2, None)
    assert acc.calls_without_usage == 2 and acc.calls == 3
    assert acc.total_cost == pytest.approx(rows["gpt-4o-2024-08-06"].cost)
    assert not acc.complete


def test_calls_with_no_model_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "t.rewind"

    @rewind.llm
    def ask(prompt: str) -> str:
        return "42"

    with rewind.record(path):
        ask("meaning of life?")
    row = only(account(path))
    assert (row.model, row.priced, row.calls_without_usage) == (UNKNOWN_MODEL, False, 1)


def test_only_llm_steps_and_only_live_ones_count(tmp_path: Path) -> None:
    trip = record_trip(tmp_path / "trip.rewind")
    assert only(account(trip)).calls == 2  # the memory and tool steps are not model calls
    forked = tmp_path / "forked.rewind"
    with rewind.fork(trip, at=2, save_as=forked):
        trip_agent()()
    acc = account(forked)
    assert acc.replayed_calls == 1
    assert (only(acc).calls, only(acc).input_tokens) == (1, 1800)


def test_accepts_paths_and_archives(tmp_path: Path) -> None:
    path = record_calls(tmp_path / "t.rewind", [chat_response("a")])
    rewind.Trace.load(path).dump(tmp_path / "t.rewind.gz")
    assert account(path) == account(tmp_path / "t.rewind.gz") == account(rewind.Trace.open(path))


def test_usage_of_reads_one_event(tmp_path: Path) -> None:
    trace = rewind.Trace.open(record_calls(tmp_path / "t.rewind", [chat_response("a", usage=(3, 4)), "no usage"]))
    assert [usage_of(event) for event in trace] == [(3, 4), None]


# -- prices -------------------------------------------------------------------------------


def test_price_lookup() -> None:
    assert price_for("gpt-4o") == ModelPrice(2.5, 10.0)
    assert price_for("gpt-4o-2024-08-06") == price_for("GPT-4o") == DEFAULT_PRICES["gpt-4o"]
    assert price_for("gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["gpt-4o-mini"]
    assert price_for("claude-opus-4-20250514") == DEFAULT_PRICES["claude-opus-4"]
    assert price_for("claude-opus-4-5-20251101") == DEFAULT_PRICES["claude-opus-4-5"]
    assert price_for("models/gemini-2.5-pro") == DEFAULT_PRICES["gemini-2.5-pro"]
    assert price_for("openrouter/google/gemini-2.5-pro") == DEFAULT_PRICES["gemini-2.5-pro"]
    assert price_for("gemini-2.5-flash-lite-preview-06-17") == DEFAULT_PRICES["gemini-2.5-flash-lite"]
    assert price_for("mistral-large-2411") == ModelPrice(2.0, 6.0)
    assert price_for("gpt-4omni") is None and price_for("llama3.2:8b") is None


def test_user_prices_override_equally_specific_entries_only() -> None:
    mine = {"gpt-4o": ModelPrice(1, 1), "llama3.2": ModelPrice(0, 0)}
    assert price_for("gpt-4o-2024-08-06", mine) == ModelPrice(1, 1)
    assert price_for("gpt-4o-mini", mine) == DEFAULT_PRICES["gpt-4o-mini"]
    assert price_for("llama3.2:8b", mine) == ModelPrice(0, 0)


def test_account_with_custom_prices(tmp_path: Path) -> None:
    path = record_calls(tmp_path / "t.rewind", [chat_response("a", model="local-model", usage=(1_000_000, 1_000_000))])
    assert account(path).unpriced_models == ["local-model"]
    acc = account(path, prices={"local-model": ModelPrice(1, 2)})
    assert acc.total_cost == pytest.approx(3.0) and acc.complete
    with pytest.raises(TypeError, match="must be a ModelPrice"):
        account(path, prices={"local-model": (1, 2)})  # type: ignore[dict-item]


def test_default_price_table_is_read_only_and_covers_the_providers() -> None:
    with pytest.raises(TypeError):
        DEFAULT_PRICES["gpt-4o"] = ModelPrice(0, 0)  # type: ignore[index]
    for model in ("gpt-4o", "gpt-5", "claude-sonnet-4-5", "gemini-2.5-pro", "mistral-large", "mistral-small"):
        assert model in DEFAULT_PRICES
    assert "ESTIMATE" in (rewind.accounting.__doc__ or "").upper() or "estimate" in (rewind.accounting.__doc__ or "")


def test_model_price_validation_and_cost() -> None:
    assert ModelPrice(2.5, 10).cost(2400, 680) == pytest.approx(0.0128)
    for bad in (-1, float("nan"), float("inf"), "2", True):
        with pytest.raises(ValueError, match="must be a number >= 0"):
            ModelPrice(bad, 1)  # type: ignore[arg-type]


def test_parse_price() -> None:
    assert parse_price("gpt-4o=2.5/10") == ("gpt-4o", ModelPrice(2.5, 10))
    assert parse_price(" my-model = 0/0.5") == ("my-model", ModelPrice(0, 0.5))
    for bad in ("gpt-4o", "=1/2", "gpt-4o=1", "gpt-4o=a/b", "gpt-4o=1/-2"):
        with pytest.raises(ValueError):
            parse_price(bad)


def test_load_prices(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"a": {"input": 1, "output": 2}, "b": [3, 4], "c": "5/6"}))
    assert load_prices(path) == {"a": ModelPrice(1, 2), "b": ModelPrice(3, 4), "c": ModelPrice(5, 6)}
    for content, message in (("[]", "a JSON object"), ("{", "not valid JSON"), ('{"a": {"in": 1}}', "'a'")):
        path.write_text(content)
        with pytest.raises(ValueError, match=message):
            load_prices(path)
    with pytest.raises(ValueError, match="cannot read prices file"):
        load_prices(tmp_path / "missing.json")
