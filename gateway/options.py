"""Sampling options as each dialect names them, read into the canonical (OpenAI) names.

A panel reads them but each seat keeps its own call options; route mode passes them on. A
value of the wrong type is a 400 naming the field the caller sent, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchwarmers_mcp.errors import BadRequest

NUMBER = ("temperature", "top_p", "presence_penalty", "frequency_penalty")
INTEGER = ("max_tokens", "max_completion_tokens", "seed", "n")


def _check(name: str, value: Any, where: str) -> Any:
    if name in NUMBER and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise BadRequest(f"{where} must be a number")
    if name in INTEGER and (isinstance(value, bool) or not isinstance(value, int)):
        raise BadRequest(f"{where} must be an integer")
    if name == "stop":
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise BadRequest(f"{where} must be a list of strings")
    if name == "reasoning_effort" and not isinstance(value, str):
        raise BadRequest(f"{where} must be a string")
    return value


def pick(source: Any, names: Mapping[str, str], where: str = "") -> dict[str, Any]:
    """``names`` maps the dialect's field to the canonical name; absent and null fields are skipped."""
    if source is None:
        return {}
    if not isinstance(source, dict):
        raise BadRequest(f"{where.rstrip('.')} must be an object")
    out: dict[str, Any] = {}
    for theirs, ours in names.items():
        value = source.get(theirs)
        if value is not None:
            out[ours] = _check(ours, value, f"{where}{theirs}")
    return out


def json_schema_format(schema: Any, name: str = "response") -> dict[str, Any]:
    """A structured-output request in chat-completions terms (route mode passes it on)."""
    if isinstance(schema, dict) and schema:
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    return {"type": "json_object"}
