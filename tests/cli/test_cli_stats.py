from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rewind_runs import anthropic_response, chat_response, record_calls, record_trip, trip_agent

import rewind


def table_row(output: str, model: str) -> list[str]:
    for line in output.splitlines():
        if line.strip().startswith(model + " "):
            return line.split()
    raise AssertionError(f"no row for {model} in:\n{output}")


@pytest.fixture
def trip(tmp_path: Path) -> Path:
    return record_trip(tmp_path / "trip.rewind", extra_search=True, failing_search=True)


def test_stats_summarizes_activity(run_cli, trip: Path) -> None:
    result = run_cli("stats", trip)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "recorded 20" in out.splitlines()[0]
    assert "steps:      6  (llm 2 · tool 3 · memory 1)" in out
    assert "errors:     1  (first: step 4 tool 'search': SearchDown: search backend unavailable)" in out
    assert re.search(r"live time:  [\d.]+ (ms|s) across 6 live calls", out)
    assert "wall time:" in out


def test_tokens_and_cost_from_recorded_usage(run_cli, trip: Path) -> None:
    out = run_cli("stats", trip).stdout
    assert "tokens & cost (estimated):" in out
    # 1200 + 1800 input and 40 + 300 output tokens at gpt-4o's $2.50 / $10 per 1M.
    assert table_row(out, "gpt-4o-2024-08-06") == ["gpt-4o-2024-08-06", "2", "3000", "340", "$0.0109"]
    assert table_row(out, "total") == ["total", "2", "3000", "340", "$0.0109"]
    assert "ESTIMATE" in out and "USD per 1M tokens" in out


def test_spec_example_figures(run_cli, tmp_path: Path) -> None:
    path = record_calls(tmp_path / "two.rewind", [chat_response("a", usage=(1200, 340))] * 2)
    out = run_cli("stats", path).stdout
    assert table_row(out, "gpt-4o-2024-08-06") == ["gpt-4o-2024-08-06", "2", "2400", "680", "$0.0128"]


def test_no_cost_hides_dollars(run_cli, trip: Path) -> None:
    out = run_cli("stats", trip, "--no-cost").stdout
    assert "tokens:" in out and "$" not in out and "ESTIMATE" not in out
    assert table_row(out, "total") == ["total", "2", "3000", "340"]


def test_price_override_and_prices_file(run_cli, trip: Path, tmp_path: Path) -> None:
    out = run_cli("stats", trip, "--price", "gpt-4o=1/1").stdout
    assert table_row(out, "total")[-1] == "$0.0033"
    assert "your overrides" in out
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-2024-08-06": {"input": 10, "output": 0}}))
    out = run_cli("stats", trip, "--prices-file", prices).stdout
    assert table_row(out, "total")[-1] == "$0.0300"
    # --price wins over the file.
    out = run_cli("stats", trip, "--prices-file", prices, "--price", "gpt-4o-2024-08-06=0/1000").stdout
    assert table_row(out, "total")[-1] == "$0.3400"


def test_calls_without_usage_are_unknown_never_zero(run_cli, tmp_path: Path) -> None:
    path = record_calls(
        tmp_path / "mixed.rewind",
        [
            chat_response("a", usage=(1000, 100)),
            chat_response("b", usage=None),
            chat_response("c", model="gpt-4o-mini", usage=None),
        ],
    )
    out = run_cli("stats", path).stdout
    assert table_row(out, "gpt-4o-2024-08-06") == ["gpt-4o-2024-08-06", "2", "1000+?", "100+?", "$0.0035+?"]
    assert table_row(out, "gpt-4o-mini") == ["gpt-4o-mini", "1", "?", "?", "?"]
    assert table_row(out, "total") == ["total", "3", "1000+?", "100+?", "$0.0035+?"]
    assert "2 call(s) recorded no usage" in out and "unknown, not zero" in out


def test_errored_llm_calls_are_unknown(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "err.rewind"

    @rewind.llm(name="chat")
    def chat(**request: object) -> dict[str, object]:
        raise TimeoutError("provider timed out")

    with rewind.record(path), pytest.raises(TimeoutError):
        chat(model="gpt-4o", messages=[])
    out = run_cli("stats", path).stdout
    assert table_row(out, "gpt-4o") == ["gpt-4o", "1", "?", "?", "?"]
    assert "errors:     1" in out


def test_unpriced_model_says_how_to_price_it(run_cli, tmp_path: Path) -> None:
    path = record_calls(tmp_path / "local.rewind", [chat_response("hi", model="llama3.2:8b", usage=(10, 5))])
    out = run_cli("stats", path).stdout
    assert table_row(out, "llama3.2:8b") == ["llama3.2:8b", "1", "10", "5", "n/a"]
    assert "pass --price llama3.2:8b=IN/OUT" in out
    out = run_cli("stats", path, "--price", "llama3.2:8b=0/0").stdout
    assert table_row(out, "llama3.2:8b")[-1] == "$0.0000"


def test_anthropic_usage_counts_cached_input(run_cli, tmp_path: Path) -> None:
    path = record_calls(tmp_path / "claude.rewind", [anthropic_response("hi", cache_read=1500)])
    out = run_cli("stats", path).stdout
    # 500 input + 1500 cache-read tokens, 120 output, at $3 / $15 per 1M.
    assert table_row(out, "claude-sonnet-4-5-20250929") == ["claude-sonnet-4-5-20250929", "1", "2000", "120", "$0.0078"]


def test_fork_counts_only_its_live_suffix(run_cli, trip: Path, tmp_path: Path) -> None:
    forked = tmp_path / "forked.rewind"
    with rewind.fork(trip, at=2, save_as=forked):
        trip_agent(extra_search=True, failing_search=True)()
    out = run_cli("stats", forked).stdout
    assert "replayed:   2 steps served from the source trace" in out
    assert table_row(out, "gpt-4o-2024-08-06")[:4] == ["gpt-4o-2024-08-06", "1", "1800", "300"]
    assert "1 llm step served from the source trace is not counted" in out


def test_trace_without_llm_steps(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "tools.rewind"

    @rewind.tool
    def ping() -> str:
        return "pong"

    with rewind.record(path):
        ping()
    out = run_cli("stats", path).stdout
    assert "tokens & cost: no live llm steps" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--price", "gpt-4o"], "is not MODEL=IN/OUT"),
        (["--price", "gpt-4o=1"], "a price is IN/OUT"),
        (["--price", "gpt-4o=-1/2"], "a price is IN/OUT"),
        (["--price", "=1/2"], "is not MODEL=IN/OUT"),
    ],
)
def test_bad_price_is_a_usage_error(run_cli, trip: Path, args: list[str], fragment: str) -> None:
    result = run_cli("stats", trip, *args)
    assert result.returncode == 2
    assert fragment in result.stderr and "Traceback" not in result.stderr


def test_bad_prices_file(run_cli, trip: Path, tmp_path: Path, input_error) -> None:
    input_error(run_cli("stats", trip, "--prices-file", tmp_path / "none.json"), "none.json", "cannot read prices file")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    input_error(run_cli("stats", trip, "--prices-file", broken), "broken.json", "not valid JSON", "--prices-file")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"gpt-4o": "cheap"}))
    input_error(run_cli("stats", trip, "--prices-file", wrong), "wrong.json", "'gpt-4o'", "IN/OUT")
