"""The HTML report in a real headless Chromium (Debian's ``chromium``; ``make browser``).

Each page must load with no console error, draw its step list, show a step's
conversation, filter on search, highlight a diff's first divergence, never run script
from a hostile trace, and stay quick at 5,000 steps. Screenshots are kept under the
test's tmp folder and checked not to be blank. Without Chromium these tests skip;
tests/report/test_report.py checks the same pages without a browser.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_browser import Chromium, Page, blankness, find_chromium
from report_runs import HOSTILE, record_agent_run, write_odd_trace
from rewind_runs import record_long, record_trip

from rewind.inspection.accounting import ModelPrice, account
from rewind.report import Limits, write_diff_report, write_report
from rewind.stub_server import StubServer

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (make browser installs Debian's chromium package)"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    assert CHROMIUM is not None
    with Chromium(CHROMIUM) as chromium:
        yield chromium


@pytest.fixture
def page(browser: Chromium) -> Page:
    return browser.page()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reports")
    with StubServer() as stub:
        paris = record_agent_run(folder / "paris.rewind", stub)
    with StubServer() as stub:
        rome = record_agent_run(folder / "rome.rewind", stub, city="Rome")
    with StubServer() as stub:
        hostile = record_agent_run(folder / "hostile.rewind", stub, hostile=True)
    out = {"trace": folder / "paris.html", "diff": folder / "diff.html", "hostile": folder / "hostile.html"}
    write_report(paris, out["trace"])
    write_diff_report(paris, rome, out["diff"])
    write_report(hostile, out["hostile"])
    return out


def open_report(page: Page, path: Path) -> None:
    page.navigate(path.as_uri())
    page.wait_until("document.body.dataset.ready === '1'")


def click_step(page: Page, seq: int) -> str:
    """Click the list row of step ``seq`` and return the detail pane's text."""
    page.evaluate(f"document.querySelector('.rw-row[data-step=\"{seq}\"]').click()")
    page.wait_until(f"document.querySelector('#rw-detail .rw-step[data-step=\"{seq}\"]') !== null")
    return str(page.evaluate("document.getElementById('rw-detail').innerText"))


def search(page: Page, text: str) -> str:
    page.evaluate(
        "(() => { const box = document.getElementById('rw-search'); box.value = "
        + json.dumps(text)
        + "; box.dispatchEvent(new Event('input')); })()"
    )
    time.sleep(0.25)  # the search box is debounced
    return str(page.evaluate("document.getElementById('rw-count').textContent"))


def set_control(page: Page, ident: str, field: str, value: object) -> None:
    """Set a select's value or a checkbox's state the way a user's change would."""
    page.evaluate(
        f"(() => {{ const c = document.getElementById({json.dumps(ident)}); c.{field} = {json.dumps(value)};"
        " c.dispatchEvent(new Event('change')); })()"
    )


def visible_steps(page: Page) -> list[int]:
    return [int(s) for s in page.evaluate("[...document.querySelectorAll('.rw-row')].map(r => r.dataset.step)")]


def assert_not_blank(page: Page, path: Path) -> None:
    colours, busy = blankness(page.screenshot(path))
    assert colours > 20 and busy > 0.05, (path, colours, busy)


def test_trace_report(page: Page, reports: dict[str, Path], tmp_path: Path) -> None:
    open_report(page, reports["trace"])
    assert page.problems() == []
    assert visible_steps(page) == list(range(10))
    assert page.evaluate("document.querySelector('.rw-timeline canvas').getBoundingClientRect().height") > 20
    # A chat step: the conversation, the tool call paired with its result, the image.
    text = click_step(page, 3)
    assert "Conversation".upper() in text.upper() and "Plan a weekend in Paris" in text
    paired = page.evaluate("document.querySelector('#rw-detail .call .result').innerText")
    assert "forecast" in paired and "sunny" in paired
    page.wait_until("[...document.querySelectorAll('#rw-detail img.thumb')].every(i => i.complete)")
    assert page.evaluate("document.querySelector('#rw-detail img.thumb').naturalWidth") == 8
    assert "27 in · 12 out" in text or " in · " in text  # tokens from the recorded usage
    # Anthropic: the image block as a thumbnail; the failed tool; the truncated stream.
    click_step(page, 8)
    assert page.evaluate("document.querySelectorAll('#rw-detail img.thumb').length") == 1
    assert "booking backend down" in click_step(page, 7)
    assert "Truncated stream" in click_step(page, 9)
    assert_not_blank(page, tmp_path / "trace.png")
    # A click on a bar of the timeline opens that step.
    x, y = page.evaluate(
        """(() => {
            const steps = window.rewindReport.trace.steps;
            const total = Math.max(...steps.map(s => s.t + s.d)), s = steps[8];
            const box = document.querySelector('.rw-timeline canvas').getBoundingClientRect();
            return [box.left + (s.t + s.d / 2) / total * box.width, box.top + 18 + 8];
        })()"""
    )
    for kind in ("mousePressed", "mouseReleased"):
        page.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})
    page.wait_until("document.querySelector('#rw-detail .rw-step[data-step=\"8\"]') !== null")
    # Filters: search (over bodies too), kind, errors only.
    assert search(page, "food") == "1 of 10 steps" and visible_steps(page) == [6]
    assert search(page, "") == "10 steps"
    set_control(page, "rw-kind", "value", "tool")
    assert page.evaluate("document.getElementById('rw-count').textContent") == "5 of 10 steps"
    set_control(page, "rw-errors", "checked", True)
    assert visible_steps(page) == [7]
    assert page.problems() == []


def test_a_fragment_points_at_a_step(page: Page, reports: dict[str, Path]) -> None:
    open_report(page, reports["trace"])
    click_step(page, 5)
    assert page.evaluate("location.hash") == "#step-5"
    page.navigate("about:blank")  # a new document: only the fragment differs otherwise
    page.navigate(reports["trace"].as_uri() + "#step-8")
    page.wait_until("document.querySelector('#rw-detail .rw-step[data-step=\"8\"]') !== null")
    page.navigate(reports["diff"].as_uri() + "#row-4")
    page.wait_until("document.querySelector('#rw-detail .rw-diffrow[data-row=\"4\"]') !== null")
    assert page.problems() == []


def test_keyboard_moves_through_the_steps(page: Page, reports: dict[str, Path]) -> None:
    open_report(page, reports["trace"])
    click_step(page, 0)
    for _ in range(2):
        page.send(
            "Input.dispatchKeyEvent",
            {"type": "keyDown", "key": "ArrowDown", "code": "ArrowDown", "windowsVirtualKeyCode": 40},
        )
        page.send(
            "Input.dispatchKeyEvent",
            {"type": "keyUp", "key": "ArrowDown", "code": "ArrowDown", "windowsVirtualKeyCode": 40},
        )
    page.wait_until("document.querySelector('#rw-detail .rw-step[data-step=\"2\"]') !== null")


def test_hostile_trace_runs_no_script(page: Page, reports: dict[str, Path], tmp_path: Path) -> None:
    open_report(page, reports["hostile"])
    for seq in range(10):
        click_step(page, seq)
        page.evaluate("document.querySelectorAll('#rw-detail details').forEach(d => { d.open = true; })")
        page.wait_until("document.querySelectorAll('#rw-detail details pre').length > 0")
        assert page.evaluate("typeof window.__pwned") == "undefined", seq
    # Shown as text, exactly; nothing became an element.
    body = page.evaluate("document.body.innerText")
    assert '</script><script>window.__pwned = "script"</script>' in body
    assert page.evaluate("document.querySelectorAll('img:not(.thumb), script:not([id]):not([type])').length") == 1
    assert page.evaluate("document.title").startswith("rewind")
    assert page.problems() == []  # not even a blocked attempt
    assert HOSTILE[:20] in body
    assert_not_blank(page, tmp_path / "hostile.png")


def test_other_providers_read_as_conversations(page: Page, tmp_path: Path) -> None:
    import rewind

    @rewind.llm(name="gemini")
    def gemini(**request: object) -> dict:
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [{"function_call": {"name": "lookup", "args": {"q": "Rome"}}}]}}
            ],
            "usage_metadata": {"prompt_token_count": 9, "candidates_token_count": 4},
            "model_version": "gemini-2.5-flash",
        }

    @rewind.llm(name="cohere")
    def cohere(**request: object) -> dict:
        return {"message": {"role": "assistant", "content": [{"type": "text", "text": "Ciao from Cohere"}]}}

    trace = tmp_path / "others.rewind"
    with rewind.record(trace):
        gemini(
            model="gemini-2.5-flash",
            contents=[
                {"role": "user", "parts": [{"text": "Find Rome"}]},
                {"role": "model", "parts": [{"function_call": {"name": "lookup", "args": {"q": "x"}}}]},
                {"role": "user", "parts": [{"function_response": {"name": "lookup", "response": {"hits": 3}}}]},
            ],
        )
        cohere(model="command-a", messages=[{"role": "user", "content": "Say ciao"}])
    target = tmp_path / "others.html"
    write_report(trace, target)
    open_report(page, target)
    text = click_step(page, 0)
    assert "Find Rome" in text and "lookup" in text
    assert "hits" in page.evaluate("document.querySelector('#rw-detail .call .result').innerText")  # paired by name
    assert "9 in · 4 out" in text
    assert "Ciao from Cohere" in click_step(page, 1)
    assert page.problems() == []


def test_a_hand_edited_trace_opens_cleanly(page: Page, tmp_path: Path) -> None:
    target = tmp_path / "odd.html"
    write_report(write_odd_trace(tmp_path / "odd.rewind"), target)
    open_report(page, target)
    for seq in range(3):
        click_step(page, seq)
    assert "<b>Boom</b>" in page.evaluate("document.querySelector('#rw-detail .rw-error').innerText")
    assert "\\u001b[31mred" in page.evaluate("document.getElementById('rw-list').innerText")  # shown, not obeyed
    assert "\\u202eevil" in page.evaluate("document.querySelector('.rw-meta').innerText")
    assert page.problems() == []
    # A damaged step body: that step says so, the rest of the page works.
    trace = record_trip(tmp_path / "run.rewind")
    lines = trace.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"request":', b'"request":{{', 1)
    trace.write_bytes(b"".join(lines))
    write_report(trace, target)
    open_report(page, target)
    assert "not valid JSON" in click_step(page, 1)
    assert page.evaluate("window.rewindReport.trace.steps[1].model") == "gpt-4o-2024-08-06"  # from the intact head
    assert "Book the Hotel Paris" in click_step(page, 3)
    assert page.problems() == []


def test_a_key_named_twice_is_damage_not_one_of_the_two(page: Page, tmp_path: Path) -> None:
    trace = record_trip(tmp_path / "run.rewind")
    lines = trace.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"request":', b'"request":"the other request","request":', 1)
    trace.write_bytes(b"".join(lines))
    target = tmp_path / "twice.html"
    write_report(trace, target)
    open_report(page, target)
    assert 'names the key "request" twice' in click_step(page, 1)
    assert "Book the Hotel Paris" in click_step(page, 3)  # the other steps read as before
    assert page.problems() == []


def test_diff_report_highlights_the_first_divergence(page: Page, reports: dict[str, Path], tmp_path: Path) -> None:
    open_report(page, reports["diff"])
    assert page.problems() == []
    first = page.evaluate("document.querySelector('.rw-row.first-divergence').className")
    assert "sel" in first and "op-changed" in first
    assert "First divergence" in page.evaluate("document.getElementById('rw-first-divergence').innerText")
    # Side by side: the changed lines of A and B on one row.
    changed = page.evaluate("[...document.querySelectorAll('#rw-detail table.sbs tr.d-chg')].map(r => r.innerText)")
    assert any("Paris" in row and "Rome" in row for row in changed)
    assert_not_blank(page, tmp_path / "diff.png")
    # Either side's step, in full.
    page.evaluate("[...document.querySelectorAll('.rw-tabs button')].find(b => b.dataset.tab === 'b').click()")
    assert "Rome" in page.evaluate("document.getElementById('rw-detail').innerText")
    set_control(page, "rw-diff-only", "checked", True)
    count = page.evaluate("document.getElementById('rw-count').textContent")
    assert count.endswith("of 10 rows") and not count.startswith("10 ")
    assert page.problems() == []


def test_five_thousand_steps_open_and_scroll(page: Page, tmp_path: Path) -> None:
    trace = record_long(tmp_path / "long.rewind", 5000)
    target = tmp_path / "long.html"
    write_report(trace, target)
    started = time.monotonic()
    open_report(page, target)
    opened = time.monotonic() - started
    assert opened < 10, opened
    assert page.problems() == []
    # Only the rows in view exist.
    assert 10 < page.evaluate("document.querySelectorAll('.rw-row').length") < 120
    # Scrolling through all of it: each frame draws only what is visible.
    elapsed = page.evaluate(
        """(async () => {
            const list = document.getElementById('rw-list');
            const t0 = performance.now();
            for (let i = 0; i <= 50; i++) {
                list.scrollTop = list.scrollHeight * i / 50;
                await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
            }
            return performance.now() - t0;
        })()"""
    )
    assert elapsed < 5000, elapsed
    page.wait_until("document.querySelector('.rw-row[data-step=\"4999\"]') !== null")
    assert "4999" in click_step(page, 4999)
    assert search(page, "item-4321-") == "1 of 5000 steps"
    assert visible_steps(page) == [4321]
    assert_not_blank(page, tmp_path / "long.png")
    assert page.problems() == []


SHAPES = Path(__file__).parent.parent / "fixtures" / "report" / "shapes.rewind"
_SHOWN = ("summary", "error", "model", "tin", "tout", "cost", "streamed")


def _drawn(page: Page, path: Path) -> dict[str, Any]:
    open_report(page, path)
    assert page.problems() == []
    return dict(page.evaluate("window.rewindReport.trace"))


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    return {
        **{key: row.get(key) for key in _SHOWN},
        "flags": sorted(flag for flag in row["flags"] if flag != "omitted"),
    }


@pytest.mark.parametrize("trace", ["shapes", "agent", "hostile"])
def test_the_page_summarizes_steps_as_rewind_does(
    page: Page, reports: dict[str, Path], tmp_path: Path, trace: str
) -> None:
    """The page summarizes every step it embeds (static/summaries.js); a step left out of
    a report is summarized by Python with rewind's own functions. Both must show the
    same, and the page's totals must be rewind.account's."""
    source = {
        "shapes": SHAPES,
        "agent": reports["trace"].with_suffix(".rewind"),
        "hostile": reports["hostile"].with_suffix(".rewind"),
    }[trace]
    prices = {"command-r-plus": ModelPrice(2.5, 10.0)}  # the caller's table is consulted first
    write_report(source, tmp_path / "page.html", prices=prices)
    write_report(source, tmp_path / "python.html", prices=prices, limits=Limits(max_bytes=0))
    by_page = _drawn(page, tmp_path / "page.html")
    by_python = _drawn(page, tmp_path / "python.html")
    assert by_python["summarized"] and not by_page["summarized"]
    for ours, theirs in zip(by_page["steps"], by_python["steps"], strict=True):
        assert _shown(ours) == _shown(theirs), ours["seq"]
    usage = account(source, prices=prices)
    for totals in (by_page["totals"], by_python["totals"]):
        assert totals["input_tokens"] == usage.total_input_tokens
        assert totals["output_tokens"] == usage.total_output_tokens
        assert totals["cost"] == pytest.approx(usage.total_cost)
        assert totals["calls_without_usage"] == usage.calls_without_usage
        assert totals["unpriced_models"] == usage.unpriced_models
        assert totals["replayed_llm_calls"] == usage.replayed_calls
        assert [(m["model"], m["calls"], m["input_tokens"], m["output_tokens"]) for m in totals["models"]] == [
            (m.model, m.calls, m.input_tokens, m.output_tokens) for m in usage.per_model
        ]


def test_the_shapes_read_as_expected(page: Page, tmp_path: Path) -> None:
    """A few of the summaries spelled out, so agreeing with Python is not agreeing on nothing."""
    write_report(SHAPES, tmp_path / "shapes.html")
    rows = _drawn(page, tmp_path / "shapes.html")["steps"]
    assert rows[0]["summary"] == 'Let me check the weather. One moment. → weather(city=Paris, days=2, tags=["a","b"])'
    assert (rows[0]["model"], rows[0]["tin"], rows[0]["tout"]) == ("gpt-4o-2024-08-06", 120, 30)
    assert rows[0]["cost"] == pytest.approx((120 * 2.5 + 30 * 10.0) / 1e6)
    assert rows[3]["tin"] == 40 + 100 + 7  # Anthropic's cached prompt tokens are input too
    assert (rows[4]["model"], rows[4]["tout"]) == ("gemini-2.5-flash", 4 + 20)
    assert (rows[6]["model"], rows[6]["tin"]) == ("command-r-plus", 21)  # billed units, model from the request
    assert rows[8]["streamed"] == "Hello" and rows[8]["summary"] == "[stream, 3 chunks] Hello"
    assert "stream-cut" in rows[9]["flags"] and rows[9]["summary"].startswith("[stream cut short]")
    assert rows[11]["error"] == "openai.RateLimitError: 429 slow down retry later"
    assert rows[12]["error"] == "TimeoutError: None"
    assert rows[15]["summary"].endswith("…") and len(rows[15]["summary"]) == 240
    assert rows[17]["summary"] == "NaN"  # Python's json writes NaN; the page still reads the step
    assert "cost" not in rows[20] and rows[20]["tin"] == 1000  # served from a source trace: not counted
