"""agent-rewind: record, replay, fork and diff AI agent runs, on OpenTelemetry.

    import rewind

    with rewind.record("run.rewind"):
        agent.run("find me a flight")

    with rewind.replay("run.rewind"):      # offline, deterministic, free
        agent.run("find me a flight")
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import integrations
from .accounting import DEFAULT_PRICES, Accounting, ModelPrice, ModelUsage, account
from .core import Call, begin_call
from .decorators import llm, memory, tool
from .diff import DiffEntry, TraceDiff, diff_traces, render_text
from .doubles import NeverCalled, ScriptedLLM
from .errors import (
    DivergenceError,
    FuzzyMatchWarning,
    IdentityCollisionWarning,
    LiveCallDuringReplay,
    LossySerializationWarning,
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
from .integrations import (
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
from .matching import FuzzyMatcher, IncomingCall, Matcher, OrderedMatcher, ParallelMatcher, StrictMatcher
from .replay import ReplaySpanProcessor
from .session import Session, current_session, fork, record, replay
from .similarity import lexical_similarity, set_similarity, use_embedding_similarity
from .threads import patch_thread_pool
from .trace import Event, Trace

#: Tools most programs never touch, imported on first use so ``import rewind`` stays quick.
_LAZY = {
    "TelemetryError": "rewind.importing",
    "TelemetryMatcher": "rewind.importing",
    "check_trace": "rewind.importing",
    "import_telemetry": "rewind.importing",
    "mutate": "rewind.what_if",
    "NetworkBlockedError": "rewind.network_guard",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rewind' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
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
    "OrderedMatcher",
    "ParallelMatcher",
    "PatchGapWarning",
    "ReplayDriftWarning",
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
    "import_telemetry",
]
