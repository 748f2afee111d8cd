"""A provider key never leaves through upstream text.

An upstream may echo what it was sent: the key (in an error body, a header, a redirect, the answer
itself) or a value of the endpoint's own headers. Upstream text enters the product at one place,
the model caller (and the model listing), and is masked there, so everything downstream (replies,
seat and turn errors, rests, pauses, alerts, learned facts, probe history, logs) only ever holds
masked text.

``Secrets`` is what one call sent, ready to mask: each secret in the spellings it may come back in
(as sent, JSON-escaped, URL-quoted). A run of at least ``PARTIAL`` characters of a secret is masked
too, so a key cut short (an error message truncated, an answer stopped mid-key) still does not
leave. ``StreamMask`` masks a stream of events, holding back the tail of a piece that may be the
start of a secret until the next piece says whether it is. ``KeyMaskFilter`` masks log records
(messages and tracebacks) with every key the key store knows.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, quote_plus

from benchwarmers_mcp.messages import Answer, Finish, ReasoningDelta, StreamEvent, TextDelta, ToolCallDelta

MIN_SECRET = 6  # shorter values are not masked: masking "abc" everywhere would wreck every answer
PARTIAL = 12  # this many characters of a secret (longer than any vendor's fixed prefix) are masked
HEAD = 4  # a held-back tail this long or longer is found by where a secret's first HEAD characters are
# header values sent with every request that are not secrets
PUBLIC_HEADERS = frozenset({"content-type", "accept", "user-agent", "anthropic-version", "anthropic-beta",
                            "openai-beta", "http-referer", "referer", "x-title"})
TOKEN = "[masked {what}]"


@dataclass(frozen=True)
class _Secret:
    text: str  # one spelling of a secret
    token: str  # what it becomes

    @property
    def probe(self) -> str:
        return self.text[:PARTIAL]

    @property
    def head(self) -> str:
        return self.text[:HEAD]


def _spellings(value: str) -> set[str]:
    """As sent, JSON-escaped, URL-quoted, lower-cased (a host name, say)."""
    return {value, json.dumps(value)[1:-1], quote(value, safe=""), quote_plus(value, safe=""), value.lower()}


@dataclass(frozen=True)
class Secrets:
    """What one call sent (or every key known, for logs), ready to mask text with."""

    items: tuple[_Secret, ...] = ()  # longest first
    # precomputed for the hot path: (spelling, its probe, its head, its token), and every
    # secret's first one to HEAD - 1 characters (what a short held-back tail may be)
    _scan: tuple[tuple[str, str, str, str], ...] = ()
    _shorts: frozenset[str] = frozenset()

    @classmethod
    def of(cls, named: Iterable[tuple[str, str | None]]) -> Secrets:
        """``named`` is (what it is, value) pairs, e.g. ("key openai", "sk-...")."""
        found: dict[str, _Secret] = {}
        for what, value in named:
            if value and len(value) >= MIN_SECRET:
                for text in _spellings(value):
                    found.setdefault(text, _Secret(text, TOKEN.format(what=what)))
        items = tuple(sorted(found.values(), key=lambda s: len(s.text), reverse=True))
        return cls(items, tuple((s.text, s.probe, s.head, s.token) for s in items),
                   frozenset(s.text[:k] for s in items for k in range(1, HEAD)))

    @classmethod
    def for_endpoint(cls, key_name: str | None, key: str | None, headers: Mapping[str, str]) -> Secrets:
        """The key an endpoint's calls carry and its own header values (but the public ones)."""
        named = [(f"key {key_name or ''}".strip(), key)]
        named += [(f"header {name}", value) for name, value in headers.items() if name.lower() not in PUBLIC_HEADERS]
        return cls.of(named)

    def __bool__(self) -> bool:
        return bool(self.items)

    def mask(self, text: str) -> str:
        """Every secret, whole or a run of ``PARTIAL`` characters of it, replaced by its token."""
        for secret, probe, _, token in self._scan:
            i = text.find(probe)
            while i != -1:
                n = len(probe)
                while n < len(secret) and i + n < len(text) and text[i + n] == secret[n]:
                    n += 1
                text = text[:i] + token + text[i + n:]
                i = text.find(probe, i + len(token))
        return text

    def held_from(self, text: str) -> int:
        """Where a tail that may be the start of a secret begins (``len(text)`` when none does). A
        tail of ``HEAD`` characters or more starts where a secret's first ``HEAD`` do (rare in any
        text, found by ``str.find``); a shorter one is one of the secrets' first few characters."""
        size = cut = len(text)
        for secret, _, head, _ in self._scan:
            i = text.find(head, max(0, size - len(secret) + 1))
            while i != -1 and i < cut:
                if secret.startswith(text[i:]):
                    cut = i
                    break
                i = text.find(head, i + 1)
        if cut == size:
            for k in range(min(HEAD - 1, size), 0, -1):
                if text[size - k:] in self._shorts:
                    return size - k
        return cut

    def split(self, text: str) -> tuple[str, str]:
        """``text`` masked up to a tail that may be the start of a secret, and that tail, held back."""
        cut = self.held_from(text)
        return self.mask(text[:cut]), text[cut:]

    def answer(self, answer: Answer) -> Answer:
        calls = tuple(replace(c, id=self.mask(c.id), name=self.mask(c.name), arguments=self.mask(c.arguments))
                      for c in answer.tool_calls)
        return replace(answer, text=self.mask(answer.text), reasoning=self.mask(answer.reasoning), tool_calls=calls)

    def error(self, error: BaseException) -> None:
        """Mask a ``BenchError``'s message in place (the same error goes on, masked)."""
        message = getattr(error, "message", None)
        if isinstance(message, str):
            masked = self.mask(message)
            if masked != message:
                error.message = masked  # type: ignore[attr-defined]
                error.args = (masked,)

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {name: self.mask(value) for name, value in headers.items()}

    def data(self, value: Any) -> Any:
        """Every string in parsed JSON (keys too) masked."""
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {self.mask(str(k)): self.data(v) for k, v in value.items()}
        return value


Channel = tuple[str, int]  # ("text", 0), ("reasoning", 0) or ("tool", index)


class StreamMask:
    """Masks a stream of events. The tail of a piece that may be the start of a secret is held back
    until the next piece of the same kind; a piece of another kind (or the end) lets it go, masked."""

    def __init__(self, secrets: Secrets) -> None:
        self.secrets = secrets
        self.held: dict[Channel, str] = {}
        self.kinds: dict[int, str] = {}

    def feed(self, event: StreamEvent) -> list[StreamEvent]:
        if isinstance(event, Finish):
            return [*self.end(), event]
        if isinstance(event, TextDelta):
            return self._piece(("text", 0), event.text, lambda safe: TextDelta(safe))
        if isinstance(event, ReasoningDelta):
            return self._piece(("reasoning", 0), event.text, lambda safe: ReasoningDelta(safe))
        self.kinds.setdefault(event.index, event.kind)
        first = event.id is not None or event.name is not None
        head = replace(event, id=None if event.id is None else self.secrets.mask(event.id),
                       name=None if event.name is None else self.secrets.mask(event.name))
        return self._piece(("tool", event.index), event.arguments, lambda safe: replace(head, arguments=safe),
                           always=first)

    def _piece(self, channel: Channel, text: str, make: Callable[[str], StreamEvent],
               always: bool = False) -> list[StreamEvent]:
        out = self._release(keep=channel)
        safe, held = self.secrets.split(self.held.pop(channel, "") + text)
        if held:
            self.held[channel] = held
        if safe or always:
            out.append(make(safe))
        return out

    def _release(self, keep: Channel | None = None) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for channel in [c for c in self.held if c != keep]:
            text = self.secrets.mask(self.held.pop(channel))
            kind, index = channel
            if kind == "text":
                out.append(TextDelta(text))
            elif kind == "reasoning":
                out.append(ReasoningDelta(text))
            else:
                out.append(ToolCallDelta(index, arguments=text, kind="custom" if self.kinds.get(index) == "custom"
                                         else "function"))
        return out

    def end(self) -> list[StreamEvent]:
        """What is still held, masked: the stream ended."""
        return self._release()


class KeyMaskFilter(logging.Filter):
    """Masks every key the key store knows in a log record: its message and its traceback (a
    Gemini ``?key=`` may be in the URL an httpx exception names). ``values`` gives the keys now."""

    def __init__(self, values: Callable[[], Iterable[str]]) -> None:
        super().__init__()
        self.values = values
        self._known: tuple[tuple[str, ...], Secrets] = ((), Secrets())

    def secrets(self) -> Secrets:
        values = tuple(sorted(set(self.values())))
        if values != self._known[0]:
            self._known = (values, Secrets.of(("key", v) for v in values))
        return self._known[1]

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self.secrets()
        if not secrets:
            return True
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = str(record.msg)
        record.msg, record.args = secrets.mask(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = secrets.mask(record.exc_text)
            record.exc_info = None  # formatters print the masked text, never the exception again
        if record.stack_info:
            record.stack_info = secrets.mask(record.stack_info)
        return True
