"""The canonical, wire-neutral request and answer.

Every inbound dialect (gateway/) parses into an ``Ask`` and renders from ``Answer`` or a stream
of ``StreamEvent``; every outbound provider (providers/) maps a ``ModelRequest`` to its own API
and back. Nothing translates dialect to dialect: N + M mappings, never N * M.

Conventions: tool-call ``arguments`` are JSON text (as OpenAI sends them); ``tool_choice`` and
``options`` use OpenAI's names (``max_tokens``, ``temperature``, ``top_p``, ``stop``, ``seed``...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]
Reply = Literal["all", "merged", "route"]


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Image:
    """An image by http(s) URL or ``data:image/...;base64,`` URL. The gateway never fetches it."""

    url: str

    @property
    def media_type(self) -> str | None:
        if self.url.startswith("data:"):
            return self.url[5:].split(";", 1)[0] or None
        return None

    def placeholder(self) -> str:
        """What logs and mergers see instead of the image."""
        if self.url.startswith("data:"):
            return f"[image: data URL, {len(self.url) * 3 // 4 // 1024} KB]"
        base = self.url.split("?", 1)[0]
        if "@" in base.split("//", 1)[-1].split("/", 1)[0]:
            scheme, rest = base.split("//", 1)
            base = scheme + "//" + rest.split("@", 1)[1]
        return f"[image: {base}{'?...' if '?' in self.url else ''}]"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str = "{}"
    kind: Literal["function", "custom"] = "function"


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str
    content: str
    is_error: bool = False
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Reasoning:
    text: str


Part = Text | Image | ToolCall | ToolResult | Reasoning


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...]
    # the parts by kind, sorted once when the message is made: a model call's body, the token
    # estimate and the checks each read them, for every message of a conversation that grows by
    # the turn (four scans of the parts per message per read, otherwise)
    text: str = field(init=False, repr=False, compare=False)
    images: tuple[Image, ...] = field(init=False, repr=False, compare=False)
    tool_calls: tuple[ToolCall, ...] = field(init=False, repr=False, compare=False)
    tool_results: tuple[ToolResult, ...] = field(init=False, repr=False, compare=False)
    tool_chars: int = field(init=False, repr=False, compare=False)  # its tool calls' and results' characters

    def __post_init__(self) -> None:
        parts = self.parts
        if len(parts) == 1 and type(parts[0]) is Text:  # one text part: most messages of a conversation
            _set(self, "text", parts[0].text)
            _set(self, "images", ())
            _set(self, "tool_calls", ())
            _set(self, "tool_results", ())
            _set(self, "tool_chars", 0)
            return
        texts: list[str] = []
        images: list[Image] = []
        calls: list[ToolCall] = []
        results: list[ToolResult] = []
        for part in self.parts:
            if isinstance(part, Text):
                texts.append(part.text)
            elif isinstance(part, Image):
                images.append(part)
            elif isinstance(part, ToolCall):
                calls.append(part)
            elif isinstance(part, ToolResult):
                results.append(part)
        _set(self, "text", "".join(texts))
        _set(self, "images", tuple(images))
        _set(self, "tool_calls", tuple(calls))
        _set(self, "tool_results", tuple(results))
        _set(self, "tool_chars", sum(len(c.name) + len(c.arguments) for c in calls)
             + sum(len(r.content) for r in results))


_set = object.__setattr__  # a frozen record's fields worked out in __post_init__
_TEXT, _IMAGES, _TOOL_CHARS = attrgetter("text"), attrgetter("images"), attrgetter("tool_chars")


def user(text: str) -> Message:
    return Message("user", (Text(text),))


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    kind: Literal["function", "custom"] = "function"


@dataclass(frozen=True, slots=True)
class Ask:
    """One request to a collection, whatever wire format it came in."""

    collection: str
    messages: tuple[Message, ...]
    system: str | None = None
    reply: Reply | None = None
    with_: tuple[str, ...] = ()
    stream: bool = False
    tools: tuple[Tool, ...] = ()
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    model_name: str = ""
    key_name: str = "local"
    session_hint: str | None = None
    # worked out once: every member a route turn weighs and every model a panel's pool filters asks
    # it, and an agent's conversation is hundreds of messages (200 took 174 us to walk, each time)
    has_images: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _set(self, "has_images", any(map(_IMAGES, self.messages)))  # the walk in C

    @property
    def has_tool_traffic(self) -> bool:
        """Tools offered, or tool calls or results in the conversation (a panel refuses these)."""
        return bool(self.tools) or any(m.tool_calls or m.tool_results for m in self.messages)

    @property
    def prompt_text(self) -> str:
        """The conversation as plain text, images as placeholders: what is logged and merged."""
        chunks = []
        for m in self.messages:
            for p in m.parts:
                if isinstance(p, Text):
                    chunks.append(p.text)
                elif isinstance(p, Image):
                    chunks.append(p.placeholder())
        return "\n\n".join(c for c in chunks if c)


def estimate_tokens(ask: Ask, *, count_tools: bool = False) -> int:
    """The gateway's token estimate of a request: characters / 4 plus 10%, each image 2,500.
    ``count_tools`` adds tool calls, results and definitions (route mode's window check)."""
    return _estimate(ask.system, ask.messages, ask.tools if count_tools else (), count_tools)


def estimate_request_tokens(request: ModelRequest) -> int:
    """The same estimate of what one upstream call sends (pacing counts it against token limits)."""
    return _estimate(request.system, request.messages, (), True)


def _estimate(system: str | None, messages: tuple[Message, ...], tools: tuple[Tool, ...], tool_parts: bool) -> int:
    # from what each message worked out when it was made, summed in C: a route turn estimates its
    # conversation twice (the members' windows, the pacer's token limits), hundreds of messages long
    chars = len(system or "") + sum(map(len, map(_TEXT, messages)))
    if tool_parts:
        chars += sum(map(_TOOL_CHARS, messages))
    images = sum(map(len, map(_IMAGES, messages)))
    chars += sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools)
    return int(chars / 4 * 1.1) + 2500 * images


def estimate_text_tokens(text: str) -> int:
    return int(len(text) / 4 * 1.1)


# An upstream's token count past this is absurd (no model's window comes near it): a count is kept
# within 0..MOST_TOKENS, so one bad report (1e20 tokens) neither overflows the store's 64-bit
# integers and sums nor leaves its call off the ledger.
MOST_TOKENS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False

    def __post_init__(self) -> None:
        if not (0 <= self.input_tokens <= MOST_TOKENS and 0 <= self.output_tokens <= MOST_TOKENS
                and 0 <= self.reasoning_tokens <= MOST_TOKENS):
            for name in ("input_tokens", "output_tokens", "reasoning_tokens"):
                object.__setattr__(self, name, min(max(0, int(getattr(self, name))), MOST_TOKENS))

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.estimated or other.estimated,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What a provider sends: one model, one conversation."""

    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[Tool, ...] = ()
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Answer:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    usage: Usage | None = None
    finish_reason: str = "stop"


# Stream events: what a provider yields and a dialect renders.
@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call. ``id``/``name`` arrive on the first piece of each ``index``."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    kind: Literal["function", "custom"] = "function"


@dataclass(frozen=True, slots=True)
class Finish:
    reason: str = "stop"
    usage: Usage | None = None


StreamEvent = TextDelta | ReasoningDelta | ToolCallDelta | Finish


class AnswerBuilder:
    """Accumulates stream events into an Answer (one place for the streamed and whole paths)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish = Finish()

    def add(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            self.text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            self.reasoning.append(event.text)
        elif isinstance(event, ToolCallDelta):
            call = self.calls.setdefault(event.index, {"id": None, "name": None, "args": [], "kind": event.kind})
            call["id"] = call["id"] or event.id
            call["name"] = call["name"] or event.name
            call["args"].append(event.arguments)
        elif isinstance(event, Finish):
            self.finish = event

    def answer(self) -> Answer:
        calls = tuple(
            ToolCall(c["id"] or f"call_{i}", c["name"] or "", "".join(c["args"]) or "{}", c["kind"])
            for i, c in sorted(self.calls.items())
        )
        reason = self.finish.reason
        if calls and reason == "stop":
            reason = "tool_calls"
        return Answer("".join(self.text), calls, "".join(self.reasoning), self.finish.usage, reason)
