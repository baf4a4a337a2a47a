"""The ``rewind`` command line: ``show``, ``stats``, ``diff``, ``compact``, ``record``, ``replay``.

Each command lives in its own module of this package and exposes a ``click`` command
named ``command``. Adding one is a single line in ``COMMANDS``; modules load only when
their command runs (or ``--help`` lists them), so start-up stays quick.

The top layer: may import every layer below it (docs/architecture.md).
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from typing import Any

import click

from rewind._version import __version__
from rewind.data.escape import inert
from rewind.errors import RewindError

from ._common import EXIT_INTERNAL, CliError, Output, explain

#: The name this project is installed under (``pip show agent-rewind-otel``).
DISTRIBUTION = "agent-rewind-otel"

#: command name -> module (relative to this package) defining ``command``.
COMMANDS: dict[str, str] = {
    "show": ".show",
    "stats": ".stats",
    "diff": ".diff",
    "report": ".report",
    "compact": ".compact",
    "record": ".record",
    "replay": ".replay",
    "fork": ".fork",
    "refresh": ".refresh",
    "mutate": ".mutate",
    "import": ".import_",
    "check": ".check",
    "export": ".export",
    "proxy": ".proxy",
}


class RewindGroup(click.Group):
    """Loads commands on demand and turns input errors into one-line messages."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module = importlib.import_module(target, __name__)
        command: click.Command = module.command
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except RewindError as exc:
            # Includes TraceFormatError raised late, when a lazily loaded step is read.
            raise CliError(explain(exc)) from None
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise  # click's standalone mode quiets a closed pipe (`rewind show | head`)
            raise CliError(explain(exc)) from None
        except Exception as exc:
            if os.environ.get("REWIND_DEBUG"):
                raise
            click.echo(
                f"rewind: internal error: {type(exc).__name__}: {inert(str(exc))} "
                "(a bug in rewind; rerun with REWIND_DEBUG=1 for the traceback and please report it)",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL)


@click.group(cls=RewindGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__,
    "-V",
    "--version",
    prog_name="rewind",
    # Several unrelated distributions install a `rewind`: name ours and where it lives.
    message=f"%(prog)s %(version)s ({DISTRIBUTION}, {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour output. auto: only on a terminal, and never when NO_COLOR is set.",
)
@click.option("--no-pager", is_flag=True, help="Print long output directly instead of through $PAGER.")
@click.pass_context
def cli(ctx: click.Context, color: str, no_pager: bool) -> None:
    """Record, replay, inspect and compare agent runs (rewind trace files).

    \b
    rewind record run.rewind -- python agent.py     record an unmodified agent
    rewind replay run.rewind -- python agent.py     replay it offline
    rewind show run.rewind -v                       every step, with previews
    rewind diff a.rewind b.rewind                   where two runs diverged
    rewind report run.rewind -o run.html            one HTML file to look at a run

    \b
    Exit status: 0 success (diff: the runs are the same), 1 diff found a divergence
    (record/replay: the run diverged or left steps unserved), 2 bad usage or
    unreadable input, 3 an internal error; record/replay otherwise exit with the
    program's own status.
    """
    ctx.obj = Output.resolve(color, pager=not no_pager)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``rewind`` console script."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="rewind")


__all__ = ["COMMANDS", "DISTRIBUTION", "RewindGroup", "cli", "main"]
