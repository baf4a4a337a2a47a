"""The requests an MCP ``ClientSession`` sends, as rewind records them.

A table of its own, importing nothing, so that readers of a trace (the what-if faults) can
tell an MCP step and its JSON-RPC method without importing mcp or the instrumentor.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Request(NamedTuple):
    #: The ``ClientSession`` method.
    method: str
    #: The step's name (a ``call_tool`` step is named after its tool instead).
    name: str
    #: The GenAI operation: ``execute_tool`` (a ``tool`` step) or ``retrieval`` (``memory``).
    operation: str
    #: The JSON-RPC method sent.
    path: str
    #: The ``mcp.types`` class of its result ("" for a raw dict).
    result: str
    #: Hooked on every release (absent optional methods of older releases are skipped).
    required: bool = False


REQUESTS = (
    Request("call_tool", "mcp.call_tool", "execute_tool", "tools/call", "CallToolResult", required=True),
    Request("list_tools", "mcp.list_tools", "execute_tool", "tools/list", "ListToolsResult", required=True),
    Request("read_resource", "mcp.read_resource", "retrieval", "resources/read", "ReadResourceResult", required=True),
    # The handshake, and every other request a ClientSession sends: steps too, so a
    # replay sends nothing at all.
    Request("initialize", "mcp.initialize", "execute_tool", "initialize", "InitializeResult"),
    Request("send_discover", "mcp.discover", "execute_tool", "server/discover", ""),
    Request("send_ping", "mcp.ping", "execute_tool", "ping", "EmptyResult"),
    Request("set_logging_level", "mcp.set_logging_level", "execute_tool", "logging/setLevel", "EmptyResult"),
    Request("complete", "mcp.complete", "execute_tool", "completion/complete", "CompleteResult"),
    Request("subscribe_resource", "mcp.subscribe_resource", "execute_tool", "resources/subscribe", "EmptyResult"),
    Request("unsubscribe_resource", "mcp.unsubscribe_resource", "execute_tool", "resources/unsubscribe", "EmptyResult"),
    Request("list_prompts", "mcp.list_prompts", "retrieval", "prompts/list", "ListPromptsResult"),
    Request("get_prompt", "mcp.get_prompt", "retrieval", "prompts/get", "GetPromptResult"),
    Request("list_resources", "mcp.list_resources", "retrieval", "resources/list", "ListResourcesResult"),
    Request(
        "list_resource_templates",
        "mcp.list_resource_templates",
        "retrieval",
        "resources/templates/list",
        "ListResourceTemplatesResult",
    ),
)

#: Step name -> the JSON-RPC method it sent (not ``call_tool``: see ``tool_call_step``).
PATHS = {request.name: request.path for request in REQUESTS if request.method != "call_tool"}
#: Call parameters that shape the request the server receives (mcp 2.x input rounds).
ROUND_KEYS = ("input_responses", "request_state")


def tool_call_step(kind: str, name: str, request: Any, response: Any) -> bool:
    """Whether a recorded step is a ``call_tool``: a ``tool`` step named after the tool its
    request names, answered with a ``CallToolResult`` (``content`` a list)."""
    return (
        kind == "tool"
        and isinstance(request, dict)
        and request.get("name") == name
        and isinstance(request.get("arguments"), dict)
        and set(request) <= {"name", "arguments", *ROUND_KEYS}
        and isinstance(response, dict)
        and isinstance(response.get("content"), list)
    )
