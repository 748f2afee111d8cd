"""Small conversions every native provider needs: data URLs, tool arguments, tool names, options."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from typing import Any

from benchwarmers_mcp.messages import Message, ModelRequest


def split_data_url(url: str) -> tuple[str, str] | None:
    """``data:image/png;base64,AAAA`` -> ("image/png", "AAAA"); None for anything else."""
    if not url.startswith("data:"):
        return None
    head, _, data = url[5:].partition(",")
    media, _, encoding = head.partition(";")
    if encoding.lower() != "base64" or not data:
        return None
    return media or "application/octet-stream", data


def guess_media_type(url: str) -> str:
    """A media type from an image URL's extension (for APIs that want one with a link)."""
    path = url.split("?", 1)[0].lower()
    for ext, media in ((".png", "image/png"), (".gif", "image/gif"), (".webp", "image/webp"),
                       (".heic", "image/heic"), (".heif", "image/heif")):
        if path.endswith(ext):
            return media
    return "image/jpeg"


def arguments_object(text: str) -> dict[str, Any]:
    """Tool-call arguments as the JSON object native APIs want (OpenAI's are JSON text)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"arguments": text}
    return value if isinstance(value, dict) else {"arguments": value}


def arguments_text(value: Any) -> str:
    """A native API's argument object back to OpenAI's JSON text."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, ensure_ascii=False, separators=(",", ":"))


def tool_names(messages: tuple[Message, ...]) -> dict[str, str]:
    """call id -> tool name, from the assistant turns (for APIs whose results carry the name)."""
    return {c.id: c.name for m in messages for c in m.tool_calls}


SYNONYMS = {"max_tokens": ("max_tokens", "max_completion_tokens")}


def option(request: ModelRequest, *names: str) -> Any:
    """The first of these options the request sets (OpenAI's names), else None."""
    for name in names:
        value = request.options.get(name)
        if value is not None:
            return value
    return None


def options_as(request: ModelRequest, names: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The options the request sets among ``(ours, theirs)`` pairs, under the upstream API's names;
    ``max_tokens`` stands for ``max_completion_tokens`` too."""
    found = ((theirs, option(request, *SYNONYMS.get(ours, (ours,)))) for ours, theirs in names)
    return {theirs: value for theirs, value in found if value is not None}


# ``reasoning_effort`` (OpenAI's name, the canonical option): "none" or "minimal" turn thinking off where
# an API can, "low" / "medium" / "high" ask for it. APIs that take a budget get these token budgets.
THINKING_OFF = ("none", "minimal")
THINKING_BUDGETS = {"low": 1024, "medium": 8192, "high": 24576}


def reasoning_effort(request: ModelRequest) -> str | None:
    """The request's reasoning effort, lower case, or None when it sets none."""
    value = option(request, "reasoning_effort")
    return str(value).strip().lower() if value is not None else None


def forced_tool(choice: Any) -> str | None:
    """The tool an OpenAI-style ``tool_choice`` object names (``{"function": {"name"}}`` or ``{"name"}``)."""
    if not isinstance(choice, dict):
        return None
    return (choice.get("function") or {}).get("name") or choice.get("name")


def call_id(given: Any) -> str:
    """A tool call's own id, or a new one for the APIs that send none (Gemini, Ollama)."""
    return given or f"call_{secrets.token_hex(6)}"


def stop_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(v) for v in value]
