"""Small conversions every native provider needs: data URLs, tool arguments, tool names, options,
and tool names a member's API takes (``NameRule``, ``ToolNames``: shortened reversibly)."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from itertools import chain
from operator import attrgetter
from typing import Any

from benchwarmers_mcp.messages import (
    Message,
    ModelRequest,
    Part,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    ToolResult,
)

_TOOL_CALLS = attrgetter("tool_calls")


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


# ---- tool names a member's API takes ------------------------------------------------------------

@dataclass(frozen=True)
class NameRule:
    """What an API allows in a tool's name: its length, its characters, and its first character."""

    max_length: int
    allowed: str = "A-Za-z0-9_-"
    first: str | None = None

    def fits(self, name: str) -> bool:
        body = f"[{self.allowed}]{{1,{self.max_length}}}"
        pattern = body if self.first is None else f"(?=[{self.first}]){body}"
        return re.fullmatch(pattern, name) is not None


CHAT_NAMES = NameRule(64)  # OpenAI and the OpenAI-compatible servers: ^[a-zA-Z0-9_-]{1,64}$
NAME_RULES = {
    "chat": CHAT_NAMES, "simulated": CHAT_NAMES, "ollama": CHAT_NAMES, "responses": CHAT_NAMES,
    "anthropic": NameRule(64),  # the Messages API's ^[a-zA-Z0-9_-]{1,64}$ (the stricter of its documented limits)
    "gemini": NameRule(64, "A-Za-z0-9_.:-", first="A-Za-z_"),  # a letter or underscore first; 64 of 128 allowed
}


def name_rule(api: str) -> NameRule:
    """The tool-name rule of an endpoint's API (chat completions' for one it does not know)."""
    return NAME_RULES.get(api, CHAT_NAMES)


def short_name(name: str, rule: NameRule, digits: int = 8) -> str:
    """A name the rule takes, made from ``name`` alone: its allowed characters (others become
    ``_``), cut to fit, and a suffix of ``digits`` hex digits of its SHA-256, so it is stable
    across requests and two long names that start alike stay apart."""
    suffix = "_" + hashlib.sha256(name.encode()).hexdigest()[:digits]
    clean = re.sub(f"[^{rule.allowed}]", "_", name)
    if rule.first is not None and not re.match(f"[{rule.first}]", clean):
        clean = "t_" + clean
    return clean[: rule.max_length - len(suffix)] + suffix


class ToolNames:
    """One request's tool names as a member's API takes them, and back: a name the rule takes stays
    itself; any other gets its ``short_name`` (longer digits on the rare clash). Made from the
    request alone, so nothing is kept between requests; a turn maps its member's calls back with
    the same object."""

    def __init__(self, names: Iterable[str], rule: NameRule) -> None:
        self.rule = rule
        self.theirs_of: dict[str, str] = {}
        self.ours_of: dict[str, str] = {}
        wanted = list(dict.fromkeys(names))
        kept = {n for n in wanted if rule.fits(n)}
        for name in wanted:
            theirs, digits = name, 8
            while not rule.fits(theirs) or (theirs != name and theirs in kept) or theirs in self.ours_of:
                theirs, digits = short_name(name, rule, digits), digits + 4
            self.theirs_of[name], self.ours_of[theirs] = theirs, name

    @classmethod
    def of(cls, request: ModelRequest, rule: NameRule) -> ToolNames:
        return cls([t.name for t in request.tools], rule)

    @property
    def renamed(self) -> dict[str, str]:
        """Each name the member sees otherwise: ours -> theirs."""
        return {ours: theirs for ours, theirs in self.theirs_of.items() if ours != theirs}

    def theirs(self, name: str) -> str:
        if name in self.theirs_of:
            return self.theirs_of[name]
        return name if self.rule.fits(name) else short_name(name, self.rule)

    def ours(self, name: str) -> str:
        return self.ours_of.get(name, name)

    def _map_part(self, part: Part) -> Part:
        if isinstance(part, ToolCall):
            return replace(part, name=self.theirs(part.name))
        if isinstance(part, ToolResult) and part.name:
            return replace(part, name=self.theirs(part.name))
        return part

    def _map_choice(self, choice: Any) -> Any:
        name = forced_tool(choice)
        if name is None or not isinstance(choice, dict):
            return choice
        if isinstance(choice.get("function"), dict):
            return {**choice, "function": {**choice["function"], "name": self.theirs(name)}}
        return {**choice, "name": self.theirs(name)}

    def request(self, request: ModelRequest) -> ModelRequest:
        """The request with every tool name (tools, choice, the conversation's calls) as the member sees it."""
        calls = chain.from_iterable(map(_TOOL_CALLS, request.messages))  # the messages walked in C
        if not self.renamed and all(self.rule.fits(c.name) for c in calls):
            return request
        messages = tuple(Message(m.role, tuple(self._map_part(p) for p in m.parts)) for m in request.messages)
        tools = tuple(replace(t, name=self.theirs(t.name)) for t in request.tools)
        return replace(request, messages=messages, tools=tools, tool_choice=self._map_choice(request.tool_choice))

    def event(self, event: StreamEvent) -> StreamEvent:
        """A member's stream event with its tool call's name as the request named it."""
        if isinstance(event, ToolCallDelta) and event.name:
            return replace(event, name=self.ours(event.name))
        return event
