"""Self-contained HTML reports of a trace and of a diff between two traces.

    from rewind.report import write_report, write_diff_report

    write_report("run.rewind", "run.html")
    write_diff_report("a.rewind", "b.rewind", "diff.html")

One file each, with its CSS, script and data inline: it opens from disk in any browser,
fetches nothing, and can be attached to a bug report. The page renders lazily, so a
trace of thousands of steps opens quickly; big payloads are cut with a note (``Limits``)
unless ``inline=True`` embeds everything.

A report is a view over the same read-only pieces the CLI uses: ``Trace`` for the steps,
``rewind.inspection.accounting`` for tokens and cost, ``rewind.inspection.diff`` for the
alignment.

May import inspection, what-if, storage, data; never the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rewind._version import __version__
from rewind.inspection.accounting import ModelPrice
from rewind.inspection.diff import TraceDiff, diff_traces
from rewind.storage.trace import PathLike, Trace

from ._diff_data import build_diff_data
from ._page import page
from ._payload import Embedder, Limits
from ._trace_data import build_section


@dataclass(frozen=True)
class Report:
    """A rendered report: the HTML and what was left out of it to bound its size."""

    html: bytes
    steps: int
    #: Steps shown with some strings cut or images left out (``inline=True`` keeps them).
    clipped_steps: int
    #: Steps listed without their request/response: the size budget ran out.
    omitted_steps: int
    #: Distinct images named but not embedded (too big, or past the budget).
    images_left_out: int

    @property
    def size(self) -> int:
        return len(self.html)

    def note(self) -> str | None:
        """What a reader of the report should know was left out, or ``None``."""
        parts = []
        if self.clipped_steps:
            parts.append(f"{self.clipped_steps} steps with long strings or big images cut")
        if self.omitted_steps:
            parts.append(f"{self.omitted_steps} steps without their bodies (size budget reached)")
        if not parts:
            return None
        return "; ".join(parts) + " (inline=True / --inline embeds everything)"

    def write(self, path: PathLike) -> Path:
        """Write the HTML to ``path`` (atomically: a reader never sees half a report)."""
        target = Path(os.fspath(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        tmp.write_bytes(self.html)
        os.replace(tmp, target)
        return target


def _check_target(path: PathLike, *traces: Trace) -> None:
    """Refuse to write a report over one of the traces it shows."""
    target = os.fspath(path)
    for trace in traces:
        if trace.path is not None and os.path.exists(target) and os.path.samefile(target, trace.path):
            raise ValueError(f"{target} is the trace being reported on; write the report to another file")


def _limits(inline: bool, limits: Limits | None) -> Limits:
    if inline:
        return Limits.unlimited()
    return limits if limits is not None else Limits()


def _open(trace: Trace | PathLike) -> Trace:
    return trace if isinstance(trace, Trace) else Trace.open(trace)


def _finish(embedder: Embedder, data: dict[str, object], steps: int, a: list[bytes], b: list[bytes]) -> Report:
    left_out = sum(1 for image in embedder.images if image is None)
    data["generator"] = f"agent-rewind {__version__}"
    data["limits"] = {
        "max_line": embedder.limits.max_line,
        "max_string": embedder.limits.max_string,
        "max_image": embedder.limits.max_image,
        "max_bytes": embedder.limits.max_bytes,
    }
    data["left_out"] = {
        "clipped_steps": embedder.clipped_steps,
        "omitted_steps": embedder.omitted_steps,
        "images": left_out,
    }
    html = page(data, a, b, embedder.images)
    return Report(html, steps, embedder.clipped_steps, embedder.omitted_steps, left_out)


def render_report(
    trace: Trace | PathLike,
    *,
    inline: bool = False,
    limits: Limits | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
    title: str | None = None,
) -> Report:
    """The report of one trace (a path or a ``Trace``), in memory.

    ``inline=True`` embeds every payload and image whole (``limits`` is then ignored);
    ``prices`` (``{model: ModelPrice}``) overrides the built-in price table, as in
    ``rewind.account``; ``title`` replaces the trace's path as the page's heading.
    """
    opened = _open(trace)
    embedder = Embedder(_limits(inline, limits))
    section = build_section(opened, embedder, prices=prices, label=title)
    data: dict[str, object] = {"view": "trace", "trace": section.data}
    return _finish(embedder, data, len(opened.events), section.bodies, [])


def write_report(
    trace: Trace | PathLike,
    path: PathLike,
    *,
    inline: bool = False,
    limits: Limits | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
    title: str | None = None,
) -> Report:
    """Write the report of ``trace`` to ``path`` (see ``render_report``) and return it."""
    opened = _open(trace)
    _check_target(path, opened)
    report = render_report(opened, inline=inline, limits=limits, prices=prices, title=title)
    report.write(path)
    return report


def render_diff_report(
    a: Trace | PathLike,
    b: Trace | PathLike,
    *,
    exact: bool = False,
    diff: TraceDiff | None = None,
    inline: bool = False,
    limits: Limits | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
) -> Report:
    """The report of run A against run B, in memory.

    The alignment is ``rewind.diff_traces(a, b, exact=exact)``; pass ``diff`` when you
    already computed it (over the same two ``Trace`` objects).
    """
    trace_a, trace_b = _open(a), _open(b)
    if diff is None:
        diff = diff_traces(trace_a, trace_b, exact=exact)
    embedder = Embedder(_limits(inline, limits))
    data, bodies_a, bodies_b = build_diff_data(diff, trace_a, trace_b, embedder, prices=prices)
    data["view"] = "diff"
    return _finish(embedder, data, len(trace_a.events) + len(trace_b.events), bodies_a, bodies_b)


def write_diff_report(
    a: Trace | PathLike,
    b: Trace | PathLike,
    path: PathLike,
    *,
    exact: bool = False,
    diff: TraceDiff | None = None,
    inline: bool = False,
    limits: Limits | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
) -> Report:
    """Write the diff report of A and B to ``path`` (see ``render_diff_report``) and return it."""
    trace_a, trace_b = _open(a), _open(b)
    _check_target(path, trace_a, trace_b)
    report = render_diff_report(trace_a, trace_b, exact=exact, diff=diff, inline=inline, limits=limits, prices=prices)
    report.write(path)
    return report


__all__ = ["Limits", "Report", "render_diff_report", "render_report", "write_diff_report", "write_report"]
