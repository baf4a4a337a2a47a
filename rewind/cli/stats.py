"""``rewind stats``: what a run did, how long it took, and what its model calls cost."""

from __future__ import annotations

from collections import Counter

import click

from rewind.data.escape import inert
from rewind.inspection.accounting import (
    PRICES_CHECKED,
    Accounting,
    ModelPrice,
    ModelUsage,
    account,
    format_cost,
    load_prices,
    parse_price,
)
from rewind.inspection.preview import clip, error_line
from rewind.storage.trace import KINDS, Trace

from ._common import CliError, Output, get_output, open_trace
from .show import header_lines


def _seconds(ms: float) -> str:
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


_money = format_cost


def activity_lines(trace: Trace) -> list[str]:
    events = trace.events
    counts = Counter(e.kind for e in events)
    kinds = [k for k in KINDS] + sorted(k for k in counts if k not in KINDS)
    by_kind = " · ".join(f"{inert(k)} {counts[k]}" for k in kinds if counts[k] or k in KINDS)
    lines = [f"steps:      {len(events)}  ({by_kind})"]
    errors = [e for e in events if not e.ok]
    if errors:
        first = errors[0]
        where = f"step {first.seq} {inert(first.kind)} '{clip(first.name, None)}'"
        lines.append(f"errors:     {len(errors)}  (first: {where}: {error_line(first.error)})")
    else:
        lines.append("errors:     0")
    live = [e for e in events if e.live]
    lines.append(f"live time:  {_seconds(sum(e.duration_ms for e in live))} across {len(live)} live calls")
    timed = [e for e in events if e.ts > 0]
    if timed:
        start = min(e.ts for e in timed)
        end = max(e.ts + e.duration_ms / 1000 for e in timed)
        lines.append(f"wall time:  {_seconds((end - start) * 1000)} from the first call's start to the last call's end")
    replayed = len(events) - len(live)
    if replayed:
        lines.append(f"replayed:   {replayed} steps served from the source trace (not live)")
    return lines


def _tokens(count: int, usage_known: int, unknown: int) -> str:
    if usage_known == 0:
        return "?"
    return f"{count}+?" if unknown else str(count)


def _cost_cell(row: ModelUsage) -> str:
    if row.calls_with_usage == 0:
        return "?"
    if row.cost is None:
        return "n/a"
    return _money(row.cost) + ("+?" if row.calls_without_usage else "")


def cost_lines(acc: Accounting, *, show_cost: bool, custom_prices: bool) -> list[str]:
    if not acc.per_model:
        extra = f" ({acc.replayed_calls} served from the source trace)" if acc.replayed_calls else ""
        return [f"tokens & cost: no live llm steps{extra}"]
    title = "tokens & cost (estimated):" if show_cost else "tokens:"
    models = {m.model: clip(m.model, 60) for m in acc.per_model}  # recorded text: shown inert
    name_width = max(20, *(len(shown) for shown in models.values()))
    header = f"  {'model':<{name_width}} {'calls':>6} {'input':>10} {'output':>10}"
    if show_cost:
        header += f" {'cost':>12}"
    lines = [title, header]
    for row in acc.per_model:
        line = (
            f"  {models[row.model]:<{name_width}} {row.calls:>6} "
            f"{_tokens(row.input_tokens, row.calls_with_usage, row.calls_without_usage):>10} "
            f"{_tokens(row.output_tokens, row.calls_with_usage, row.calls_without_usage):>10}"
        )
        if show_cost:
            line += f" {_cost_cell(row):>12}"
        lines.append(line)
    known = sum(m.calls_with_usage for m in acc.per_model)
    unknown = acc.calls_without_usage
    total = (
        f"  {'total':<{name_width}} {acc.calls:>6} "
        f"{_tokens(acc.total_input_tokens, known, unknown):>10} {_tokens(acc.total_output_tokens, known, unknown):>10}"
    )
    if show_cost:
        cost = acc.total_cost
        cell = "n/a" if cost is None else _money(cost) + ("" if acc.complete else "+?")
        total += f" {cell:>12}"
    lines.append(total)
    if unknown:
        lines.append(
            f"  +? / ?: {unknown} call(s) recorded no usage (an errored call, or a stream recorded without "
            'stream_options={"include_usage": True}); their tokens are unknown, not zero'
        )
    if show_cost:
        for model in acc.unpriced_models:
            shown = clip(model, 60)
            lines.append(f"  n/a: no price known for {shown}; pass --price {shown}=IN/OUT (USD per 1M tokens)")
        source = "built-in list prices" + (" and your overrides" if custom_prices else "")
        lines.append(
            f"  * cost is an ESTIMATE from {source} (USD per 1M tokens, table checked {PRICES_CHECKED}); "
            "prices change and vary by contract. Override with --price MODEL=IN/OUT or --prices-file, "
            "hide with --no-cost"
        )
    if acc.replayed_calls:
        served = "llm step served" if acc.replayed_calls == 1 else "llm steps served"
        verb = "is" if acc.replayed_calls == 1 else "are"
        lines.append(f"  {acc.replayed_calls} {served} from the source trace {verb} not counted")
    return lines


def _parse_prices(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, ModelPrice]:
    prices: dict[str, ModelPrice] = {}
    for spec in values:
        try:
            model, price = parse_price(spec)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
        prices[model] = price
    return prices


@click.command("stats")
@click.argument("trace_path", metavar="TRACE")
@click.option("--no-cost", is_flag=True, help="Show tokens only, no dollar estimate.")
@click.option(
    "--price",
    "prices",
    multiple=True,
    metavar="MODEL=IN/OUT",
    callback=_parse_prices,
    help="Price a model in USD per 1M input/output tokens, e.g. gpt-4o=2.5/10 (repeatable; wins over the table).",
)
@click.option(
    "--prices-file",
    metavar="FILE",
    help='JSON prices merged over the built-in table: {"model": {"input": 2.5, "output": 10}, ...}.',
)
@click.pass_context
def command(
    ctx: click.Context, trace_path: str, no_cost: bool, prices: dict[str, ModelPrice], prices_file: str | None
) -> None:
    """Summarize TRACE: when it was recorded, steps by kind, errors, time, tokens and estimated cost.

    Tokens come from the usage each provider reported in the recorded responses; calls
    without recorded usage are shown as unknown (?), never as zero. Dollar figures are
    estimates from list prices.
    """
    out: Output = get_output(ctx)
    table: dict[str, ModelPrice] = {}
    if prices_file is not None:
        try:
            table.update(load_prices(prices_file))
        except ValueError as exc:
            raise CliError(f"{exc}; fix the file or drop --prices-file") from None
    table.update(prices)
    trace = open_trace(trace_path)
    lines = header_lines(trace, out)
    lines.append("")
    lines.extend(activity_lines(trace))
    lines.append("")
    lines.extend(cost_lines(account(trace, prices=table), show_cost=not no_cost, custom_prices=bool(table)))
    out.emit("\n".join(lines))
