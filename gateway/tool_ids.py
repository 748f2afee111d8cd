"""Tool-call bookkeeping shared by the dialects: the calls an assistant turn lists, arguments as
JSON text, and call ids for the dialects that usually send none (Gemini, Ollama), numbered per
request, with each result matched to the oldest open call of the same name."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator
from typing import Any

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.inbound import loads_strict


def arguments_text(value: Any, where: str) -> str:
    """Tool-call arguments as the canonical JSON text. Objects are encoded; a string must be JSON."""
    if value is None:
        return "{}"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        try:
            loads_strict(value or "{}", where)
        except BadRequest as e:
            raise BadRequest(f"{where} must be a JSON object (or JSON text): {e.message}") from None
        return value or "{}"
    raise BadRequest(f"{where} must be a JSON object")


def function_calls(raw: Any, where: str) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]]]:
    """An assistant turn's ``tool_calls`` (chat completions, Ollama): each call with its index and its
    ``function`` object, checked to carry a name; none when the field is absent or empty."""
    if not raw:
        return
    if not isinstance(raw, list):
        raise BadRequest(f"{where}.tool_calls must be a list")
    for i, call in enumerate(raw):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise BadRequest(f"{where}.tool_calls[{i}] needs function.name")
        yield i, call, fn


class CallIds:
    """Ids for one request's tool calls: pass through when given, else ``call_<n>``."""

    def __init__(self) -> None:
        self.count = 0
        self.open: dict[str, deque[str]] = {}

    def _fresh(self) -> str:
        self.count += 1
        return f"call_{self.count}"

    def call(self, name: str, given: Any = None) -> str:
        call_id = given if isinstance(given, str) and given else self._fresh()
        self.open.setdefault(name, deque()).append(call_id)
        return call_id

    def result(self, name: str | None, given: Any = None) -> str:
        """The id a result answers: the one given, else the oldest open call of that name."""
        if isinstance(given, str) and given:
            for queue in self.open.values():
                if given in queue:
                    queue.remove(given)
            return given
        oldest = self.open.get(name or "")
        if oldest:
            return oldest.popleft()
        return self._fresh()
