"""What-if tools on the replay path: edit and continue, fault injection (docs/what-if.md).

``rewind.fork(path, at=N, edit=...)`` serves a recorded run up to step N, step N with a
changed outcome, then goes on live (or replaying what still matches). ``mutate`` replays
a run many times, each with one fault injected at one step, and reports what the agent
did. Both are a matcher (``WhatIfMatcher``) on the ordinary replay path.

Above the engine and importing: may import them and what lies below; never setup, the proxy
or the interfaces.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy names below are, for type checkers
    from .edits import EditError, edited_event, load_edit_file
    from .faults import FAULTS, Fault, FaultError, FaultOptions, fault_session
    from .matcher import THEN, Change, WhatIfMatcher
    from .mutate import OUTCOMES, MutateError, Mutation, MutationReport, Result, baseline, plan, run_mutation

#: Where each name lives: imported on first use, so ``rewind.fork`` loads no fault tooling.
_WHERE = {
    "EditError": "edits",
    "edited_event": "edits",
    "load_edit_file": "edits",
    "FAULTS": "faults",
    "Fault": "faults",
    "FaultError": "faults",
    "FaultOptions": "faults",
    "fault_session": "faults",
    "THEN": "matcher",
    "Change": "matcher",
    "WhatIfMatcher": "matcher",
    "OUTCOMES": "mutate",
    "MutateError": "mutate",
    "Mutation": "mutate",
    "MutationReport": "mutate",
    "Result": "mutate",
    "baseline": "mutate",
    "mutate": "mutate",
    "plan": "mutate",
    "run_mutation": "mutate",
}


# ``mutate`` names both a submodule and its function: importing the submodule (``rewind mutate``
# does) sets the package attribute to the module, so the function is bound here, first.
from .mutate import mutate  # noqa: E402


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'rewind.what_if' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "FAULTS",
    "OUTCOMES",
    "THEN",
    "Change",
    "EditError",
    "Fault",
    "FaultError",
    "FaultOptions",
    "MutateError",
    "Mutation",
    "MutationReport",
    "Result",
    "WhatIfMatcher",
    "baseline",
    "edited_event",
    "fault_session",
    "load_edit_file",
    "mutate",
    "plan",
    "run_mutation",
]
