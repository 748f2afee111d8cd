"""Tool definitions as the dialects receive them: the ``tools`` array's own checks, the same in
every dialect, and a canonical ``Tool`` with an empty object schema where the caller gave none."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.messages import Tool


def entries(raw: Any) -> list[Any]:
    """The ``tools`` array: absent, null or empty is no tools; anything else must be a list."""
    if raw is None or raw == []:
        return []
    if not isinstance(raw, list):
        raise BadRequest("tools must be a list")
    return raw


def objects(raw: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each tool with its index, checked to be an object as it comes."""
    for i, t in enumerate(entries(raw)):
        if not isinstance(t, dict):
            raise BadRequest(f"tools[{i}] must be an object")
        yield i, t


def tool(name: str, description: Any, schema: Any) -> Tool:
    """A tool; a schema that is not an object stands for "no parameters"."""
    parameters = schema if isinstance(schema, dict) else {"type": "object", "properties": {}}
    return Tool(name, str(description or ""), parameters)


def function_tool(fn: Any, i: int) -> Tool:
    """The ``function`` object of ``{"type": "function", "function": {...}}`` (chat completions, Ollama)."""
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise BadRequest(f"tools[{i}] must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}")
    return tool(fn["name"], fn.get("description"), fn.get("parameters"))
