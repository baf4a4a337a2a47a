"""``rewind check``: per step, can this trace be replayed, and if not, why.

Works on any trace, recorded or imported. A step is

* ``replayable``: it will be served as recorded;
* ``degraded``: it will be served, but something is weaker than a recording (tool
  definitions missing from the telemetry, so the tools sent are not compared; an
  error class this environment cannot import, so a plain ``ReplayedError`` is raised);
* ``not replayable``: content missing (capture was off), content truncated (an attribute
  length limit), attributes dropped, a blob missing, a response the SDK cannot revive.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from typing import Any

from rewind.data.function_names import same_function
from rewind.engine.nothing_recorded import incomplete_reason
from rewind.errors import TraceFormatError
from rewind.storage.trace import Event, Trace

from .build import IMPORTED
from .model import BLOB_MISSING, CONTENT_MISSING, SHARED_NAME, UNREADABLE, UNREVIVABLE, Problem

#: Step names whose responses are checked against the SDK type the instrumentor revives.
_RESPONSE_TYPES = {
    "openai.chat.completions.create": ("openai", "openai.types.chat", "ChatCompletion"),
    "anthropic.messages.create": ("anthropic", "anthropic.types", "Message"),
}


@dataclass
class StepCheck:
    seq: int
    kind: str
    name: str
    imported: bool
    problems: list[Problem] = field(default_factory=list)

    @property
    def status(self) -> str:
        if any(p.blocking for p in self.problems):
            return "not replayable"
        return "degraded" if self.problems else "replayable"

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "kind": self.kind,
            "name": self.name,
            "imported": self.imported,
            "status": self.status,
            "replayable": self.status != "not replayable",
            "problems": [p.to_dict() for p in self.problems],
        }


@dataclass
class CheckReport:
    path: str
    steps: list[StepCheck]
    #: Why the recording is incomplete (its program failed before its first call), if it is.
    incomplete: str | None = None

    @property
    def replayable(self) -> bool:
        return self.incomplete is None and all(step.status != "not replayable" for step in self.steps)

    @property
    def clean(self) -> bool:
        return all(step.status == "replayable" for step in self.steps)

    def to_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for step in self.steps:
            counts[step.status] = counts.get(step.status, 0) + 1
        return {
            "path": self.path,
            "replayable": self.replayable,
            "incomplete": self.incomplete,
            "steps": len(self.steps),
            "counts": counts,
            "results": [step.to_dict() for step in self.steps],
        }


def check_trace(path: str) -> CheckReport:
    """Check every step of the trace at ``path`` (``TraceFormatError`` if it is not a trace)."""
    trace = Trace.open(path)
    steps = [check_event(event) for event in trace.events]
    _check_shared_names(trace.events, steps)
    return CheckReport(path, steps, incomplete_reason(trace.header))


def _check_shared_names(events: list[Event], steps: list[StepCheck]) -> None:
    """Steps of one (kind, name) recorded by different functions: a replay serves either's
    answer to both (the name is the identity), so each such step says whose it was."""
    functions: dict[tuple[str, str], dict[str, int]] = {}
    recorded_by: list[str | None] = []
    for event, step in zip(events, steps):
        function = None
        if not any(p.code in (UNREADABLE, BLOB_MISSING) for p in step.problems):
            value = event.get("function")
            function = value if isinstance(value, str) else None
        recorded_by.append(function)
        if function is not None:
            functions.setdefault((event.kind, event.name), {}).setdefault(function, event.seq)
    for event, step, function in zip(events, steps, recorded_by):
        owners = functions.get((event.kind, event.name), {})
        others = ", ".join(
            f"{name} (step {seq})" for name, seq in owners.items() if function and not same_function(name, function)
        )
        if not others:
            continue
        step.problems.append(
            Problem(
                SHARED_NAME,
                f"recorded by {function}, but {others} also recorded under the name {event.name!r}: a replay "
                "cannot tell their calls apart and serves either's answer to both. Give each its own name=",
                blocking=False,
            )
        )


def check_event(event: Event) -> StepCheck:
    step = StepCheck(event.seq, event.kind, event.name, imported=False)
    try:
        imported = event.get(IMPORTED)
        response, error = event.response, event.error
        event.request  # noqa: B018 - reading it proves its line and blobs are whole
    except TraceFormatError as exc:
        code = BLOB_MISSING if "blob" in str(exc).lower() else UNREADABLE
        step.problems.append(Problem(code, str(exc)))
        return step
    if isinstance(imported, dict):
        step.imported = True
        for problem in imported.get("problems") or []:
            if isinstance(problem, dict):
                step.problems.append(
                    Problem(str(problem.get("code")), str(problem.get("detail")), bool(problem.get("blocking", True)))
                )
    if error is not None:
        _check_error(step, error)
    elif response is None and event.ok and event.kind == "llm" and not step.problems:
        step.problems.append(Problem(CONTENT_MISSING, "the step has no response"))
    elif step.imported and response is not None and not any(p.blocking for p in step.problems):
        _check_revival(step, response)
    return step


def _check_error(step: StepCheck, error: dict[str, Any]) -> None:
    module = error.get("module")
    if not isinstance(module, str) or module == "builtins":
        return
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        step.problems.append(
            Problem(
                UNREVIVABLE,
                f"the recorded error's class {module}.{error.get('qualname')} cannot be imported here: a replay "
                "raises a plain rewind ReplayedError carrying its message instead",
                blocking=False,
            )
        )


def _check_revival(step: StepCheck, response: Any) -> None:
    target = _RESPONSE_TYPES.get(step.name)
    if target is None:
        return
    package, module_name, type_name = target
    if importlib.util.find_spec(package) is None:
        return  # the SDK is not installed here: nothing to revive into, nothing to check
    # A module of rewind's own table, never a name from the trace: importing it is safe.
    cls = getattr(importlib.import_module(module_name), type_name)
    try:
        cls.model_validate(response)
    except Exception as exc:
        first = str(exc).splitlines()
        step.problems.append(
            Problem(UNREVIVABLE, f"the {package} SDK cannot revive the response as {type_name}: {' '.join(first[:2])}")
        )
