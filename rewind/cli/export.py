"""``rewind export``: send a trace to any OpenTelemetry backend, or write it as OTLP JSON lines."""

from __future__ import annotations

import json
import os

import click

from rewind.data.escape import inert
from rewind.errors import TraceFormatError
from rewind.importing.errors import TelemetryError
from rewind.importing.export import PROTOCOLS, SERVICE, export_trace

from ._common import CliError, explain, get_output


def _headers(values: tuple[str, ...]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition("=")
        if not sep or not name.strip():
            raise CliError(f"--header {value!r}: expected NAME=VALUE")
        headers[name.strip()] = content.strip()
    return headers


@click.command("export")
@click.argument("trace_path", metavar="TRACE")
@click.option("-o", "--output", "output_path", metavar="PATH", help="Write OTLP JSON lines to PATH.")
@click.option("--endpoint", metavar="URL", help="Send over OTLP/HTTP to URL (http://host:4318 gets /v1/traces).")
@click.option(
    "--protocol",
    type=click.Choice(PROTOCOLS),
    default=PROTOCOLS[0],
    show_default=True,
    help="The OTLP/HTTP encoding for --endpoint.",
)
@click.option("--header", "header_values", multiple=True, metavar="NAME=VALUE", help="A request header (repeatable).")
@click.option("--service", default=SERVICE, show_default=True, metavar="NAME", help="The spans' service.name.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds per request.")
@click.option("-f", "--force", is_flag=True, help="Overwrite PATH when it already exists.")
@click.option("--json", "as_json", is_flag=True, help="Print what was exported as JSON.")
@click.pass_context
def command(
    ctx: click.Context,
    trace_path: str,
    output_path: str | None,
    endpoint: str | None,
    protocol: str,
    header_values: tuple[str, ...],
    service: str,
    timeout: float,
    force: bool,
    as_json: bool,
) -> None:
    """Export TRACE as OpenTelemetry spans: one invoke_agent span, one span per step.

    \b
    Each step's span carries the GenAI attributes (operation, model, usage, messages)
    and the step's whole trace line (rewind.event, with its sha256), so the run shows
    in any OTLP backend and `rewind import` of the spans gives back the same trace.
    The spans hold the file's content: redact when recording if they must not.

    \b
    Exit status: 0 exported, 2 TRACE unreadable, PATH exists, or the receiver refused.
    """
    out = get_output(ctx)
    if output_path is None and endpoint is None:
        raise CliError("nowhere to export to: pass -o PATH (OTLP JSON lines) and/or --endpoint URL (OTLP/HTTP)")
    if output_path is not None and os.path.exists(output_path) and not force:
        raise CliError(f"{output_path}: already exists; pass --force to overwrite it or -o another PATH")
    try:
        report = export_trace(
            trace_path,
            output_path,
            endpoint=endpoint,
            protocol=protocol,
            headers=_headers(header_values),
            service=service,
            timeout=timeout,
        )
    except (TraceFormatError, OSError) as exc:
        raise CliError(explain(exc)) from None
    except TelemetryError as exc:
        raise CliError(str(exc)) from None
    if as_json:
        out.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return
    where = [inert(w) for w in (report.output, report.endpoint) if w]
    out.emit(
        f"exported {report.steps} step(s) of {inert(report.source)} as {report.spans} span(s) "
        f"(trace {report.trace_id}) -> {' and '.join(where)}"
    )
