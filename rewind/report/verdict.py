"""The verdict of many runs as HTML: one page of outcome groups, each linking to its
representative run's report and to that run's diff against the most common outcome.

The reports and diffs are the ordinary ones (``write_report``, ``write_diff_report``),
written beside the page; this module only adds the page that ties them together.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from rewind.storage.trace import PathLike
from rewind.what_if.runs import Verdict

from . import write_diff_report, write_report

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid #ddd; vertical-align: top; }
.bar { background: #4a7bd0; height: .8rem; display: inline-block; }
.ok { color: #1a7f37; } .ko { color: #b42318; }
code { background: #f3f3f3; padding: 0 .25rem; }
"""


def write_verdict_report(verdict: Verdict, path: PathLike) -> Path:
    """Write the verdict page to ``path`` (and each group's report and diff beside it)."""
    target = Path(os.fspath(path))
    stem = target.name[: -len(".html")] if target.name.endswith(".html") else target.name
    reference = verdict.groups[0].representative.trace
    rows = []
    total = len(verdict.runs)
    for number, group in enumerate(verdict.groups, 1):
        run = group.representative
        links = []
        if run.trace is not None:
            report = target.with_name(f"{stem}.group-{number}.html")
            write_report(run.trace, report, title=f"group {number}: run {run.index} of {verdict.source}")
            links.append(f'<a href="{html.escape(report.name)}">report of run {run.index}</a>')
            if number > 1 and reference is not None:
                diff = target.with_name(f"{stem}.group-{number}.diff.html")
                write_diff_report(reference, run.trace, diff)
                links.append(f'<a href="{html.escape(diff.name)}">diff against group 1</a>')
        share = len(group.runs) * 100 / total
        where = "same path as group 1" if group.differs_at is None else f"differs from step {group.differs_at}"
        good = group.successes == len(group.runs)
        rows.append(
            "<tr>"
            f"<td>{number}</td>"
            f'<td>{len(group.runs)} ({share:.0f}%)<br><span class="bar" style="width:{share * 2:.0f}px"></span></td>'
            f"<td>{group.exit_status}</td>"
            f"<td><code>{html.escape(group.final or '(no output)')}</code></td>"
            f"<td>{html.escape(where)}</td>"
            f'<td class="{"ok" if good else "ko"}">{group.successes} of {len(group.runs)}</td>'
            f"<td>{' · '.join(links)}<br>runs {html.escape(', '.join(str(r.index) for r in group.runs))}</td>"
            "</tr>"
        )
    low, high = verdict.interval
    page = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(f'{total} runs of {verdict.source}')}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(f'{total} runs of {verdict.source} {verdict.where}')}</h1>"
        f"<p>Success ({html.escape(verdict.criterion)}): <b>{verdict.successes}/{total} = {verdict.rate:.0%}</b>, "
        f"95% interval {low:.1%}–{high:.1%} (Wilson). Runs saved in <code>{html.escape(verdict.folder)}</code>.</p>"
        "<table><tr><th>group</th><th>runs</th><th>exit</th><th>final output</th><th>path</th>"
        "<th>succeeded</th><th>representative</th></tr>" + "".join(rows) + "</table></body></html>\n"
    )
    temporary = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    temporary.write_text(page, encoding="utf-8")
    os.replace(temporary, target)
    return target


__all__ = ["write_verdict_report"]
