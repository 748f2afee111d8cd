"""The MCP tool contract: four tools, their strict schemas and rule-carrying descriptions, and how
their results read. Two faces serve it: the server's own ``/mcp`` (``mcp_server.py``, which runs
the engine directly) and ``benchwarmers mcp`` over stdio (``mcp_stdio.py``, a client of a running
server). Each hands ``build_server`` a ``Backend``; nothing here imports the engine.

A backend raises ``ToolFailure`` with the text the agent should read; the tool returns it as an
``isError`` result, never a protocol error.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, Field

log = logging.getLogger("benchwarmers.mcp")

SERVER_NAME = "benchwarmers"
SERVER_TITLE = "Benchwarmers"
INSTRUCTIONS = (
    "Benchwarmers asks a panel of models the same question and returns every answer, labelled by seat "
    "and model, each with a call id. RULES: 1. Ask a collection, not a favourite model; list_collections "
    "says what each is for. 2. Verify before acting: seats fail together and agreement is not evidence. "
    "3. Send a verdict per judged seat, true claims in real, untrue ones in false. 4. Name every seat that "
    "answered, errors and empty replies included; an empty reply from a reasoning model is usually its token "
    "budget. Good uses: exhaustive enumeration over real files, adversarial review of a diff or plan. Keep "
    "the design and the decisions yourself."
)
TAIL_BYTES = 8 * 1024 * 1024
MAX_CALLS = 5000
PENDING_PANELS, MAX_PENDING_PANELS = 5, 50  # panels ``pending_verdicts`` lists by default, at most
ANSWER_CHARS = 4000  # of each owed seat's answer it shows
PANEL_CALL = re.compile(r"\bp\d{8}-\d{6}-[0-9a-f]{4}\.[a-z]+\d*\b")
NO_COLLECTIONS = ("No collections yet. Create one on the Benchwarmers dashboard (or `bench collection save`), "
                  "then ask it by name.")
JUDGE_NOTE = ("Name every seat below when you report (errors and empty replies too), verify each claim against "
              "the source before acting, and send one verdict per seat you judged (true claims in real, untrue "
              "ones in false).")


class ToolFailure(Exception):
    """A tool call that cannot be answered: refused, no server, timed out. ``text`` is for the agent."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


# ---- arguments ---------------------------------------------------------------------------------

class _Args(ArgModelBase):
    """Strict arguments: unknown fields are refused. The tool receives the whole model as ``args``.

    The tools are registered with these models and hand-written schemas (not from function
    signatures) because two wire names, ``with`` and ``false``, are Python keywords, and every schema
    must say ``additionalProperties: false``.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"args": self}


class NoArgs(_Args):
    pass


class AskArgs(_Args):
    collection: str = Field(min_length=1, max_length=100)
    prompt: str = Field(min_length=1)
    system: str | None = None
    merged: bool | None = None
    with_: list[str] | None = Field(None, alias="with", max_length=10)


class ClaimArgs(_Args):
    id: str = Field(min_length=1, max_length=64)
    judgement: Literal["real", "false", "none"]


class VerdictArgs(_Args):
    call: str = Field(min_length=3, max_length=200)
    useful: bool
    note: str | None = None
    real: list[str] | None = None
    false_: list[str] | None = Field(None, alias="false")
    claims: list[ClaimArgs] | None = Field(None, max_length=200)

    def body(self) -> dict[str, Any]:
        """The ``POST /bench/verdict`` body: the fields that were sent (what is left out is empty:
        a verdict replaces the last one whole)."""
        out: dict[str, Any] = {"call": self.call, "useful": self.useful}
        for key, value in (("note", self.note), ("real", self.real), ("false", self.false_)):
            if value is not None:
                out[key] = value
        if self.claims is not None:
            out["claims"] = [{"id": c.id, "judgement": c.judgement} for c in self.claims]
        return out


class PendingArgs(_Args):
    session: Any = None
    transcript: Any = None
    active: Any = None
    collection: str | None = Field(None, min_length=1, max_length=100)
    limit: int | None = Field(None, ge=1, le=MAX_PENDING_PANELS)

    @property
    def for_hook(self) -> bool:
        """Called as the Stop hook (any of its three fields sent), not by an agent for the list."""
        return self.session is not None or self.transcript is not None or self.active is not None


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


_STRINGS = {"type": "array", "items": {"type": "string"}}
SCHEMAS: dict[str, dict[str, Any]] = {
    "list_collections": _object({}),
    "ask": _object({
        "collection": {"type": "string", "description": "A collection: core or bench/core."},
        "prompt": {"type": "string", "description": "The question with the real text it is about (code, diff, "
                                                     "file contents): the seats cannot read your files."},
        "system": {"type": "string", "description": "System text sent to every seat."},
        "merged": {"type": "boolean", "description": "true: one reconciled answer; false: every answer; "
                                                     "omit: the collection's own mode."},
        "with": {**_STRINGS, "description": "Model aliases to seat as explorers, this request only "
                                          "(with a scoped key: only models its collections use)."},
    }, ("collection", "prompt")),
    "verdict": _object({
        "call": {"type": "string", "description": "A seat's call id, e.g. p20261022-101500-ab12.member1."},
        "useful": {"type": "boolean", "description": "Did the answer help, checked against the source?"},
        "note": {"type": "string", "description": "What you checked, in a line."},
        "real": {**_STRINGS, "description": "Claims you verified true, one sentence each."},
        "false": {**_STRINGS, "description": "Claims you found untrue, one sentence each."},
        "claims": {"type": "array", "description": "Claim groups of this panel (ids from pending_verdicts) to mark "
                                                   "on every seat that made them.",
                   "items": _object({"id": {"type": "string"}, "judgement": {"enum": ["real", "false", "none"]}},
                                    ("id", "judgement"))},
    }, ("call", "useful")),
    "pending_verdicts": _object({
        "collection": {"type": "string", "description": "Only this collection's panels."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PENDING_PANELS,
                  "description": f"Panels to list (default {PENDING_PANELS})."},
        "session": {"type": "string", "description": "Stop hook: the Claude Code session id."},
        "transcript": {"type": "string", "description": "Stop hook: its transcript_path (.jsonl)."},
        "active": {"description": "Stop hook: stop_hook_active; true means say nothing."},
    }),
}
DESCRIPTIONS = {
    "list_collections": (
        "The collections you can ask: what each is for, tags, members (each with its status: healthy, failing, "
        "resting..., and its rating from verdicts: mean, 90% interval), explorer seats, reply mode and what the "
        "members handle together. Pick one by task before calling ask."),
    "ask": (
        "Ask a collection for independent answers from every seat; a panel can take minutes (progress is "
        "reported as seats answer). Ask a collection, not a favourite model. Put the real text in the prompt "
        "(code, diff, file contents): the seats cannot read your files. Verify every claim against the source "
        "before acting. When you report, name every seat that answered. Send a verdict per judged seat."),
    "verdict": (
        "Record a verdict on one seat (a call id from ask), after checking its answer against the source. Put "
        "the true claims in real and the untrue ones in false, one sentence each: they feed routing and the "
        "confidently-wrong record, so a note alone is not enough. A verdict replaces the seat's last one whole. "
        "claims marks a claim group on every seat that made it. Sending the same verdict twice changes nothing."),
    "pending_verdicts": (
        "The seats still owed a verdict, newest panel first: each with its claims, grouped across seats (an id "
        "to mark with verdict's claims). With session and transcript it is the plugin's Stop hook: this "
        "session's seats, reminded once each."),
}
TITLES = {"list_collections": "List collections", "ask": "Ask a collection", "verdict": "Record a verdict",
          "pending_verdicts": "Seats still to judge"}
ANNOTATIONS = {
    "list_collections": ToolAnnotations(read_only_hint=True, open_world_hint=False),
    "ask": ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
    "verdict": ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                               open_world_hint=False),
    "pending_verdicts": ToolAnnotations(read_only_hint=True, open_world_hint=False),
}
ARGS: dict[str, type[_Args]] = {"list_collections": NoArgs, "ask": AskArgs, "verdict": VerdictArgs,
                                "pending_verdicts": PendingArgs}


# ---- progress ----------------------------------------------------------------------------------

Report = Callable[[float, float | None, str | None], Awaitable[None]]


class Progress:
    """Progress of one ``ask``: a step each time a seat answers, and a tick while waiting.

    Values only ever grow: ticks climb towards the next step (``done + t/(t+1)``) without reaching it.
    """

    def __init__(self, report: Report, clock: Callable[[], float] = time.monotonic) -> None:
        self._report = report
        self._clock = clock
        self._started = clock()
        self.done = 0
        self.total: int | None = None
        self._ticks = 0

    async def seat(self, done: int, total: int | None = None, message: str | None = None) -> None:
        """``done`` steps of ``total`` are finished (a seat answered, or the merge)."""
        self.done, self._ticks = done, 0
        if total is not None:
            self.total = total
        if message is None:
            message = f"{done} of {self.total} seats answered" if self.total else f"{done} seats answered"
        await self._send(float(done), message)

    async def tick(self) -> None:
        self._ticks += 1
        elapsed = int(self._clock() - self._started)
        if self.total:
            message = f"{self.done} of {self.total} seats answered · {elapsed} s"
        else:
            message = f"the panel is running, {elapsed} s"
        await self._send(self.done + self._ticks / (self._ticks + 1), message)

    async def _send(self, value: float, message: str) -> None:
        try:
            await self._report(value, float(self.total) if self.total else None, message)
        except Exception as e:  # a client that went away must not sink the panel: it is recorded anyway
            log.debug("progress not delivered: %s", e)


# ---- backends ----------------------------------------------------------------------------------

class Backend(Protocol):
    """Where the tools get their answers: the engine in-process, or a running server over HTTP.
    ``request`` is the HTTP request that carried the call (``None`` over stdio)."""

    async def collections(self, request: Any) -> list[dict[str, Any]]: ...

    async def ask(self, args: AskArgs, request: Any, progress: Progress,
                  client: str = "") -> tuple[str, dict[str, Any]]: ...

    async def verdict(self, args: VerdictArgs, request: Any) -> tuple[dict[str, Any], bool]: ...

    async def remind(self, session: str, calls: list[str], request: Any) -> list[str]: ...

    async def owed_panels(self, args: PendingArgs, request: Any) -> tuple[list[dict[str, Any]], int]:
        """The owed panels, each as ``GET /bench/panels/{id}`` gives it, and every seat owed."""
        ...


# ---- results -----------------------------------------------------------------------------------

def text_result(*texts: str, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=t) for t in texts], is_error=error)


def collection_summary(entry: dict[str, Any]) -> dict[str, Any]:
    together = entry.get("together") or {}
    out = {key: entry.get(key) for key in ("name", "description", "tags", "members", "explorers", "shape",
                                           "reply", "merger")}
    out["context_window"] = together.get("context_window")
    out["capabilities"] = together.get("capabilities") or []
    if together.get("limits"):
        out["limits"] = together["limits"]
    if entry.get("statuses"):  # each member's status (engine/roster.py): the word every page shows, and why
        out["member_status"] = {a: {"status": s.get("status"), "why": s.get("status_why")}
                                for a, s in entry["statuses"].items()}
    if entry.get("ratings"):  # a rating's own standing is "rating", never a second "status"
        out["ratings"] = {a: {**{k: v for k, v in r.items() if k != "status"}, "rating": r.get("status")}
                          for a, r in entry["ratings"].items()}
    return out


def collections_text(entries: list[dict[str, Any]]) -> str:
    if not entries:
        return NO_COLLECTIONS
    return json.dumps([collection_summary(e) for e in entries], ensure_ascii=False)


def _seat_summary(seat: dict[str, Any], with_answer: bool) -> dict[str, Any]:
    out = {key: seat.get(key) for key in ("call", "seat", "alias", "status", "seconds")}
    if seat.get("error"):
        out["error"] = str(seat["error"])[-300:]
    if with_answer and seat.get("answer"):
        out["answer"] = seat["answer"]
    return out


def ask_summary(bench: dict[str, Any]) -> dict[str, Any]:
    """The ``bench`` field, cut to what an agent needs to name seats and send verdicts."""
    merged = bench.get("reply") == "merged"
    out: dict[str, Any] = {key: bench.get(key) for key in ("panel", "collection", "shape")}
    out["seats"] = [_seat_summary(s, merged) for s in bench.get("seats") or []]
    if bench.get("merger"):
        out["merger"] = _seat_summary(bench["merger"], False)
    for key in ("skipped", "note"):
        if bench.get(key):
            out[key] = bench[key]
    return out


def ask_result(content: str, bench: dict[str, Any]) -> CallToolResult:
    return text_result(content, JUDGE_NOTE + "\n" + json.dumps(ask_summary(bench), ensure_ascii=False))


def verdict_text(recorded: dict[str, Any], written: bool) -> str:
    judged = "useful" if recorded.get("useful") else "not useful"
    counts = f"{len(recorded.get('real') or [])} real, {len(recorded.get('false') or [])} false"
    if not written:
        return f"Already recorded {recorded.get('call')}: {judged}, {counts} (unchanged)."
    return f"Recorded {recorded.get('call')}: {judged}, {counts}."


# ---- pending verdicts --------------------------------------------------------------------------

def _read_tail(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return None


async def panel_calls(transcript: str) -> list[str]:
    """Panel call ids named in the tail of a transcript, first seen first; [] when unreadable."""
    text = await anyio.to_thread.run_sync(_read_tail, transcript)
    if not text:
        return []
    return list(dict.fromkeys(PANEL_CALL.findall(text)))


def is_active(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def hook_reply(due: list[str]) -> str:
    context = (f"Benchwarmers: {len(due)} seat(s) from this session's panels have no verdict yet: "
               f"{', '.join(due)}. Send a verdict for each seat you judged (verdict tool: useful, with the true "
               f"claims in real and the untrue ones in false) or say in one line why not.")
    return json.dumps({"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": context}})


def owed_summary(panel: dict[str, Any]) -> dict[str, Any]:
    """One panel as ``pending_verdicts`` lists it: each owed seat with its answer (cut) and its
    claims, each claim with its group, and the groups those claims are in (id, text, seats)."""
    head = panel["panel"]
    owed = [s for s in panel["seats"] if s.get("owed")]
    owed_calls = {s["call"] for s in owed}
    groups = [g for g in panel.get("claims") or () if owed_calls & set(g["calls"])]
    seats = []
    for seat in owed:
        answer = str(seat.get("answer") or "")
        entry: dict[str, Any] = {"call": seat["call"], "seat": seat["seat"], "alias": seat["alias"],
                                 "status": seat["status"], "answer": answer[:ANSWER_CHARS]}
        if len(answer) > ANSWER_CHARS:
            entry["answer_cut"] = True
        entry["claims"] = [{"text": c["text"], "group": g["id"]} for g in groups for c in g["claims"]
                           if c["call"] == seat["call"]]
        seats.append(entry)
    return {"panel": head["id"], "collection": head["collection"], "asked_by": head.get("asked_by"),
            "source": head.get("source"), "client": head.get("client"), "prompt": head.get("prompt_preview"),
            "seats": seats, "groups": [{"id": g["id"], "text": g["text"], "seats": g["seats"], "calls": g["calls"],
                                        "judgement": g["judgement"]} for g in groups]}


async def owed_text(backend: Backend, args: PendingArgs, request: Any) -> str:
    """The seats owed a verdict, as JSON: the panels (``owed_summary``) and how many seats are owed."""
    details, total = await backend.owed_panels(args, request)
    if not details:
        return "Nothing to judge: every answered seat has a verdict."
    return json.dumps({"owed_total": total, "panels": [owed_summary(d) for d in details]}, ensure_ascii=False)


async def pending_text(backend: Backend, args: PendingArgs, request: Any) -> str:
    """The Stop hook's answer (empty unless some seat is due a reminder); called without the hook's
    fields, the seats owed a verdict (``owed_text``)."""
    if not args.for_hook:
        return await owed_text(backend, args, request)
    session, transcript = args.session, args.transcript
    if is_active(args.active) or not isinstance(session, str) or not session.strip():
        return ""
    if not isinstance(transcript, str) or Path(transcript).suffix != ".jsonl":
        return ""
    calls = (await panel_calls(transcript))[-MAX_CALLS:]
    if not calls:
        return ""
    due = await backend.remind(session.strip(), calls, request)
    return hook_reply(due) if due else ""


# ---- the server --------------------------------------------------------------------------------

def http_request(ctx: Context) -> Any:
    """The HTTP request that carried this call, when there is one."""
    try:
        return ctx.request_context.request
    except ValueError:  # no request context (an in-process call)
        return None


def client_of(ctx: Context) -> str:
    """The MCP client's ``clientInfo`` as ``name/version`` ('' when it sent none)."""
    try:
        params = ctx.session.client_params
    except (AttributeError, ValueError):  # no session behind this call
        return ""
    info = params.client_info if params is not None else None
    if info is None:
        return ""
    return f"{info.name}/{info.version}"[:120] if info.version else info.name[:120]


def _tools(backend: Backend) -> dict[str, Callable[..., Awaitable[CallToolResult]]]:
    async def list_collections(args: NoArgs, ctx: Context) -> CallToolResult:
        return text_result(collections_text(await backend.collections(http_request(ctx))))

    async def ask(args: AskArgs, ctx: Context) -> CallToolResult:
        content, bench = await backend.ask(args, http_request(ctx), Progress(ctx.report_progress), client_of(ctx))
        return ask_result(content, bench)

    async def verdict(args: VerdictArgs, ctx: Context) -> CallToolResult:
        recorded, written = await backend.verdict(args, http_request(ctx))
        return text_result(verdict_text(recorded, written))

    async def pending_verdicts(args: PendingArgs, ctx: Context) -> CallToolResult:
        return text_result(await pending_text(backend, args, http_request(ctx)))

    return {"list_collections": list_collections, "ask": ask, "verdict": verdict,
            "pending_verdicts": pending_verdicts}


def _guard(fn: Callable[..., Awaitable[CallToolResult]]) -> Callable[..., Awaitable[CallToolResult]]:
    async def guarded(args: _Args, ctx: Context) -> CallToolResult:
        try:
            return await fn(args, ctx)
        except ToolFailure as e:
            return text_result(e.text, error=True)

    return guarded


def build_server(backend: Backend, version: str) -> MCPServer:
    """An MCP server with the four tools, answering from ``backend``."""
    tools = [
        Tool(fn=_guard(fn), name=name, title=TITLES[name], description=DESCRIPTIONS[name],
             parameters=SCHEMAS[name], fn_metadata=FuncMetadata(arg_model=ARGS[name]), is_async=True,
             context_kwarg="ctx", annotations=ANNOTATIONS[name])
        for name, fn in _tools(backend).items()
    ]
    return MCPServer(SERVER_NAME, title=SERVER_TITLE, instructions=INSTRUCTIONS, version=version, tools=tools,
                     log_level="WARNING")
