"""The GenAI attribute names rewind's spans use, taken from ``opentelemetry-semantic-conventions``.

rewind runs with OpenTelemetry back to 1.27 (semantic conventions 0.48b0), older than
several of today's names: where the installed release does not define one, it is spelled
here as the conventions spell it now (tests/engine/test_genai_conventions.py checks both agree
with the installed release).
"""

from __future__ import annotations

from types import ModuleType

_semconv: ModuleType | None
try:
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as _semconv
except ImportError:  # pragma: no cover - semantic conventions older than their incubating module
    _semconv = None


def _name(constant: str, spelled: str) -> str:
    value = getattr(_semconv, constant, None)
    return value if isinstance(value, str) else spelled


INPUT_MESSAGES = _name("GEN_AI_INPUT_MESSAGES", "gen_ai.input.messages")
OUTPUT_MESSAGES = _name("GEN_AI_OUTPUT_MESSAGES", "gen_ai.output.messages")
SYSTEM_INSTRUCTIONS = _name("GEN_AI_SYSTEM_INSTRUCTIONS", "gen_ai.system_instructions")
TOOL_DEFINITIONS = _name("GEN_AI_TOOL_DEFINITIONS", "gen_ai.tool.definitions")
TOOL_CALL_ARGUMENTS = _name("GEN_AI_TOOL_CALL_ARGUMENTS", "gen_ai.tool.call.arguments")
TOOL_CALL_RESULT = _name("GEN_AI_TOOL_CALL_RESULT", "gen_ai.tool.call.result")
PROVIDER_NAME = _name("GEN_AI_PROVIDER_NAME", "gen_ai.provider.name")
USAGE_INPUT_TOKENS = _name("GEN_AI_USAGE_INPUT_TOKENS", "gen_ai.usage.input_tokens")
USAGE_OUTPUT_TOKENS = _name("GEN_AI_USAGE_OUTPUT_TOKENS", "gen_ai.usage.output_tokens")
#: The names today's replaced (what REWIND_GENAI_LEGACY_ATTRIBUTES adds back).
SYSTEM = _name("GEN_AI_SYSTEM", "gen_ai.system")
USAGE_PROMPT_TOKENS = _name("GEN_AI_USAGE_PROMPT_TOKENS", "gen_ai.usage.prompt_tokens")
USAGE_COMPLETION_TOKENS = _name("GEN_AI_USAGE_COMPLETION_TOKENS", "gen_ai.usage.completion_tokens")
