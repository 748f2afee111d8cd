"""A provider key never leaves through upstream text.

An upstream may echo what it was sent: the key (in an error body, a header, a redirect, the answer
itself) or a value of the endpoint's own headers, as sent or re-cased (an error that shouts it, a
host name lower-cased). Upstream text enters the product at one place, the model caller (and the
model listing), and is masked there, so everything downstream (replies, seat and turn errors,
rests, pauses, alerts, learned facts, probe history, logs) only ever holds masked text.

``Secrets`` is what one call sent, ready to mask: each secret in the spellings it may come back in
(as sent, JSON-escaped, URL-quoted), matched in any case. Any run of at least ``PARTIAL``
characters of a secret (the whole of a shorter one) is masked, wherever in the secret it starts:
a key cut short at either end (an error message truncated, an answer stopped mid-key, a prefix
dropped) still does not leave. Runs are found by ``str.find`` of a few anchors, pieces of the
secret that any such run contains whole, then grown both ways (``Secrets.runs``).

``StreamMask`` masks a stream of events, holding back the tail of a piece that may be part of a
secret until the next piece says whether it is. ``KeyMaskFilter`` masks log records (messages and
tracebacks) with every key the key store knows.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, quote_plus

from benchwarmers_mcp.messages import Answer, Finish, ReasoningDelta, StreamEvent, TextDelta, ToolCallDelta

MIN_SECRET = 6  # shorter values are not masked: masking "abc" everywhere would wreck every answer
PARTIAL = 12  # a run this long of a secret is masked, in any case (a shorter secret: the whole of it)
# header values sent with every request that are not secrets
PUBLIC_HEADERS = frozenset({"content-type", "accept", "user-agent", "anthropic-version", "anthropic-beta",
                            "openai-beta", "http-referer", "referer", "x-title"})
TOKEN = "[masked {what}]"

Run = tuple[int, int, str]  # where a run of a secret starts and ends in a text, and its token


def fold(text: str) -> str:
    """``text`` lower-cased character for character, so a place in it is the same place in ``text``
    (the few characters that lower-case to two, such as U+0130, are left as they are)."""
    folded = text.lower()
    if len(folded) == len(text):
        return folded
    return "".join(low if len(low := c.lower()) == 1 else c for c in text)


def _common_start(a: str, i: int, b: str, j: int) -> int:
    """How many characters ``a[i:]`` and ``b[j:]`` share at their start (all of them, as a run of a
    key echoed whole does, in one comparison)."""
    n = min(len(a) - i, len(b) - j)
    if a[i:i + n] == b[j:j + n]:
        return n
    k = 0
    while a[i + k] == b[j + k]:
        k += 1
    return k


def _common_end(a: str, i: int, b: str, j: int) -> int:
    """How many characters ``a[:i]`` and ``b[:j]`` share at their end."""
    n = min(i, j)
    if a[i - n:i] == b[j - n:j]:
        return n
    k = 0
    while a[i - k - 1] == b[j - k - 1]:
        k += 1
    return k


def _spellings(value: str) -> set[str]:
    """As sent, JSON-escaped, URL-quoted; each lower-cased, as it is matched in any case."""
    return {fold(s) for s in (value, json.dumps(value)[1:-1], quote(value, safe=""), quote_plus(value, safe=""))}


@dataclass(frozen=True)
class _Secret:
    text: str  # one spelling of a secret, lower-cased
    token: str  # what it becomes
    shortest: int  # the shortest run of it that is masked

    def anchors(self) -> list[tuple[str, int]]:
        """Pieces of the secret, with where each starts in it, such that every run of ``shortest``
        characters holds one whole: the whole secret when that is the run, else pieces of
        ``shortest // 2`` characters every ``shortest - size + 1`` (a run of ``shortest`` starting
        anywhere holds the next piece whole). Each is one ``str.find`` of a text."""
        if self.shortest == len(self.text):
            return [(self.text, 0)]
        size = self.shortest // 2
        step = self.shortest - size + 1
        return [(self.text[at:at + size], at) for at in range(0, len(self.text) - size + 1, step)]


@dataclass(frozen=True)
class Secrets:
    """What one call sent (or every key known, for logs), ready to mask text with."""

    items: tuple[_Secret, ...] = ()
    # precomputed for the hot path: each anchor once, and every (secret, place in it) it stands for
    _pieces: tuple[str, ...] = ()
    _places: Mapping[str, tuple[tuple[_Secret, int], ...]] = field(default_factory=dict, compare=False)
    _texts: tuple[str, ...] = ()
    _least: int = 0  # a text shorter than this holds no run to mask

    @classmethod
    def of(cls, named: Iterable[tuple[str, str | None]]) -> Secrets:
        """``named`` is (what it is, value) pairs, e.g. ("key openai", "sk-...")."""
        found: dict[str, _Secret] = {}
        for what, value in named:
            if value and len(value) >= MIN_SECRET:
                for text in _spellings(value):
                    found.setdefault(text, _Secret(text, TOKEN.format(what=what), min(PARTIAL, len(text))))
        items = tuple(sorted(found.values(), key=lambda s: len(s.text), reverse=True))
        anchors: dict[str, list[tuple[_Secret, int]]] = {}
        for secret in items:
            for piece, at in secret.anchors():
                anchors.setdefault(piece, []).append((secret, at))
        return cls(items, tuple(anchors), {piece: tuple(places) for piece, places in anchors.items()},
                   tuple(secret.text for secret in items), min((s.shortest for s in items), default=0))

    @classmethod
    def for_endpoint(cls, key_name: str | None, key: str | None, headers: Mapping[str, str]) -> Secrets:
        """The key an endpoint's calls carry and its own header values (but the public ones)."""
        named = [(f"key {key_name or ''}".strip(), key)]
        named += [(f"header {name}", value) for name, value in headers.items() if name.lower() not in PUBLIC_HEADERS]
        return cls.of(named)

    def __bool__(self) -> bool:
        return bool(self.items)

    def runs(self, folded: str) -> list[Run]:
        """Every run of a secret in ``folded`` (a text as ``fold`` gives it) long enough to mask, as
        long as it goes, sorted; runs that overlap are one."""
        found: list[tuple[int, int, _Secret, int]] = []  # start, end, secret, where in it the run starts
        for piece in self._pieces:
            if piece in folded:  # rare: the text holds a piece of a secret
                self._grow(folded, piece, found)
        if not found:
            return []
        found.sort(key=lambda run: (run[0], -run[1]))
        merged: list[Run] = []
        for start, end, secret, _ in found:
            if merged and start < merged[-1][1]:
                if end > merged[-1][1]:
                    merged[-1] = (merged[-1][0], end, merged[-1][2])
            else:
                merged.append((start, end, secret.token))
        return merged

    def _grow(self, folded: str, piece: str, found: list[tuple[int, int, _Secret, int]]) -> None:
        """Each place ``piece`` is in ``folded``, grown both ways as far as the secret goes on; those
        runs long enough to mask added to ``found`` (a place inside a run found already is skipped)."""
        i = folded.find(piece)
        while i != -1:
            for secret, at in self._places[piece]:
                if any(s is secret and start <= i < end and i - start == at - first for start, end, s, first in found):
                    continue
                before = _common_end(folded, i, secret.text, at)
                after = _common_start(folded, i + len(piece), secret.text, at + len(piece))
                if before + len(piece) + after >= secret.shortest:
                    found.append((i - before, i + len(piece) + after, secret, at - before))
            i = folded.find(piece, i + 1)

    @staticmethod
    def _replaced(text: str, runs: list[Run]) -> str:
        out: list[str] = []
        at = 0
        for start, end, token in runs:
            out += (text[at:start], token)
            at = end
        out.append(text[at:])
        return "".join(out)

    def mask(self, text: str) -> str:
        """Every secret, whole or a run of ``PARTIAL`` characters of it, in any case, replaced by its token."""
        if len(text) < self._least:
            return text
        runs = self.runs(fold(text))
        return self._replaced(text, runs) if runs else text

    def held_from(self, folded: str) -> int:
        """Where the longest tail of ``folded`` that is part of a secret begins (``len(folded)`` when
        none is): what the next piece of a stream may continue into a run. A tail that is not part
        of one has no longer tail that is, so this looks at one character more until one is not."""
        at = len(folded)
        while at:
            tail = folded[at - 1:]
            for text in self._texts:
                if tail in text:
                    break
            else:
                return at
            at -= 1
        return at

    def split(self, text: str) -> tuple[str, str]:
        """``text`` masked up to a tail that may be part of a secret, and that tail, held back. A run
        found that reaches into the tail is held back whole, so no run is ever cut in two."""
        folded = fold(text)
        cut = self.held_from(folded)
        runs = self.runs(folded)
        moved = True
        while moved:
            moved = False
            for start, end, _ in runs:
                if start < cut < end:
                    cut, moved = start, True
        kept = [run for run in runs if run[1] <= cut]
        return self._replaced(text[:cut], kept), text[cut:]

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
    """Masks a stream of events. The tail of a piece that may be part of a secret is held back
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
