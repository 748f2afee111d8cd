"""What every HTTP face shares at the door (the gateway's dialects, ``/bench``, the admin API, MCP):
the app's context and the caller's key name from a request, the body read as bounded JSON, a
pydantic error as one line, the default error body, and ``guarded``, which makes every failure of a
handler leave in the face's own error shape, never as a bare 500.

The default error body is the gateway's own (OpenAI chat's shape): ``{"error": {"message", "type":
"bench_gateway", "code"}}``. The admin API and ``/bench/*`` speak it too, so a client of ``/v1``,
``/bench`` and ``/api`` reads one kind of error.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from pydantic import ValidationError
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Access, Context, require_access
from benchwarmers_mcp.errors import BadRequest, BenchError, TooLarge, UnsupportedMediaType

log = logging.getLogger("benchwarmers.gateway")

Handler = Callable[[Request], Awaitable[Response]]
RenderError = Callable[[BenchError], Response]


def context(request: Request) -> Context:
    """The app's context (set in the lifespan)."""
    return cast(Context, request.app.state.ctx)


STATE_KEY = "access"  # where the guard leaves the caller's Access, in the request's state


def access_of(request: HTTPConnection | None) -> Access:
    """The caller's Access, as the guard found it; a refusal when there is none (closed by default)."""
    state = request.scope.get("state") if request is not None else None
    return require_access((state or {}).get(STATE_KEY))


def key_name(request: Request) -> str:
    """The caller's key name, as the guard found it (a refusal when it found nothing)."""
    return access_of(request).key_name


def _limit_error(max_body: int) -> TooLarge:
    return TooLarge(f"the body is over {max_body:,} bytes; send images as http(s) URLs or smaller images")


async def read_json(request: Request, max_body: int) -> dict[str, Any]:
    """The body as a JSON object: 415 unless JSON, 413 over ``max_body`` bytes, 400 when malformed."""
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype != "application/json":
        raise UnsupportedMediaType("Content-Type must be application/json")
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise BadRequest("Content-Length is not a number")
        if int(length) > max_body:
            raise _limit_error(max_body)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body:
            raise _limit_error(max_body)
        chunks.append(chunk)
    raw = b"".join(chunks)
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise BadRequest(f"the body is not valid JSON: {str(e)[:200]}") from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


def validation_message(error: ValidationError) -> str:
    """A pydantic validation error as one line a caller can act on (the first five problems)."""
    parts = []
    for e in error.errors()[:5]:
        where = ".".join(str(x) for x in e["loc"]) or "body"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


def error_body(error: BenchError) -> dict[str, Any]:
    """The default error body (OpenAI chat's shape)."""
    return {"error": {"message": error.message, "type": "bench_gateway", "code": error.status}}


def render_error(error: BenchError) -> Response:
    """An error in the default shape, with its status and headers."""
    return JSONResponse(error_body(error), status_code=error.status, headers=error.headers)


def guarded(render: RenderError) -> Callable[[Handler], Handler]:
    """Wrap a handler so every failure leaves in the face's own error shape (``render``)."""

    def wrap(handler: Handler) -> Handler:
        async def guarded_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except BenchError as e:
                return render(e)
            except Exception:
                log.exception("unexpected failure on %s %s", request.method, request.url.path)
                return render(BenchError("internal error in the gateway; the server log has the details"))

        guarded_handler.__name__ = handler.__name__
        return guarded_handler

    return wrap


__all__ = ["STATE_KEY", "Handler", "RenderError", "access_of", "context", "error_body", "guarded", "key_name", "read_json", "render_error",
           "validation_message"]
