"""One run of an OTLP JSON lines file, read line by line: memory follows the run, not the file.

``read_run`` is what ``import_telemetry`` reads a file with. For a JSON lines file
(``otlp_lines``) it keeps only what choosing and building the run need:

* ``--trace-id ID[,ID]`` or ``all``: one pass, keeping the spans of those traces
  (``RunCollector``), and of the others only the few ids an error would list;
* no ``--trace-id``: a first pass keeps a summary per trace (``TraceSurvey``: what
  ``choice.decide`` needs) and the spans of the first trace seen, in case it is the run
  (a file ``rewind export`` wrote, or any file of one run, is then read once); when
  another trace is chosen, or every span is (no trace holds a GenAI step), a second pass
  keeps those.

What it returns is what the whole-file path returns (``otlp.read_file`` then
``choice.choose_trace``): the same spans in file order, with the same log records
attached, and the same notes and errors. A file that is not JSON lines (protobuf, one
pretty-printed document, a first line that does not parse) is read whole, as before.

Log records are kept when they name a kept trace, or no trace, and are attached to the
first kept span with their span id. A span claims a GenAI step through its own
attributes and events or through a ``gen_ai.*`` log record naming it; the survey counts
the second kind once the whole file has been seen.
"""

from __future__ import annotations

import bisect
import os
from typing import Any

from .choice import (
    KNOWN_SHOWN,
    TraceSummary,
    choose_trace,
    decide,
    every_trace,
    missing_error,
    no_service_error,
    wanted_traces,
)
from .errors import TelemetryError
from .limits import ITEMS_ENV, Budget
from .mappers import mapper_for
from .otlp import Collected, add_document, parse_json, read_file
from .otlp_lines import LinesFile
from .spans import SpanEvent, SpanRecord


def read_run(path: str, trace_id: str | None, service: str | None) -> tuple[list[SpanRecord], list[str]]:
    """The chosen run's spans (logs attached, file order) and the reader's notes."""
    if not os.path.exists(path):
        raise TelemetryError(f"{path}: no such file")
    lines = LinesFile.open(path)
    if lines is not None:
        with lines:
            found = _read_lines(lines, trace_id, service)
        if found is not None:
            return found
    collected = read_file(path)
    return choose_trace(collected.spans, trace_id, service, path), collected.skipped


def _read_lines(
    lines: LinesFile, trace_id: str | None, service: str | None
) -> tuple[list[SpanRecord], list[str]] | None:
    path = lines.path
    if trace_id is not None:
        run = RunCollector(path, None if every_trace(trace_id) else wanted_traces(trace_id), service)
        if not read_documents(lines, run):
            return None
        run.check()
        return run.attach_logs(), run.skipped
    survey = TraceSurvey(path, service)
    if not read_documents(lines, survey):
        return None
    chosen = survey.decide()
    if survey.holds(chosen):
        return survey.attach_logs(), survey.skipped
    del survey  # its spans are not the run: free them before the second pass
    run = RunCollector(path, chosen, service)
    read_documents(lines, run, stop=lines.bytes_read)
    return run.attach_logs(), run.skipped


def read_documents(lines: LinesFile, collected: Collected, stop: int | None = None) -> bool:
    """Decode every line of ``lines`` into ``collected``, each within a budget of its own.

    False, with nothing decoded, when the first non-blank line is not a JSON document (a
    pretty-printed file: read it whole). A later line that is not JSON is skipped, with a
    note. The first document is held until a second one shows the file holds several:
    the whole-file reader names the line of a file's only document 0.
    """
    path, budget = lines.path, collected.budget
    held: tuple[int, Any] | None = None
    started = False
    for number, line in lines.numbered(stop):
        if not line or line.isspace():  # what `not line.strip()` says, without copying the line
            continue
        if held is not None:
            _decode(collected, path, held[0], held[1], held[0])
            held = None
        budget.restart(f"{path}:{number}")
        try:
            document = parse_json(line, budget)
        except (ValueError, RecursionError) as exc:
            if not started:
                return False
            collected.skipped.append(f"{path}:{number}: not JSON ({exc}); line skipped")
            continue
        if started:
            _decode(collected, path, number, document, number)
        else:
            started = True
            held = (number, document)
    if held is not None:
        _decode(collected, path, held[0], held[1], 0)
    return started


def _decode(collected: Collected, path: str, line: int, document: Any, number: int) -> None:
    """``document`` of ``line`` into ``collected``; ``number``: the line its notes name."""
    collected.budget.restart(f"{path}:{line}")
    try:
        add_document(collected, number, document, path)
    except RecursionError:  # any_value recurses twice per level json.loads took once
        raise TelemetryError(f"{path}: JSON nested too deeply to be OTLP") from None


class RunCollector(Collected):
    """Keeps the spans of some traces (``None``: every trace) and the log records naming them.

    Each line is decoded within its own budget; what is kept is charged to the run's.
    Of the other traces it remembers only the smallest ids, for an error to list.
    """

    def __init__(self, path: str, traces: set[str] | None, service: str | None) -> None:
        super().__init__(Budget(path, scope="one line"))
        self.path = path
        self.traces = traces
        self.service = service
        self.run = Budget(path, scope="one run")
        self.any_span = False
        self.found: set[str] = set()
        self.known: list[str] = []

    def admit(self, trace_id: str, service: str | None) -> bool:
        if self.service is not None and service != self.service:
            return False
        self.any_span = True
        if self.traces is None:
            return True
        known = self.known
        if (len(known) < KNOWN_SHOWN or trace_id < known[-1]) and trace_id not in known:
            bisect.insort(known, trace_id)
            del known[KNOWN_SHOWN:]
        if trace_id in self.traces:
            self.found.add(trace_id)
            return True
        return False

    def admit_log(self, trace_id: str | None) -> bool:
        return self.traces is None or trace_id is None or trace_id in self.traces

    def add_span(self, span: SpanRecord, items: int) -> None:
        self.run.spend_spans()
        self.run.spend_items(items)
        self.spans.append(span)

    def add_log(self, span_id: str, trace_id: str | None, record: SpanEvent, items: int) -> None:
        self.run.spend_items(items)
        self.logs.setdefault(span_id, []).append(record)

    def check(self) -> None:
        """Raise as ``choose_trace`` would for the traces asked for: no span of the service, or of a trace."""
        if self.service is not None and not self.any_span:
            raise no_service_error(self.path, self.service)
        missing = set() if self.traces is None else self.traces - self.found
        if missing:
            raise missing_error(self.path, missing, self.known)


class TraceSurvey(Collected):
    """The first pass without ``--trace-id``: a summary per trace, and the first trace's spans.

    The first trace seen is kept whole while it can still be the run: it stops being kept
    when another trace holds a GenAI step, when a log record comes before any span (it may
    belong to a run not yet known), or when it outgrows the run's budget (the second pass
    then says so). Summaries cost a few items each (a trace, a service, a span id no layout
    claims, a span id a ``gen_ai.*`` log names), bounded by ``REWIND_IMPORT_MAX_ITEMS``.
    """

    def __init__(self, path: str, service: str | None) -> None:
        super().__init__(Budget(path, scope="one line"))
        self.path = path
        self.service = service
        self.traces: dict[str, TraceSummary] = {}
        #: Spans no layout claims by themselves (span id -> trace id): a gen_ai.* log may claim them.
        self.unclaimed: dict[str, str] = {}
        #: Span ids a gen_ai.* log record names.
        self.logged: set[str] = set()
        self.entries = 0
        self.max_entries = self.budget.max_items
        self.run = Budget(path, scope="one run")
        self.candidate: str | None = None
        self.keeping = True

    def admit(self, trace_id: str, service: str | None) -> bool:
        return self.service is None or service == self.service

    def add_span(self, span: SpanRecord, items: int) -> None:
        trace_id = span.trace_id
        summary = self.traces.get(trace_id)
        if summary is None:
            self._count()
            summary = self.traces[trace_id] = TraceSummary(span.start_ns)
        services = len(summary.services)
        summary.add(span)
        if len(summary.services) > services:
            self._count()
        if self.keeping and self.candidate is None:
            self.candidate = trace_id
        if mapper_for(span):
            summary.steps += 1
            if trace_id != self.candidate:
                self._stop_keeping()
        elif span.span_id not in self.unclaimed:
            self._count()
            self.unclaimed[span.span_id] = trace_id
        if self.keeping and trace_id == self.candidate and self._keep(items):
            self.spans.append(span)

    def add_log(self, span_id: str, trace_id: str | None, record: SpanEvent, items: int) -> None:
        if record.name.startswith("gen_ai.") and span_id not in self.logged:
            self._count()
            self.logged.add(span_id)
        if not self.keeping:
            return
        if self.candidate is None:
            self._stop_keeping()
        elif (trace_id is None or trace_id == self.candidate) and self._keep(items, span=False):
            self.logs.setdefault(span_id, []).append(record)

    def decide(self) -> set[str] | None:
        """The traces to import (``None``: every span), by ``choice.decide``; raises as it does."""
        if self.service is not None and not self.traces:
            raise no_service_error(self.path, self.service)
        for span_id in self.logged:  # spans claimed through their log records alone
            trace_id = self.unclaimed.get(span_id)
            if trace_id is not None:
                self.traces[trace_id].steps += 1
        return decide(self.traces, bool(self.traces), self.path)

    def holds(self, chosen: set[str] | None) -> bool:
        """Whether the spans kept are the whole of ``chosen``."""
        if not self.keeping or self.candidate is None:
            return False
        return list(self.traces) == [self.candidate] if chosen is None else chosen == {self.candidate}

    def _keep(self, items: int, *, span: bool = True) -> bool:
        try:
            if span:
                self.run.spend_spans()
            self.run.spend_items(items)
        except TelemetryError:
            self._stop_keeping()
            return False
        return True

    def _stop_keeping(self) -> None:
        self.keeping = False
        self.spans = []
        self.logs = {}

    def _count(self) -> None:
        self.entries += 1
        if self.entries > self.max_entries:
            raise TelemetryError(
                f"{self.path}: more than {self.max_entries:,} traces, services and span ids to tell apart before "
                f"choosing a run; pass --trace-id ID to read only that run, or raise {ITEMS_ENV}"
            )
