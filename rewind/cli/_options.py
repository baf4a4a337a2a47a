"""Options several commands share, written once so their names and help never drift apart."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def match_option(choices: Sequence[str], help: str) -> Callable[[F], F]:
    """``-m/--match``: how recorded steps are matched, strict by default."""
    return click.option(
        "-m", "--match", type=click.Choice(tuple(choices)), default="strict", show_default=True, help=help
    )


def payload_function_options(*, live_steps_only: bool) -> Callable[[F], F]:
    """``--redact`` and ``--normalize``. A replay-based command (fork, replay, refresh) scrubs only
    the steps that run live and must normalize as the recording did; a recording command scrubs
    and normalizes every step."""
    if live_steps_only:
        redact = "Scrub the payloads of live steps with this function."
        normalize = "The identity normalizer the run was recorded with."
    else:
        redact = "Scrub every stored payload with this function."
        normalize = "Drop volatile fields from each call's identity."

    def decorate(function: F) -> F:
        function = click.option("--normalize", metavar="MODULE:FUNCTION", help=normalize)(function)
        return click.option("--redact", metavar="MODULE:FUNCTION", help=redact)(function)

    return decorate
