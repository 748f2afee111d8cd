"""What each of the five wire formats must look like on the wire, whole and streamed (no tests here).

Each dialect names the official SDK's models for a whole reply, a stream's events and an error
body (``tests.kits.conform`` walks them strictly), the framing of its stream, the order its events
must come in, and the keys the Benchwarmers wire contract adds (``bench``, only where
``benchwarmers-v0.3.3.md`` puts it). Where the SDK has no model (Gemini's and Ollama's error
bodies, Anthropic's ``ping``), a small one is written here from ``wire-formats.md``.

``check_whole(dialect, body)`` and ``check_stream(dialect, raw)`` return the problems found; a test
asserts the list is empty, so the message names every departure at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import anthropic.types as an
import ollama
import openai.types as oa
from google.genai import types as gg
from openai.types import chat
from openai.types import responses as rs
from pydantic import BaseModel, ConfigDict

from tests.kits.conform import problems


class _Written(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AnthropicPing(_Written):
    type: Literal["ping"]


class AnthropicErrorEvent(_Written):
    type: Literal["error"]
    error: an.ErrorObject


class OpenAIError(_Written):
    error: oa.ErrorObject


class ChatErrorObject(_Written):
    """The contract's chat error (``benchwarmers-v0.3.3.md`` section 5): ``type: bench_gateway`` and
    the HTTP status as an integer ``code``, where OpenAI's own codes are strings."""

    message: str
    type: str
    code: int
    param: str | None = None


class ChatError(_Written):
    error: ChatErrorObject


class GeminiStatus(_Written):
    code: int
    message: str
    status: str
    details: list[dict[str, Any]] | None = None


class GeminiError(_Written):
    error: GeminiStatus


class OllamaError(_Written):
    error: str


Framing = Literal["sse-data", "sse-named", "ndjson"]


@dataclass(frozen=True)
class Dialect:
    name: str
    whole: Any
    event: Any
    error: Any
    framing: Framing
    extensions: dict[type, set[str]] = field(default_factory=dict)
    required: dict[type, set[str]] = field(default_factory=dict)


BENCH = {"bench"}

# Keys allowed beyond the SDK's models: the contract's ``bench``; ``bench_progress`` on a streamed
# panel's chunks (docs/GATEWAY.md); and what wire-formats.md shows the real API sending that the SDK
# does not model (a Response's ``store``, the arguments' ``done`` event's ``name``, newer Ollama
# servers' tool call ``id`` and ``function.index``).
CHAT = Dialect("chat", chat.ChatCompletion, chat.ChatCompletionChunk | ChatError, ChatError, "sse-data",
               extensions={chat.ChatCompletion: BENCH, chat.ChatCompletionChunk: BENCH | {"bench_progress"}})
RESPONSES = Dialect("responses", rs.Response, rs.ResponseStreamEvent, OpenAIError, "sse-named",
                    extensions={rs.Response: BENCH | {"store"}, rs.ResponseCompletedEvent: BENCH,
                                rs.ResponseFunctionCallArgumentsDoneEvent: {"name"}},
                    required={rs.Response: {"status", "usage"}})
ANTHROPIC = Dialect("anthropic", an.Message, an.RawMessageStreamEvent | AnthropicPing | AnthropicErrorEvent,
                    an.ErrorResponse, "sse-named",
                    extensions={an.Message: BENCH, an.RawMessageDeltaEvent: BENCH},
                    required={an.Message: {"stop_reason", "stop_sequence"}})
GEMINI = Dialect("gemini", gg.GenerateContentResponse, gg.GenerateContentResponse | GeminiError, GeminiError,
                 "sse-data", required={gg.GenerateContentResponse: {"candidates"},
                                       gg.Candidate: {"content", "index"}, gg.Content: {"parts", "role"}})
OLLAMA = Dialect("ollama", ollama.ChatResponse, ollama.ChatResponse | OllamaError, OllamaError, "ndjson",
                 extensions={ollama.ChatResponse: BENCH, ollama.Message.ToolCall: {"id"},
                             ollama.Message.ToolCall.Function: {"index"}},
                 required={ollama.ChatResponse: {"model", "created_at", "done"}, ollama.Message: {"content"}})

DIALECTS = {d.name: d for d in (CHAT, RESPONSES, ANTHROPIC, GEMINI, OLLAMA)}


def check_whole(dialect: Dialect, body: Any) -> list[str]:
    found = problems(body, dialect.whole, extensions=dialect.extensions, required=dialect.required)
    if dialect is OLLAMA and isinstance(body, dict) and body.get("done") is True:
        found += _ollama_done(body, "$")
    return found


def check_error(dialect: Dialect, body: Any) -> list[str]:
    return problems(body, dialect.error)


def check_stream(dialect: Dialect, raw: str) -> list[str]:
    """The framing, every event's shape and the order the format promises its clients."""
    found: list[str] = []
    events = _frames(dialect, raw, found)
    for index, (name, data) in enumerate(events):
        where = f"event {index}"
        if data == "[DONE]":
            continue
        try:
            value = json.loads(data)
        except ValueError:
            found.append(f"{where}: not JSON: {data[:80]!r}")
            continue
        found += [f"{where} {p}" for p in problems(value, dialect.event, extensions=dialect.extensions,
                                                   required=dialect.required)]
        if dialect.framing == "sse-named" and isinstance(value, dict) and value.get("type") != name:
            found.append(f"{where}: the event: line says {name!r}, the data's type {value.get('type')!r}")
    found += ORDER[dialect.name]([(n, d) for n, d in events], found)
    return found


def _frames(dialect: Dialect, raw: str, found: list[str]) -> list[tuple[str | None, str]]:
    if dialect.framing == "ndjson":
        lines = raw.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if any(not line.strip() for line in lines):
            found.append("ndjson: a blank line (NDJSON has none)")
        return [(None, line) for line in lines if line.strip()]
    out: list[tuple[str | None, str]] = []
    if not raw.endswith("\n\n"):
        found.append("sse: the stream does not end with a blank line")
    for frame in raw.split("\n\n"):
        lines = [line for line in frame.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        name: str | None = None
        data: list[str] = []
        for line in lines:
            key, _, rest = line.partition(":")
            rest = rest[1:] if rest.startswith(" ") else rest
            if key == "event":
                name = rest
            elif key == "data":
                data.append(rest)
            else:
                found.append(f"sse: an unknown field line {line[:60]!r}")
        if dialect.framing == "sse-named" and name is None:
            found.append(f"sse: an event without an event: line (the SDK drops it): {frame[:60]!r}")
        if dialect.framing == "sse-data" and name is not None:
            found.append(f"sse: an event: line in a data-only stream: {name!r}")
        out.append((name, "\n".join(data)))
    return out


def _types(events: list[tuple[str | None, str]]) -> list[str]:
    kinds = []
    for _name, data in events:
        try:
            value = json.loads(data)
        except ValueError:
            kinds.append(data)
            continue
        kinds.append(value.get("type", "?") if isinstance(value, dict) else "?")
    return kinds


def _chat_order(events: list[tuple[str | None, str]], _found: list[str]) -> list[str]:
    data = [d for _n, d in events]
    out = []
    if not data or data[-1] != "[DONE]":
        out.append("chat: the stream does not end with data: [DONE]")
    if data.count("[DONE]") > 1:
        out.append("chat: more than one [DONE]")
    chunks = [json.loads(d) for d in data if d != "[DONE]" and _is_json(d)]
    ids = {c.get("id") for c in chunks if "error" not in c}
    if len(ids) > 1:
        out.append(f"chat: chunks of one completion carry {len(ids)} ids")
    finished = [c for c in chunks for ch in c.get("choices", []) if ch.get("finish_reason")]
    if chunks and "error" not in chunks[-1] and not finished:
        out.append("chat: no chunk carries a finish_reason")
    return out


def _responses_order(events: list[tuple[str | None, str]], _found: list[str]) -> list[str]:
    kinds = _types(events)
    out = []
    if any(d == "[DONE]" for _n, d in events):
        out.append("responses: a [DONE] (the Responses API sends none)")
    if kinds[:2] != ["response.created", "response.in_progress"]:
        out.append(f"responses: begins {kinds[:2]}, not response.created then response.in_progress")
    if not kinds or kinds[-1] not in {"response.completed", "response.failed", "response.incomplete"}:
        out.append(f"responses: ends with {kinds[-1:]}, not a terminal response event")
    numbers = [json.loads(d).get("sequence_number") for _n, d in events if _is_json(d)]
    if numbers != list(range(numbers[0] if numbers else 0, (numbers[0] if numbers else 0) + len(numbers))):
        out.append(f"responses: sequence_number not counting up by one: {numbers[:12]}")
    return out


def _anthropic_order(events: list[tuple[str | None, str]], _found: list[str]) -> list[str]:
    kinds = [k for k in _types(events) if k != "ping"]
    out = []
    if "error" in kinds:
        return out if kinds[-1] == "error" else ["anthropic: events after an error"]
    if kinds[:1] != ["message_start"] or kinds[-1:] != ["message_stop"]:
        out.append(f"anthropic: begins {kinds[:1]} and ends {kinds[-1:]}, not message_start ... message_stop")
    if kinds.count("message_delta") != 1 or kinds[-2:-1] != ["message_delta"]:
        out.append("anthropic: not one message_delta just before message_stop")
    open_blocks: set[int] = set()
    for _name, data in events:
        value = json.loads(data) if _is_json(data) else {}
        kind, index = value.get("type"), value.get("index")
        if kind == "content_block_start":
            open_blocks.add(index)
        elif kind in {"content_block_delta", "content_block_stop"} and index not in open_blocks:
            out.append(f"anthropic: {kind} for block {index}, which is not open")
        if kind == "content_block_stop":
            open_blocks.discard(index)
    if open_blocks:
        out.append(f"anthropic: blocks {sorted(open_blocks)} never stopped")
    return out


def _gemini_order(events: list[tuple[str | None, str]], _found: list[str]) -> list[str]:
    out = []
    if any(d == "[DONE]" for _n, d in events):
        out.append("gemini: a [DONE] (Gemini's stream just ends)")
    chunks = [json.loads(d) for _n, d in events if _is_json(d)]
    if chunks and "error" not in chunks[-1]:
        last = chunks[-1].get("candidates") or [{}]
        if not last[0].get("finishReason"):
            out.append("gemini: the last chunk has no finishReason")
    return out


def _ollama_order(events: list[tuple[str | None, str]], _found: list[str]) -> list[str]:
    lines = [json.loads(d) for _n, d in events if _is_json(d)]
    out = []
    if not lines:
        return ["ollama: an empty stream"]
    if "error" in lines[-1]:
        return out
    if lines[-1].get("done") is not True or any(line.get("done") for line in lines[:-1]):
        out.append("ollama: the done line is not the last and only one")
    out += _ollama_done(lines[-1], "last line")
    return out


def _ollama_done(body: dict[str, Any], where: str) -> list[str]:
    """The final object carries the reason and the counts clients read as usage (durations in ns)."""
    out = []
    if body.get("done_reason") not in {"stop", "length", "load", "unload"}:
        out.append(f"{where}: done_reason {body.get('done_reason')!r}")
    for key in ("prompt_eval_count", "eval_count", "total_duration"):
        if not isinstance(body.get(key), int):
            out.append(f"{where}: {key} missing from the done object")
    return out


def _is_json(data: str) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


ORDER = {"chat": _chat_order, "responses": _responses_order, "anthropic": _anthropic_order,
         "gemini": _gemini_order, "ollama": _ollama_order}
