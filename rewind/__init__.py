"""agent-rewind: record, replay, fork and diff AI agent runs, on OpenTelemetry.

    import rewind

    with rewind.record("run.rewind"):
        agent.run("find me a flight")

    with rewind.replay("run.rewind"):      # offline, deterministic, free
        agent.run("find me a flight")
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rewind.engine.context import current_session
from rewind.engine.core import Call, begin_call
from rewind.engine.decorators import llm, memory, tool
from rewind.engine.policy import ReplayPolicy
from rewind.engine.replay import ReplaySpanProcessor
from rewind.engine.session import Session, record, replay
from rewind.engine.threads import patch_thread_pool
from rewind.inspection.accounting import DEFAULT_PRICES, Accounting, ModelPrice, ModelUsage, account
from rewind.inspection.diff import DiffEntry, TraceDiff, diff_traces, render_text
from rewind.matching import (
    FuzzyMatcher,
    IncomingCall,
    Matcher,
    OrderedMatcher,
    ParallelMatcher,
    StrictMatcher,
)
from rewind.matching.similarity import lexical_similarity, set_similarity, use_embedding_similarity
from rewind.setup.integrations import (
    auto_patch,
    patch_anthropic,
    patch_bedrock,
    patch_cohere,
    patch_fireworks,
    patch_gemini,
    patch_groq,
    patch_litellm,
    patch_mcp,
    patch_mistral,
    patch_openai,
    patch_together,
    patch_xai,
)
from rewind.storage.trace import Event, Trace
from rewind.testing.doubles import NeverCalled, ScriptedLLM

from . import _moved
from ._version import __version__
from .errors import (
    DivergenceError,
    FuzzyMatchWarning,
    IdentityCollisionWarning,
    LiveCallDuringReplay,
    LossySerializationWarning,
    NeverLiveError,
    PatchGapWarning,
    RedactionError,
    ReplayDriftWarning,
    ReplayedError,
    ReviveFallbackWarning,
    RewindError,
    RewindWarning,
    ScriptExhausted,
    ThreadlessCallWarning,
    TraceFormatError,
    TraceLockedError,
    TraceWriteError,
    UnconsumedEventsWarning,
)
from .setup import integrations

if TYPE_CHECKING:  # imported on first use, below; typed for checkers here
    from rewind.what_if.fork import fork

#: Tools most programs never touch, imported on first use so ``import rewind`` stays quick.
_LAZY = {
    "TelemetryError": "rewind.importing",
    "TelemetryMatcher": "rewind.importing",
    "check_trace": "rewind.importing",
    "export_trace": "rewind.importing.export",
    "fork": "rewind.what_if.fork",
    "import_telemetry": "rewind.importing",
    "mutate": "rewind.what_if",
    "runs": "rewind.what_if.runs",
    "refresh": "rewind.what_if.refresh",
    "wilson_interval": "rewind.what_if.runs",
    "NetworkBlockedError": "rewind.engine.network_guard",
}


def __getattr__(name: str) -> object:
    import importlib

    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif f"rewind.{name}" in _moved.MOVED:  # ``rewind.archive.compact(...)`` from before the folders
        value = importlib.import_module(f"rewind.{name}")
    else:
        raise AttributeError(f"module 'rewind' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "Call",
    "DivergenceError",
    "Event",
    "FuzzyMatcher",
    "FuzzyMatchWarning",
    "IdentityCollisionWarning",
    "IncomingCall",
    "LiveCallDuringReplay",
    "LossySerializationWarning",
    "Matcher",
    "NeverCalled",
    "NeverLiveError",
    "OrderedMatcher",
    "ParallelMatcher",
    "PatchGapWarning",
    "ReplayDriftWarning",
    "ReplayPolicy",
    "ReplaySpanProcessor",
    "RedactionError",
    "ReplayedError",
    "ReviveFallbackWarning",
    "RewindError",
    "RewindWarning",
    "ScriptExhausted",
    "ScriptedLLM",
    "Session",
    "StrictMatcher",
    "ThreadlessCallWarning",
    "Trace",
    "TraceFormatError",
    "TraceLockedError",
    "TraceWriteError",
    "UnconsumedEventsWarning",
    "__version__",
    "auto_patch",
    "integrations",
    "patch_anthropic",
    "patch_bedrock",
    "patch_cohere",
    "patch_fireworks",
    "patch_gemini",
    "patch_groq",
    "patch_litellm",
    "patch_mcp",
    "patch_mistral",
    "patch_openai",
    "patch_together",
    "patch_xai",
    "begin_call",
    "current_session",
    "fork",
    "lexical_similarity",
    "llm",
    "memory",
    "patch_thread_pool",
    "record",
    "replay",
    "set_similarity",
    "tool",
    "use_embedding_similarity",
    "Accounting",
    "DEFAULT_PRICES",
    "DiffEntry",
    "ModelPrice",
    "ModelUsage",
    "TraceDiff",
    "account",
    "diff_traces",
    "render_text",
    "TelemetryError",
    "TelemetryMatcher",
    "check_trace",
    "export_trace",
    "import_telemetry",
    "refresh",
    "runs",
    "wilson_interval",
]

_moved.install(sys.modules[__name__])
