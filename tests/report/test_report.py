"""The HTML report, read back without a browser: structure, embedded data, escaping, limits.

The page is parsed with ``html.parser`` the way a browser tokenizes it: every script
block must end where we ended it, whatever the trace holds. (tests/report/test_report_browser.py
drives a real Chromium over the same reports.)
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from report_runs import HOSTILE, png_data_url, record_agent_run, write_odd_trace
from rewind_runs import record_long, record_trip

import rewind
from rewind.inspection.accounting import DEFAULT_PRICES, ModelPrice, account, usage_of
from rewind.report import Limits, render_diff_report, render_report, write_diff_report, write_report
from rewind.report._diff_data import side_by_side
from rewind.report._page import lines_block, script_safe
from rewind.report._payload import CLIP, IMAGE
from rewind.storage.trace import Trace
from rewind.stub_server import StubServer


class _Page(HTMLParser):
    """Every element start, and the text of every script and style element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.blocks: list[tuple[str, dict[str, str | None], str]] = []
        self._open: tuple[str, dict[str, str | None]] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open, self._text = (tag, dict(attrs)), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._open is not None and tag == self._open[0]:
            self.blocks.append((tag, self._open[1], "".join(self._text)))
            self._open = None


class Parsed:
    def __init__(self, html: bytes) -> None:
        self.html = html
        self.text = html.decode("utf-8")
        parser = _Page()
        parser.feed(self.text)
        parser.close()
        self.tags = parser.tags
        self.blocks = parser.blocks

    def block(self, ident: str) -> str:
        found = [text for tag, attrs, text in self.blocks if attrs.get("id") == ident]
        assert len(found) == 1, ident
        return found[0]

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.block("rw-data"), parse_constant=_no_constants)

    def bodies(self, side: str = "a") -> list[Any]:
        text = self.block(f"rw-bodies-{side}")
        # Step lines are embedded as stored: NaN and Infinity (Python's json writes them)
        # included, which the page's reader takes (tests/report/test_report_browser.py).
        return [json.loads(line) for line in text.split("\n")] if text else []

    @property
    def images(self) -> list[str | None]:
        return json.loads(self.block("rw-images"))

    def rows(self, side: str = "trace") -> list[dict[str, Any]]:
        """The rows the page makes of a section's columns, with what Python summarized of
        the steps left out (the page summarizes the others: tests/report/test_report_browser.py)."""
        section = self.data[side]
        columns = section["columns"]
        rows = [{"i": i, **{key: values[i] for key, values in columns.items()}} for i in range(len(columns["seq"]))]
        for index, summary in section["summarized"].items():
            rows[int(index)].update(summary)
        return rows


def _no_constants(name: str) -> Any:
    raise AssertionError(f"{name} in the page's JSON: JSON.parse would refuse it")


@pytest.fixture(scope="module")
def agent_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with StubServer() as stub:
        return record_agent_run(tmp_path_factory.mktemp("agent") / "agent.rewind", stub)


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with StubServer() as stub:
        return record_agent_run(tmp_path_factory.mktemp("hostile") / "hostile.rewind", stub, hostile=True)


# -- structure ---------------------------------------------------------------------------


def test_one_self_contained_file(agent_trace: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "run.html"
    report = write_report(agent_trace, target)
    assert target.read_bytes() == report.html
    page = Parsed(report.html)
    # Nothing is fetched: no element points anywhere, the policy allows no network.
    for tag, attrs in page.tags:
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
    csp = next(attrs["content"] for tag, attrs in page.tags if attrs.get("http-equiv") == "Content-Security-Policy")
    assert csp is not None and "default-src 'none'" in csp and "connect-src" not in csp
    # Exactly one executable script, ours, allowed by its hash; the data blocks are not JavaScript.
    executable = [(attrs, text) for tag, attrs, text in page.blocks if tag == "script" and "type" not in attrs]
    assert len(executable) == 1
    digest = base64.b64encode(hashlib.sha256(executable[0][1].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp
    style = next(text for tag, _, text in page.blocks if tag == "style")
    assert base64.b64encode(hashlib.sha256(style.encode()).digest()).decode() in csp
    types = sorted(attrs.get("type") or "" for tag, attrs, _ in page.blocks if tag == "script")
    assert types == ["", "application/json", "application/json", "application/x-ndjson", "application/x-ndjson"]


def test_steps_and_bodies_match_the_trace(agent_trace: Path) -> None:
    trace = Trace.load(agent_trace)
    page = Parsed(render_report(agent_trace).html)
    data = page.data
    assert data["view"] == "trace"
    section = data["trace"]
    rows = page.rows()
    assert [(r["seq"], r["kind"], r["name"], r["ok"]) for r in rows] == [
        (e.seq, e.kind, e.name, e.ok) for e in trace.events
    ]
    totals = section["totals"]
    assert (totals["steps"], totals["errors"]) == (10, 1)
    assert totals["kinds"] == {"llm": 4, "tool": 5, "memory": 1}
    # Every step is embedded, so the page summarizes every one (none summarized here).
    assert section["summarized"] == {}
    searches = [r for r in rows if r["name"] == "search"]
    assert len(searches) == 3 and max(r["t"] for r in searches) - min(r["t"] for r in searches) < 20
    # Every body is there, line for line what the trace holds.
    bodies = page.bodies()
    assert len(bodies) == len(trace.events)
    for body, event in zip(bodies, trace.events):
        assert body == json.loads(json.dumps(event.to_dict()))
    assert section["header"]["meta"] == {"ticket": "T-7", "note": "Plan a weekend in Paris"}
    # The page prices models from rewind.accounting's table, the caller's prices first.
    prices = {model: (i, o) for model, i, o, rank in section["prices"] if rank == 1}
    assert prices["gpt-4o"] == (DEFAULT_PRICES["gpt-4o"].input, DEFAULT_PRICES["gpt-4o"].output)
    custom = Parsed(render_report(agent_trace, prices={"GPT-4o": ModelPrice(1, 2)}).html).data["trace"]["prices"]
    assert custom[0] == ["gpt-4o", 1, 2, 0]


def test_steps_left_out_are_summarized_as_rewind_accounting_counts_them(agent_trace: Path) -> None:
    trace = Trace.load(agent_trace)
    page = Parsed(render_report(agent_trace, limits=Limits(max_bytes=0)).html)
    assert page.bodies() == [None] * len(trace.events)
    rows = page.rows()
    usage = account(trace)
    for row, event in zip(rows, trace.events):
        assert "omitted" in row["flags"] and row["summary"]
        if event.kind == "llm" and usage_of(event) is not None:
            assert (row["tin"], row["tout"]) == usage_of(event)
    assert sum(r.get("cost", 0) for r in rows) == pytest.approx(usage.total_cost)
    assert sum(1 for r in rows if r["kind"] == "llm" and "tin" not in r) == usage.calls_without_usage == 1
    # Markers: the failed tool, the truncated stream.
    book = next(r for r in rows if r["name"] == "book")
    assert not book["ok"] and "booking backend down" in book["error"]
    assert "stream-cut" in rows[-1]["flags"]


def test_a_fork_marks_its_fork_point(tmp_path: Path, stub: StubServer) -> None:
    source = record_trip(tmp_path / "a.rewind")
    forked = tmp_path / "fork.rewind"
    from rewind_runs import trip_agent

    with rewind.fork(source, at=2, save_as=forked):
        trip_agent(final="A different answer.")()
    rows = Parsed(render_report(forked).html).rows()
    assert [r["live"] for r in rows] == [False, False, True, True]
    assert [("fork" in r["flags"]) for r in rows] == [False, False, True, False]
    assert Parsed(render_report(forked).html).data["trace"]["fork_at"] == 2


def test_a_torn_tail_is_noted(tmp_path: Path) -> None:
    path = record_trip(tmp_path / "torn.rewind")
    with open(path, "ab") as fh:
        fh.write(b'{"seq":9,"kind":"llm","name":"ch')
    section = Parsed(render_report(path).html).data["trace"]
    assert section["torn_tail"] is True
    assert any("torn" in note for note in section["notes"])


# -- escaping ----------------------------------------------------------------------------


def test_hostile_payloads_stay_data(hostile_trace: Path) -> None:
    html = render_report(hostile_trace).html
    page = Parsed(html)
    # The tokenizer saw exactly our elements: no payload opened a tag or ended a block.
    assert [tag for tag, _ in page.tags].count("script") == 5
    assert "img" not in [tag for tag, _ in page.tags]
    for _tag, attrs, text in page.blocks:
        if attrs.get("type") in ("application/json", "application/x-ndjson"):
            assert "<" not in text and ">" not in text and "&" not in text
            assert "\u2028" not in text and "\u2029" not in text
    assert b"window.__pwned" in html  # the text is there, escaped
    assert b"<img src=x" not in html and b"</script><script>window" not in html
    # ... and reads back exactly.
    data = page.data["trace"]
    assert data["header"]["meta"]["note"] == HOSTILE
    assert any(r["name"] == "weather" + HOSTILE for r in page.rows())
    bodies = page.bodies()
    assert bodies[0]["response"] == ["likes museums", HOSTILE]
    assert HOSTILE in bodies[1]["request"]["messages"][1]["content"][0]["text"]


def test_script_safe_escapes() -> None:
    raw = json.dumps({"x": "</script>&\u2028\u2029<!--"}, ensure_ascii=False).encode()
    safe = script_safe(raw)
    assert re.search(rb"[<>&]", safe) is None and "\u2028".encode() not in safe
    assert json.loads(safe) == json.loads(raw)
    # A carriage return would become a line feed in the HTML parser and shift the lines.
    assert b"".join(lines_block([b'{"a":1}\r', b"null"])).split(b"\n") == [b'{"a":1} ', b"null"]


def test_lone_surrogates_become_strict_utf8_and_nan_is_left_to_the_page(tmp_path: Path) -> None:
    @rewind.tool(name="odd")
    def odd(value: Any) -> Any:
        return value

    path = tmp_path / "odd.rewind"
    with rewind.record(path):
        odd(float("nan"))
        odd("half a pair: \ud800 here")
        odd([float("inf"), 1])
    html = render_report(path).html
    html.decode("utf-8")  # strict: valid UTF-8 throughout
    page = Parsed(html)
    raw = page.block("rw-bodies-a").split("\n")
    assert ',"response":NaN,' in raw[0] and raw[0].endswith(',"request":{"value":NaN}}')  # as stored
    bodies = page.bodies()
    assert math.isnan(bodies[0]["response"])
    assert bodies[1]["response"] == "half a pair: \ud800 here"
    assert bodies[2]["response"] == [math.inf, 1]


def test_a_hand_edited_trace_still_makes_a_page(tmp_path: Path) -> None:
    path = write_odd_trace(tmp_path / "odd.rewind")
    page = Parsed(render_report(path).html)
    rows = page.rows()
    assert [r["t"] for r in rows] == [0.0, 0.0, 500.0]  # the start in the year 10^292 is dropped
    assert [r["d"] for r in rows] == [0.0, 0.0, 3.0]
    assert rows[0]["name"] == "chat\n<i>x</i>"
    bodies = page.bodies()
    # Lines the writer's fast layout did not write are parsed and written again, strictly.
    assert bodies[0]["response"]["choices"][0]["message"]["content"] == "nan"
    assert bodies[1]["response"] == ["inf", "\u2028"]
    left_out = Parsed(render_report(path, limits=Limits(max_bytes=0)).html).rows()
    assert left_out[2]["error"] == "<b>Boom</b>: 42"


def test_a_damaged_step_is_shown_as_damaged(tmp_path: Path) -> None:
    path = record_trip(tmp_path / "run.rewind")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"request":', b'"request":{{', 1)  # step 1's body, past its head
    path.write_bytes(b"".join(lines))
    page = Parsed(render_report(path).html)
    raw = page.block("rw-bodies-a").split("\n")
    assert len(raw) == 4 and '"request":{{' in raw[1]  # embedded as stored; the page says it is damaged


def test_a_compacted_trace_reports_like_the_original(tmp_path: Path) -> None:
    from rewind.storage.archive import compact

    path = record_trip(tmp_path / "run.rewind")
    archive = tmp_path / "run.rewind.gz"
    compact(path, archive)
    plain, packed = Parsed(render_report(path).html), Parsed(render_report(archive).html)
    assert packed.bodies() == plain.bodies()
    assert packed.data["trace"]["totals"] == plain.data["trace"]["totals"]


def test_the_demo_ends_with_a_report(run_python) -> None:
    result = run_python("import runpy; runpy.run_path('examples/time_travel_demo.py', run_name='__main__')")
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("Look at the run in a browser: file://")
    report = Path(last.split("file://", 1)[1])
    data = Parsed(report.read_bytes()).data
    assert data["view"] == "trace" and data["trace"]["totals"]["steps"] == 12
    assert report.with_name("trip-vs-seville.html").exists()


# -- limits ------------------------------------------------------------------------------


def _record_big(path: Path, *, steps: int = 3, text: int = 100_000, image: str | None = None) -> Path:
    @rewind.llm(name="vision")
    def vision(**request: Any) -> dict[str, Any]:
        return {"model": "gpt-4o", "choices": [{"message": {"role": "assistant", "content": "ok"}}]}

    with rewind.record(path):
        for turn in range(steps):
            content: list[dict[str, Any]] = [{"type": "text", "text": f"turn {turn} " + "x" * text}]
            if image is not None:
                content.append({"type": "image_url", "image_url": {"url": image}})
            vision(model="gpt-4o", messages=[{"role": "user", "content": content}])
    return path


def test_long_strings_are_cut_with_a_note_and_inline_keeps_them(tmp_path: Path) -> None:
    path = _record_big(tmp_path / "big.rewind", steps=2)
    report = render_report(path)
    page = Parsed(report.html)
    text = page.bodies()[0]["request"]["messages"][0]["content"][0]["text"]
    assert text[CLIP] == "turn 0 " + "x" * (10_000 - 7)
    assert text["omitted"] == 100_007 - 10_000
    assert report.clipped_steps == 2 and "inline" in (report.note() or "")
    assert all("clipped" in r["flags"] for r in page.rows())
    whole = render_report(path, inline=True)
    assert whole.clipped_steps == 0
    assert Parsed(whole.html).bodies()[0]["request"] == Trace.load(path)[0].request


def test_a_repeated_image_is_embedded_once(tmp_path: Path) -> None:
    image = png_data_url()  # a real PNG
    path = _record_big(tmp_path / "vision.rewind", steps=4, text=70_000, image=image)
    page = Parsed(render_report(path).html)
    assert page.images == [image]
    for body in page.bodies():
        ref = body["request"]["messages"][0]["content"][1]["image_url"]["url"]
        assert ref[IMAGE] == 0 and ref["type"] == "image/png"


def test_big_images_and_the_size_budget(tmp_path: Path) -> None:
    big = "data:image/png;base64," + base64.b64encode(b"\x89PNG" + bytes(700_000)).decode()
    path = _record_big(tmp_path / "huge.rewind", steps=3, text=10, image=big)
    report = render_report(path)
    page = Parsed(report.html)
    assert page.images == [None] and report.images_left_out == 1
    assert len(report.html) < 200_000
    # A budget smaller than the trace: the first steps keep their bodies, the rest are listed.
    long = record_long(tmp_path / "long.rewind", 400)
    small = render_report(long, limits=Limits(max_bytes=20_000))
    page = Parsed(small.html)
    bodies = page.bodies()
    assert bodies[0] is not None and bodies[-1] is None
    assert small.omitted_steps == sum(1 for b in bodies if b is None) > 0
    assert "omitted" in page.rows()[-1]["flags"]


def test_deep_payloads_are_bounded_like_any_reader(tmp_path: Path) -> None:
    from rewind.errors import TraceFormatError

    path = record_trip(tmp_path / "run.rewind")
    lines = path.read_bytes().splitlines(keepends=True)
    padding = '"' + "p" * 70_000 + '"'
    ok_depth, bad_depth = "[" * 150 + padding + "]" * 150, "[" * 5000 + "1" + "]" * 5000
    lines[2] = lines[2].replace(b'"request":', b'"deep":' + ok_depth.encode() + b',"request":', 1)
    path.write_bytes(b"".join(lines))
    body = Parsed(render_report(path).html).bodies()[1]
    inner = body["deep"]
    for _ in range(150):
        inner = inner[0]
    assert inner["omitted"] == 60_000  # cut, and still 150 levels deep
    lines[2] = lines[2].replace(b'"request":', b'"deeper":' + bad_depth.encode() + b',"request":', 1)
    path.write_bytes(b"".join(lines))
    with pytest.raises(TraceFormatError, match=r":3: .*nested deeper"):
        render_report(path)


def test_blob_traces_show_their_blobs(tmp_path: Path) -> None:
    image = png_data_url(size=64)
    path = tmp_path / "blobs.rewind"

    @rewind.llm(name="vision")
    def vision(**request: Any) -> dict[str, Any]:
        return {"model": "gpt-4o", "choices": [{"message": {"role": "assistant", "content": "seen"}}]}

    with rewind.record(path, externalize=100):
        for turn in range(3):
            vision(
                model="gpt-4o",
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "image_url", "image_url": {"url": image}},
                            {"type": "text", "text": f"turn {turn} " + "y" * 500},
                        ],
                    }
                ],
            )
    assert Trace.open(path).version == 2
    page = Parsed(render_report(path).html)
    assert page.images == [image]
    body = page.bodies()[2]
    assert body["request"]["messages"][0]["content"][1]["text"] == "turn 2 " + "y" * 500


def test_a_big_image_in_a_blob_says_where_it_is(tmp_path: Path) -> None:
    big = "data:image/png;base64," + base64.b64encode(b"\x89PNG" + bytes(700_000)).decode()
    path = tmp_path / "big.rewind"

    @rewind.llm(name="vision")
    def vision(**request: Any) -> dict[str, Any]:
        return {"model": "gpt-4o", "choices": [{"message": {"role": "assistant", "content": "seen"}}]}

    with rewind.record(path, externalize=1000):
        vision(
            model="gpt-4o", messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": big}}]}]
        )
    page = Parsed(render_report(path).html)
    ref = page.bodies()[0]["request"]["messages"][0]["content"][0]["image_url"]["url"]
    sha = hashlib.sha256(big.encode()).hexdigest()
    assert ref == {IMAGE: 0, "bytes": len(big[22:]) * 3 // 4, "type": "image/png", "blob": f"big.rewind.blobs/{sha}"}
    assert page.images == [None]


# -- diffs -------------------------------------------------------------------------------


def test_diff_report_rows_come_from_diff_traces(tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    b = record_trip(tmp_path / "b.rewind", extra_search=True, final="Book the Hotel Louvre.")
    diff = rewind.diff_traces(a, b)
    page = Parsed(render_diff_report(a, b).html)
    data = page.data
    assert data["view"] == "diff"
    assert [r["op"] for r in data["rows"]] == [e.op for e in diff.entries]
    first = diff.first_divergence
    assert first is not None and data["first"] == diff.entries.index(first)
    assert data["rows"][data["first"]]["explain"] == first.explain()
    assert data["counts"] == diff.counts()
    changed = [r for r in data["rows"] if r["op"] == "changed"]
    assert changed and all("request" in r for r in changed)
    final = changed[-1]
    assert any(op == "~" and "Louvre" in (right or "") for op, *sides in final["outcome"] for right in sides[1:])
    assert len(page.bodies("a")) == diff.a_steps and len(page.bodies("b")) == diff.b_steps


def test_a_diff_shares_its_size_budget_between_the_runs(tmp_path: Path) -> None:
    a = record_long(tmp_path / "a.rewind", 300)
    b = record_long(tmp_path / "b.rewind", 300)
    page = Parsed(render_diff_report(a, b, limits=Limits(max_bytes=20_000)).html)
    for side in ("a", "b"):
        bodies = page.bodies(side)
        assert bodies[0] is not None and bodies[-1] is None, side


def test_identical_runs_have_no_first_divergence(tmp_path: Path) -> None:
    a = record_trip(tmp_path / "a.rewind")
    b = record_trip(tmp_path / "b.rewind")
    target = tmp_path / "same.html"
    write_diff_report(a, b, target)
    data = Parsed(target.read_bytes()).data
    assert data["first"] is None and all(r["op"] == "equal" for r in data["rows"])


def test_side_by_side_pairs_lines_and_folds_equal_runs() -> None:
    a = {"messages": [{"role": "user", "content": f"line {i}"} for i in range(20)], "model": "a"}
    b = {"messages": [{"role": "user", "content": f"line {i}"} for i in range(20)], "model": "b"}
    rows = side_by_side(a, b)
    assert ["~", '  "model": "a"', '  "model": "b"'] in rows
    skipped = [r for r in rows if r[0] == "…"]
    assert skipped and skipped[0][1] > 50
    same = side_by_side({"x": 1, "y": 2, "z": 3}, {"x": 1, "y": 2, "z": 3})
    assert all(row[0] in ("=", "…") for row in same)
