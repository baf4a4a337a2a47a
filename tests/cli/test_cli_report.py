"""``rewind report`` and ``rewind diff --html``, through the installed console script."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rewind_runs import record_trip

from rewind.inspection.accounting import DEFAULT_PRICES


def page_data(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="rw-data">(.*?)</script>', text, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_report_writes_beside_the_trace(run_cli, tmp_path: Path) -> None:
    trace = record_trip(tmp_path / "run.rewind", meta={"ticket": "T-42"})
    result = run_cli("report", trace)
    assert result.returncode == 0, result.stderr
    target = tmp_path / "run.html"
    assert result.stdout.startswith(f"wrote {target} (")
    assert "needs no network" in result.stdout
    data = page_data(target)
    assert data["trace"]["label"] == str(trace)
    assert data["trace"]["columns"]["name"] == ["recall", "chat", "search", "chat"]
    assert data["trace"]["header"]["meta"] == {"ticket": "T-42"}


def test_report_options(run_cli, tmp_path: Path) -> None:
    trace = record_trip(tmp_path / "run.rewind")
    out = tmp_path / "deep" / "er" / "r.html"
    result = run_cli("report", trace, "-o", out, "--title", "Ticket 42", "--price", "gpt-4o=1000/1000")
    assert result.returncode == 0, result.stderr
    data = page_data(out)
    assert data["trace"]["label"] == "Ticket 42"
    # The page prices by the override first, then the list prices (it works out the cost
    # itself: tests/report/test_report_browser.py checks it against rewind.account).
    prices = data["trace"]["prices"]
    assert prices[0] == ["gpt-4o", 1000, 1000, 0]
    assert ["gpt-4o", DEFAULT_PRICES["gpt-4o"].input, DEFAULT_PRICES["gpt-4o"].output, 1] in prices
    assert DEFAULT_PRICES["gpt-4o"].input != 1000


def test_report_cuts_long_strings_unless_inline(run_cli, tmp_path: Path) -> None:
    import rewind

    @rewind.tool(name="dump")
    def dump(size: int) -> str:
        return "z" * size

    trace = tmp_path / "big.rewind"
    with rewind.record(trace):
        dump(200_000)
    cut = run_cli("report", trace, "-o", tmp_path / "cut.html")
    assert cut.returncode == 0
    assert "note: 1 steps with long strings or big images cut" in cut.stdout
    assert "--inline" in cut.stdout
    whole = run_cli("report", trace, "--inline", "-o", tmp_path / "whole.html")
    assert whole.returncode == 0 and "note:" not in whole.stdout
    assert (tmp_path / "whole.html").stat().st_size > 200_000 > (tmp_path / "cut.html").stat().st_size


def test_report_bad_input(run_cli, input_error, tmp_path: Path) -> None:
    input_error(run_cli("report", tmp_path / "missing.rewind"), "missing.rewind", "no such trace file")
    (tmp_path / "notes.txt").write_text("hello\n")
    input_error(run_cli("report", tmp_path / "notes.txt"), "not a rewind trace")
    trace = record_trip(tmp_path / "run.rewind")
    input_error(run_cli("report", trace, "-o", tmp_path), "is a directory")
    before = trace.read_bytes()
    input_error(run_cli("report", trace, "-o", trace), "is the trace being reported on")
    assert trace.read_bytes() == before
    assert not list(tmp_path.glob("*.html"))


def test_diff_html(run_cli, input_error, tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    b = record_trip(tmp_path / "b.rewind", extra_search=True)
    result = run_cli("diff", a, b, "--html", tmp_path / "d.html")
    assert result.returncode == 1  # diverged, as without --html
    assert "first divergence" in result.stdout and "wrote" not in result.stdout
    assert result.stderr.startswith(f"wrote {tmp_path / 'd.html'} (")
    data = page_data(tmp_path / "d.html")
    assert data["view"] == "diff" and data["first"] is not None
    assert data["rows"][data["first"]]["op"] in ("changed", "inserted")
    input_error(run_cli("diff", a, b, "--html", b), "is the trace being reported on")
    same = run_cli("diff", a, a, "--html", tmp_path / "same.html", "--inline")
    assert same.returncode == 0 and page_data(tmp_path / "same.html")["first"] is None


def test_diff_inline_needs_html(run_cli, input_error, tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    input_error(run_cli("diff", a, a, "--inline"), "--inline only applies to --html")


def test_help_lists_report(run_cli) -> None:
    result = run_cli("--help")
    assert "report" in result.stdout
    assert "--inline" in run_cli("report", "--help").stdout
    assert "--html FILE" in run_cli("diff", "--help").stdout
