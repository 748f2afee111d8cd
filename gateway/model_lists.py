"""The collections as each API lists models, every collection three times (as set, and under the
other two reply modes with a ``:mode`` suffix).

``GET /v1/models`` is called by three SDKs, so it is told apart by headers: ``x-goog-api-key``,
``x-goog-api-client`` or ``?key=`` is google-genai (``{"models": [...]}``), ``anthropic-version``
is Anthropic (``{"data", "has_more", "first_id", "last_id"}``), anything else OpenAI
(``{"object": "list", "data"}``). ``GET /v1/models/<name>`` is told apart the same way. Gemini's
own ``/v1beta/models`` and Ollama's ``/api/tags`` need no guessing.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.engine.collections import Listed as Entry
from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.gateway import anthropic, gemini, ollama, openai_chat, shapes
from benchwarmers_mcp.gateway.face import listed
from benchwarmers_mcp.inbound import guarded

RENDERERS = {"openai": openai_chat.render_error, "anthropic": anthropic.render_error, "gemini": gemini.render_error}
GEMINI_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]


def flavour(request: Request) -> str:
    """Which SDK is asking, from what it always sends."""
    return shapes.list_flavour(request.headers, request.query_params)


def qualified(name: str) -> str:
    """``models/core``, ``core`` or ``bench/core`` as listed: ``bench/core``."""
    name = name.removeprefix("models/")
    return name if name.startswith("bench/") else f"bench/{name}"


def find(entries: list[Entry], name: str) -> tuple[str, dict[str, Any]]:
    wanted = qualified(name)
    for listed_name, item in entries:
        if listed_name == wanted:
            return wanted, item
    raise NotFound(f"no model {name!r}: ask for a collection, bench/<collection>[:all|:merged|:route]; "
                   "the model list has them all")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _bounded(raw: str | None, default: int, top: int, name: str) -> int:
    if raw is None:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= top:
        raise BadRequest(f"{name} must be a whole number from 1 to {top}")
    return int(raw)


# ---- each API's entry and page -----------------------------------------------------------------

def openai_entry(name: str, item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "id": name, "object": "model", "created": int(time.time()), "owned_by": "benchwarmers"}


def anthropic_entry(name: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "model", "id": name, "display_name": f"{name}: {item['description']}".rstrip(": "),
            "created_at": _iso(time.time())}


def gemini_entry(name: str, item: dict[str, Any]) -> dict[str, Any]:
    out = {"name": f"models/{name}", "baseModelId": name, "version": "1", "displayName": name,
           "description": item["description"], "supportedGenerationMethods": GEMINI_METHODS}
    if item["together"]["context_window"]:
        out["inputTokenLimit"] = item["together"]["context_window"]
    return out


def ollama_entry(name: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "model": name, "modified_at": _iso(time.time()), "size": 0,
            "digest": hashlib.sha256(name.encode()).hexdigest(), "details": ollama.details(item)}


def anthropic_page(request: Request, entries: list[Entry]) -> dict[str, Any]:
    ids = [name for name, _ in entries]
    limit = _bounded(request.query_params.get("limit"), 20, 1000, "limit")
    after, before = request.query_params.get("after_id"), request.query_params.get("before_id")
    if before in ids:
        end = ids.index(before)
        start = max(0, end - limit)
        more = start > 0
    else:
        start = ids.index(after) + 1 if after in ids else 0
        end = min(len(ids), start + limit)
        more = end < len(ids)
    data = [anthropic_entry(name, item) for name, item in entries[start:end]]
    return {"data": data, "has_more": more, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None}


def gemini_page(request: Request, entries: list[Entry]) -> dict[str, Any]:
    size = _bounded(request.query_params.get("pageSize"), 50, 1000, "pageSize")
    token = request.query_params.get("pageToken") or "0"
    if not token.isdigit():
        raise BadRequest("pageToken is not one this server gave out")
    start = int(token)
    out: dict[str, Any] = {"models": [gemini_entry(n, i) for n, i in entries[start:start + size]]}
    if start + size < len(entries):
        out["nextPageToken"] = str(start + size)
    return out


# ---- handlers ----------------------------------------------------------------------------------

def by_flavour(handler: Callable[[Request, str], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """Run a shared-path handler and render its errors in the asking SDK's own shape."""

    async def wrapped(request: Request) -> Response:
        kind = flavour(request)

        async def as_kind(request: Request) -> Response:
            return await handler(request, kind)

        return await guarded(RENDERERS[kind])(as_kind)(request)

    wrapped.__name__ = handler.__name__
    return wrapped


@by_flavour
async def list_models(request: Request, kind: str) -> Response:
    """``GET /v1/models`` (and ``/models``), in the asking SDK's shape."""
    entries = await listed(request)
    if kind == "gemini":
        return JSONResponse(gemini_page(request, entries))
    if kind == "anthropic":
        return JSONResponse(anthropic_page(request, entries))
    return JSONResponse({"object": "list", "data": [openai_entry(n, i) for n, i in entries]})


@by_flavour
async def get_model(request: Request, kind: str) -> Response:
    """``GET /v1/models/<name>``, in the asking SDK's shape."""
    name, item = find(await listed(request), request.path_params["rest"])
    entry = {"gemini": gemini_entry, "anthropic": anthropic_entry, "openai": openai_entry}[kind]
    return JSONResponse(entry(name, item))


@guarded(gemini.render_error)
async def gemini_list(request: Request) -> Response:
    """``GET /v1beta/models``."""
    return JSONResponse(gemini_page(request, await listed(request)))


@guarded(gemini.render_error)
async def gemini_get(request: Request) -> Response:
    """``GET /v1beta/models/<name>``."""
    name, item = find(await listed(request), request.path_params["rest"])
    return JSONResponse(gemini_entry(name, item))


@guarded(ollama.render_error)
async def ollama_tags(request: Request) -> Response:
    """``GET /api/tags``."""
    return JSONResponse({"models": [ollama_entry(n, i) for n, i in await listed(request)]})
