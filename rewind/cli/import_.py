"""``rewind import``: rebuild a run from OpenTelemetry telemetry as a replayable trace."""

from __future__ import annotations

import os

import click

from rewind.data.escape import inert, inert_json
from rewind.importing import ImportReport, TelemetryError, import_telemetry

from ._common import CliError, Output, cannot_write, get_output


@click.command("import")
@click.argument("source", metavar="SOURCE")
@click.option("-o", "--output", "output_path", metavar="PATH", required=True, help="The trace file to write.")
@click.option(
    "--trace-id",
    metavar="ID",
    help="The run (OpenTelemetry trace id, hex) when SOURCE holds several; ID,ID for several, "
    "'all' for every trace (a run whose calls no span enclosed).",
)
@click.option("--service", metavar="NAME", help="Keep only spans of this service.name.")
@click.option(
    "--project", metavar="NAME", default="default", show_default=True, help="The Phoenix project (URL sources)."
)
@click.option(
    "--attribute-limit",
    type=click.IntRange(min=1),
    metavar="N",
    help="The attribute length limit the producers ran with: text exactly N long is reported truncated "
    "(default: OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT when set).",
)
@click.option(
    "--content-root",
    metavar="DIR|URL",
    help="Where content a GenAI completion hook uploaded now lives (the *_ref attributes' files).",
)
@click.option("-f", "--force", is_flag=True, help="Overwrite PATH when it already exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
@click.pass_context
def command(
    ctx: click.Context,
    source: str,
    output_path: str,
    trace_id: str | None,
    service: str | None,
    project: str,
    attribute_limit: int | None,
    content_root: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Rebuild one run from telemetry as a rewind trace.

    \b
    SOURCE is an OTLP JSON file (the Collector `file` exporter's format, one
    ExportTraceServiceRequest per line; .gz too), an OTLP protobuf dump, or the
    http:// URL of a running Arize Phoenix (with --project).

    Understands rewind's own spans, the OpenTelemetry GenAI conventions (current and
    older), OpenInference and OpenLLMetry. Every step that could not be recovered whole
    is listed with the reason; it is written but never served by a replay.

    \b
    Exit status: 0 every step is replayable, 1 the trace was written but some steps
    are not (see the report, or rewind check), 2 SOURCE unreadable or holding no run.
    """
    out = get_output(ctx)
    if os.path.exists(output_path) and not force:
        raise CliError(f"{output_path}: already exists; pass --force to overwrite it or -o another PATH")
    try:
        report = import_telemetry(
            source,
            output_path,
            trace_id=trace_id,
            service=service,
            project=project,
            attribute_limit=attribute_limit,
            content_root=content_root,
        )
    except TelemetryError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise cannot_write(output_path, exc) or exc from None
    if as_json:
        out.echo(inert_json(report.to_dict()))
    else:
        out.emit("\n".join(report_lines(report, out)))
    if not report.replayable or not report.steps:
        ctx.exit(1)


def report_lines(report: ImportReport, out: Output) -> list[str]:
    service = f", service {inert(report.service)}" if report.service else ""
    lines = [
        f"imported {len(report.steps)} step(s) from {inert(report.source)} "
        f"(trace {report.trace_id}{service}) -> {inert(str(report.output))}"
    ]
    for step in report.steps:
        status = (
            "ok" if step.replayable and not step.problems else ("degraded" if step.replayable else "NOT REPLAYABLE")
        )
        exact = ", exact" if step.exact else ""
        colour = "green" if status == "ok" else ("yellow" if step.replayable else "red")
        lines.append(
            f"  step {step.seq:>3}  {inert(step.kind):<6} {inert(step.name)}  [{step.layout}{exact}]  "
            + out.style(status, fg=colour)
        )
        for problem in step.problems:
            lines.append(f"             {problem.code}: {inert(problem.detail)}")
    if not report.steps:
        lines.append("  no GenAI steps found in this trace")
    for group in report.unknown:
        names = ", ".join(inert(n) for n in group["names"])
        attributes = ", ".join(inert(a) for a in group["attribute_names"][:20]) or "(no attributes)"
        more = f" (+{len(group['attribute_names']) - 20} more)" if len(group["attribute_names"]) > 20 else ""
        lines.append(f"  unknown layout: {group['spans']} span(s) ({names}); attributes seen: {attributes}{more}")
    for note in report.notes:
        lines.append(f"  note: {inert(note)}")
    return lines
