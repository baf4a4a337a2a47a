"""What-if tools on the replay path: edit and continue, fault injection (docs/what-if.md).

``rewind.fork(path, at=N, edit=...)`` serves a recorded run up to step N, step N with a
changed outcome, then goes on live (or replaying what still matches). ``mutate`` replays
a run many times, each with one fault injected at one step, and reports what the agent
did. Both are a matcher (``WhatIfMatcher``) on the ordinary replay path.
"""

from __future__ import annotations

from .edits import EditError, edited_event, load_edit_file
from .faults import FAULTS, Fault, FaultError, FaultOptions, fault_session
from .matcher import THEN, Change, WhatIfMatcher
from .mutate import OUTCOMES, MutateError, Mutation, MutationReport, Result, baseline, mutate, plan, run_mutation

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
