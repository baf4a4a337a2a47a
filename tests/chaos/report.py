"""Hostile content through ``rewind report``, opened in a real Chromium: no script runs.

Every place a trace puts text (step names, meta, prompts, responses, tool arguments,
error messages, dictionary keys) carries markup and script that would set
``window.__pwned`` if it ever became an element or code: closing the report's own
script tag, event handlers, ``javascript:`` links, ``srcdoc`` frames, U+2028 inside
script, comment and CDATA breakouts, prototype pollution through ``__proto__`` keys.
Each report is opened, every step is selected and every collapsed section opened, and
the page is asked whether any of it ran.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import rewind
from rewind.report import write_diff_report, write_report
from rewind.stub_server import StubServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from report_browser import Chromium, Page, find_chromium
from report_runs import record_agent_run

VECTORS = [
    '</script><script>window.__pwned="script"</script>',
    "<img src=x onerror=\"window.__pwned='img'\">",
    "<svg onload=\"window.__pwned='svg'\"></svg>",
    "javascript:window.__pwned='href'",
    '<a href="javascript:window.__pwned=\'link\'" id="rw-bait">bait</a>',
    "<iframe srcdoc=\"<script>parent.__pwned='srcdoc'</script>\"></iframe>",
    "\u2028\u2029</script><script>window.__pwned='u2028'</script>",
    "<!--<script>window.__pwned='comment'</script>-->",
    "]]><script>window.__pwned='cdata'</script>",
    "<details open ontoggle=\"window.__pwned='toggle'\">x</details>",
    "${window.__pwned='template'}{{constructor.constructor('window.__pwned=1')()}}",
    "<style>*{background:url(\"javascript:window.__pwned='css'\")}</style>",
]


@rewind.llm(name="chat" + VECTORS[0])
def chat(prompt: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": prompt}}], "model": VECTORS[1]}


@rewind.tool(name="tool" + VECTORS[2])
def tool(**arguments: Any) -> dict[str, Any]:
    return {"__proto__": {"polluted": True}, "constructor": {"prototype": {"polluted": True}}, **arguments}


@rewind.tool(name="fails" + VECTORS[4])
def fails(message: str) -> None:
    raise ValueError(message)


def _decorated_trace(path: Path, rng: random.Random) -> Path:
    with rewind.record(path, meta={vector: rng.choice(VECTORS) for vector in VECTORS}):
        for vector in VECTORS:
            chat(vector)
            tool(**{vector: vector, "nested": {vector: [vector]}})
            try:
                fails(vector)
            except ValueError:
                pass
    return path


def _pwned(page: Page) -> bool:
    return bool(page.evaluate("typeof window.__pwned !== 'undefined' || ({}).polluted === true"))


def _visit(page: Page, path: Path) -> tuple[bool, bool]:
    """(rendered, a script ran) for one report."""
    page.navigate(path.as_uri())
    try:
        page.wait_until("document.body.dataset.ready === '1'")
    except Exception:
        return False, _pwned(page)
    rows = int(page.evaluate("document.querySelectorAll('.rw-row').length") or 0)
    for index in range(rows):
        page.evaluate(
            f"document.querySelectorAll('.rw-row')[{index}].click();"
            "document.querySelectorAll('details').forEach(d => {{ d.open = true; }});"
            "document.querySelectorAll('#rw-detail a').forEach(a => a.click());"
        )
    return rows > 0, _pwned(page)


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    binary = find_chromium()
    if binary is None:
        raise SystemExit("chromium is not installed: run `make browser` (Debian's chromium package)")
    reports: list[Path] = []
    with StubServer() as stub:
        hostile = record_agent_run(work / "hostile.rewind", stub, hostile=True)
    with StubServer() as stub:
        plain = record_agent_run(work / "plain.rewind", stub)
    decorated = _decorated_trace(work / "decorated.rewind", rng)
    for source in (hostile, decorated):
        reports.append(work / f"{source.stem}.html")
        write_report(source, reports[-1])
        reports.append(work / f"{source.stem}-inline.html")
        write_report(source, reports[-1], inline=True)
    reports.append(work / "diff.html")
    write_diff_report(plain, hostile, reports[-1])
    # The detector's own control: a page where the same vector does run must be caught.
    control = work / "control.html"
    control.write_text('<body data-ready="1"><div class="rw-row"></div>' + VECTORS[1] + "</body>", encoding="utf-8")
    executed = not_rendered = 0
    with Chromium(binary) as chromium:
        detected = _visit(chromium.page(), control)[1]
        for report in reports:
            page = chromium.page()
            rendered, ran = _visit(page, report)
            executed += ran
            not_rendered += not rendered
            if ran or not rendered:
                print(f"   report: {report.name}: rendered={rendered} script ran={ran}", file=sys.stderr)
    return {
        "pages": len(reports),
        "vectors": len(VECTORS),
        "scripts_executed": executed,
        "pages_not_rendered": not_rendered,
        "control_script_detected": int(detected),
    }
