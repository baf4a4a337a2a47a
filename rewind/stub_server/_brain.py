"""Answer generation shared by every wire format.

Each format turns its request into a provider-neutral :class:`Conversation`; the
default brain (or a scripted turn) answers it with an :class:`Answer`, which the
format renders back into its own JSON or stream. Everything here is
deterministic: the same request always gets the same answer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote

from ._script import ScriptTurn, ToolCall

# A fixed timestamp keeps every payload byte-for-byte reproducible across runs.
CREATED = 1_700_000_000
DEFAULT_EMBEDDING_DIMS = 8
MODEL_IDS = ("stub-model", "gpt-4o-mini", "text-embedding-3-small", "claude-stub")

# --------------------------------------------------------------------------- conversation model


@dataclass
class Msg:
    role: Literal["system", "user", "assistant", "tool"]
    text: str
    # Names of the tools an assistant message called, in order.
    calls: tuple[str, ...] = ()


@dataclass
class Tool:
    name: str
    schema: dict[str, Any]


@dataclass
class Conversation:
    """The provider-neutral view of a request that the default brain reasons about."""

    model: str
    messages: list[Msg] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    # "auto", "none", "required", or a specific tool name.
    tool_choice: str = "auto"
    output_schema: dict[str, Any] | None = None
    json_mode: bool = False
    thinking: bool = False

    def input_tokens(self) -> int:
        return max(1, sum(count_tokens(m.text) for m in self.messages))

    def last_user_text(self) -> str:
        for msg in reversed(self.messages):
            if msg.role == "user":
                return msg.text
        return ""

    def since_last_user(self) -> list[Msg]:
        """The messages after the last user message: this step's tool calls and results."""
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index].role == "user":
                return self.messages[index + 1 :]
        return list(self.messages)

    def model_turns(self) -> int:
        """How many times the model has answered in this conversation so far.

        Consecutive assistant items count once: the Responses API lists each
        parallel function call as its own item, but they are one answer.
        """
        turns = 0
        previous = ""
        for msg in self.messages:
            if msg.role == "assistant" and previous != "assistant":
                turns += 1
            previous = msg.role
        return turns

    def trailing_tool_results(self) -> list[str]:
        results: list[str] = []
        for msg in reversed(self.messages):
            if msg.role != "tool":
                break
            results.append(msg.text)
        return list(reversed(results))


@dataclass
class Answer:
    text: str | None
    tool_calls: list[ToolCall]
    thinking: str | None = None

    def output_tokens(self) -> int:
        words = count_tokens(self.text or "") + count_tokens(self.thinking or "")
        words += sum(count_tokens(c.name + " " + c.arguments_json()) for c in self.tool_calls)
        # Real providers never bill zero output tokens, and SDK code divides by it.
        return max(1, words)


def count_tokens(text: str) -> int:
    # Word counts are crude but stable, which is all a replay tool needs to assert on.
    return len(text.split())


def text_of(content: Any) -> str:
    """Flatten the many shapes providers use for message content into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        if isinstance(content.get("text"), str):
            return str(content["text"])
        if "content" in content:
            return text_of(content["content"])
        if "output" in content:
            return text_of(content["output"])
        return ""
    if isinstance(content, list):
        parts = [text_of(part) for part in content]
        return "\n".join(p for p in parts if p)
    return str(content)


def schema_of(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"type": "object", "properties": {}}


def json_schema_from_format(fmt: Any) -> tuple[dict[str, Any] | None, bool]:
    """Return (schema, json_mode) for an OpenAI/Anthropic structured output setting."""
    if not isinstance(fmt, Mapping):
        return None, False
    kind = fmt.get("type")
    if kind == "json_schema":
        # Chat nests the schema one level deeper than Responses and Anthropic do.
        inner = fmt.get("json_schema")
        schema = inner.get("schema") if isinstance(inner, Mapping) else fmt.get("schema")
        return schema_of(schema), False
    if kind == "json_object":
        return None, True
    return None, False


# --------------------------------------------------------------------------- the default brain

_QUOTED = re.compile(r"\"([^\"]{1,200})\"|\u201c([^\u201d]{1,200})\u201d|(?:^|\s)'([^']{1,200})'(?=[\s.,;:!?]|$)")
_FORMAT_EXAMPLES = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00",
    "email": "stub@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "hostname": "example.com",
    "duration": "PT1S",
}


def _string_value(name: str, text: str) -> str:
    """Pick a deterministic string argument from the user's words.

    An explicit ``name=value`` wins, then the first quoted phrase, then the whole
    (whitespace-normalised) message, so "search for "otel replay"" gives
    ``query="otel replay"`` and plain questions still produce something readable.
    """
    if name:
        explicit = re.search(rf"\b{re.escape(name)}\s*[:=]\s*(\"[^\"]*\"|'[^']*'|[^\s,;]+)", text, flags=re.IGNORECASE)
        if explicit:
            return explicit.group(1).strip("\"'")
    quoted = _QUOTED.search(text)
    if quoted:
        return next(g for g in quoted.groups() if g is not None)
    cleaned = " ".join(text.split())
    return cleaned[:200] if cleaned else "stub"


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return {}
    node: Any = root
    for part in ref[2:].split("/"):
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return {}
        node = node[part]
    return node


def example(schema: Any, root: Mapping[str, Any], name: str, text: str, depth: int = 0) -> Any:
    """Build the smallest value that satisfies ``schema``, deterministically."""
    if depth > 12 or not isinstance(schema, Mapping):
        return _string_value(name, text)
    if isinstance(schema.get("$ref"), str):
        return example(_resolve_ref(schema["$ref"], root), root, name, text, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            non_null = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
            return example((non_null or options)[0], root, name, text, depth + 1)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            resolved = _resolve_ref(part["$ref"], root) if isinstance(part, Mapping) and "$ref" in part else part
            if isinstance(resolved, Mapping):
                merged.update(resolved)
        merged.update({k: v for k, v in schema.items() if k != "allOf"})
        return example(merged, root, name, text, depth + 1)

    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"

    if kind == "object":
        properties = schema.get("properties")
        props: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        keys = [k for k in required if isinstance(k, str)] if isinstance(required, list) else list(props)
        return {key: example(props.get(key, {}), root, key, text, depth + 1) for key in keys}
    if kind == "array":
        if isinstance(schema.get("prefixItems"), list):
            return [example(item, root, name, text, depth + 1) for item in schema["prefixItems"]]
        max_items = schema.get("maxItems")
        if max_items == 0:
            return []
        count = max(1, int(schema.get("minItems") or 0))
        return [example(schema.get("items", {}), root, name, text, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        return _clamp_number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    value = _FORMAT_EXAMPLES.get(str(schema.get("format"))) or _string_value(name, text)
    max_len = schema.get("maxLength")
    if isinstance(max_len, int):
        value = value[:max_len]
    min_len = schema.get("minLength")
    if isinstance(min_len, int) and len(value) < min_len:
        value = value + "x" * (min_len - len(value))
    return value


def _clamp_number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    value: float = 1
    low, high = schema.get("minimum"), schema.get("maximum")
    ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(low, (int, float)) and value < low:
        value = low
    if isinstance(ex_low, (int, float)) and value <= ex_low:
        value = ex_low + 1
    if isinstance(high, (int, float)) and value > high:
        value = high
    if isinstance(ex_high, (int, float)) and value >= ex_high:
        value = ex_high - 1
    return int(value) if integer else value


# Verbs that half of all tool names start with; "get_weather" is mentioned by "weather".
_GENERIC_WORDS = frozenset({"get", "set", "search", "find", "lookup", "look", "up", "fetch", "list", "create", "run"})


def _name_words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]
    return [w for w in words if w not in _GENERIC_WORDS] or words


def _mention(tool: Tool, text: str) -> int | None:
    """Where the user's text mentions ``tool`` (its name, or every significant word of it)."""
    lowered = text.lower()
    for spelling in (tool.name.lower(), tool.name.lower().replace("_", " ")):
        at = lowered.find(spelling)
        if at >= 0:
            return at
    positions = []
    for word in _name_words(tool.name):
        # A word prefix, so "hotel" in a tool name matches "hotels" in the text.
        found = re.search(rf"\b{re.escape(word[:-1] if len(word) > 4 and word.endswith('s') else word)}", lowered)
        if found is None:
            return None
        positions.append(found.start())
    return min(positions) if positions else None


def _mentioned_tools(conv: Conversation, text: str) -> list[Tool]:
    """The tools the user's text asks for, in the order it mentions them."""
    found = [(at, index, tool) for index, tool in enumerate(conv.tools) if (at := _mention(tool, text)) is not None]
    return [tool for _at, _index, tool in sorted(found, key=lambda item: (item[0], item[1]))]


def _call(tool: Tool, user_text: str) -> Answer:
    args = example(tool.schema, tool.schema, "", user_text)
    return Answer(None, [ToolCall(tool.name, args if isinstance(args, dict) else {})])


def _next_tool(conv: Conversation, user_text: str) -> Tool | None:
    """The tool to call now, or None when the step's work is done.

    The first answer to a user message calls the forced tool, else the first tool
    the user mentioned, else the first tool offered. After each tool result, the
    next tool the user mentioned that has not been called yet comes next; once
    none is left, the model answers.
    """
    last = conv.messages[-1] if conv.messages else None
    if last is None or not conv.tools or conv.tool_choice == "none":
        return None
    by_name = {tool.name: tool for tool in conv.tools}
    mentioned = _mentioned_tools(conv, user_text)
    if last.role == "user":
        if conv.tool_choice in by_name:
            return by_name[conv.tool_choice]
        return mentioned[0] if mentioned else conv.tools[0]
    if last.role == "tool" and conv.tool_choice not in by_name:
        step = conv.since_last_user()
        # A format that does not report which tools its history called cannot tell
        # done from pending; answering then is safe, calling again could loop forever.
        if not any(msg.calls for msg in step):
            return None
        done = {name for msg in step for name in msg.calls}
        pending = [tool for tool in mentioned if tool.name not in done]
        return pending[0] if pending else None
    return None


def _thinking_for(user_text: str) -> str:
    topic = " ".join(user_text.split())[:120] or "the request"
    return f"The user asked: {topic}. A deterministic answer is enough."


def default_answer(conv: Conversation) -> Answer:
    """The stub's answer when no script turn is queued."""
    last = conv.messages[-1] if conv.messages else None
    user_text = conv.last_user_text()
    tool = _next_tool(conv, user_text)
    if tool is not None:
        return _call(tool, user_text)
    # Every result this step produced, so a multi-tool answer reports all of them.
    step = conv.since_last_user()
    results = [m.text for m in step if m.role == "tool"] if last is not None and last.role == "tool" else []
    if conv.output_schema is not None:
        hint = " ".join(results) if results else user_text
        value = example(conv.output_schema, conv.output_schema, "", hint)
        return Answer(json.dumps(value), [])
    if results:
        quoted = "; ".join(" ".join(r.split()) for r in results)
        if len(quoted) > 500:
            quoted = quoted[:500] + "..."
        return Answer(f"Based on the tool result: {quoted}", [])
    if conv.json_mode:
        return Answer(json.dumps({"echo": user_text}), [])
    if user_text:
        return Answer(f"Echo: {' '.join(user_text.split())}", [])
    return Answer("Hello from the rewind stub server.", [])


def resolve_answer(conv: Conversation, turn: ScriptTurn | None) -> Answer:
    if turn is not None and (turn.text is not None or turn.tool_calls is not None):
        answer = Answer(turn.text, list(turn.tool_calls or ()))
    else:
        answer = default_answer(conv)
    if turn is not None and turn.thinking is not None:
        answer.thinking = turn.thinking
    elif conv.thinking:
        answer.thinking = _thinking_for(conv.last_user_text())
    return answer


def signature(thinking: str) -> str:
    # Opaque but reproducible, like the real field: clients must only echo it back.
    return base64.b64encode(hashlib.sha256(thinking.encode()).digest()).decode()


def text_chunks(text: str) -> list[str]:
    """Split text at word boundaries so deltas concatenate back to the exact text."""
    return re.findall(r"\s*\S+|\s+$", text)


def fixed_chunks(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def embedding(item: Any, dims: int) -> list[float]:
    """A unit vector derived from a hash of the input, exactly representable as float32.

    Float32-exact values make the JSON floats and the base64 encoding decode to
    the same numbers, so switching encoding_format never changes a result.
    """
    seed = json.dumps(item, sort_keys=True).encode()
    raw = b""
    counter = 0
    while len(raw) < dims * 4:
        raw += hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    values = [int.from_bytes(raw[i * 4 : i * 4 + 4], "big") / 2**32 * 2 - 1 for i in range(dims)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    packed = struct.pack(f"<{dims}f", *(v / norm for v in values))
    return list(struct.unpack(f"<{dims}f", packed))
