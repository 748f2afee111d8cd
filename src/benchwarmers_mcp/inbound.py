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
import math
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from starlette.requests import ClientDisconnect, HTTPConnection, Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Access, Context, require_access
from benchwarmers_mcp.errors import BadRequest, BenchError, HungUp, TooLarge, UnsupportedMediaType
from benchwarmers_mcp.store.db import LARGEST_INTEGER

if TYPE_CHECKING:  # pydantic loads with the first module that validates a body (admin, MCP), not here
    from pydantic import ValidationError

log = logging.getLogger("benchwarmers.gateway")

Handler = Callable[[Request], Awaitable[Response]]
RenderError = Callable[[BenchError], Response]


def context(request: Request) -> Context:
    """The app's context (set in the lifespan)."""
    return cast(Context, request.app.state.ctx)


STATE_KEY = "access"  # where the guard leaves the caller's Access, in the request's state
BODY_KEY = "json_body"  # where it leaves a JSON body it read and checked: (its size, its value)


def access_of(request: HTTPConnection | None) -> Access:
    """The caller's Access, as the guard found it; a refusal when there is none (closed by default)."""
    state = request.scope.get("state") if request is not None else None
    return require_access((state or {}).get(STATE_KEY))


def key_name(request: Request) -> str:
    """The caller's key name, as the guard found it (a refusal when it found nothing)."""
    return access_of(request).key_name


def _limit_error(max_body: int) -> TooLarge:
    return TooLarge(f"the body is over {max_body:,} bytes; send images as http(s) URLs or smaller images")


# A lone surrogate can only come from a \uD800-\uDFFF escape: look for one before walking the value.
_ESCAPE = r"\\u[dD][89a-fA-F]"
_SURROGATE_ESCAPE = re.compile(_ESCAPE)
_SURROGATE_ESCAPE_BYTES = re.compile(_ESCAPE.encode())
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Unstorable(Exception):
    """A whole number in a body that no store column holds (past 64 bits)."""


def _whole(text: str) -> int:
    """A JSON integer (the C scanner hands each to this, a Python call per number: a scan of the
    body for long digit runs cost more than parsing it), refused past the store's 64 bits."""
    value = int(text)
    if len(text) > 18 and not -LARGEST_INTEGER - 1 <= value <= LARGEST_INTEGER:
        shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} digits)"
        raise _Unstorable(f"the number {shown}, too large: whole numbers here are at most {LARGEST_INTEGER:,}"
                          " (64 bits)")
    return value


_WHOLE = re.compile(r"-?[0-9]{1,19}")


def whole_number(raw: str, what: str) -> int:
    """A query parameter as a whole number the store can hold: 400 when it is not one."""
    text = raw.strip()
    if not _WHOLE.fullmatch(text) or not -LARGEST_INTEGER - 1 <= int(text) <= LARGEST_INTEGER:
        raise BadRequest(f"{what} must be a whole number of at most {LARGEST_INTEGER:,}, not {raw[:40]!r}")
    return int(text)


def _no_constant(name: str) -> Any:
    raise BadRequest(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadRequest(f"the number {text[:40]} is too large for a JSON number")
    return value


def _lone_surrogate(value: Any) -> bool:
    """Whether any string in ``value`` (keys included) holds a surrogate code point on its own."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def loads_strict(raw: bytes | str, what: str = "the body") -> Any:
    """JSON as text a program can keep: 400 for malformed JSON, for NaN/Infinity (Python's json takes
    them; no JSON peer does), for numbers too large to be finite, for whole numbers past 64 bits
    (no store column holds one: an id, a limit, a token count), and for strings that are valid JSON
    but not valid Unicode text (a lone surrogate escape such as ``"\\ud800"``, which no UTF-8 encoder,
    database or upstream accepts). Every request body is read through here (the guard, ``read_json``)."""
    try:
        value = json.loads(raw, parse_constant=_no_constant, parse_float=_finite, parse_int=_whole)
    except _Unstorable as e:
        raise BadRequest(f"{what} holds {e}") from None
    except BadRequest as e:
        raise BadRequest(f"{what} is not valid JSON: {e.message}") from None
    except (ValueError, RecursionError) as e:
        raise BadRequest(f"{what} is not valid JSON: {str(e)[:200]}") from None
    escaped = (_SURROGATE_ESCAPE_BYTES.search(raw) if isinstance(raw, bytes) else _SURROGATE_ESCAPE.search(raw))
    if escaped and _lone_surrogate(value):
        raise BadRequest(f"{what} holds a lone surrogate escape (\\ud800 to \\udfff not in a pair): strings must "
                         "be valid Unicode text")
    return value


async def read_json(request: Request, max_body: int) -> dict[str, Any]:
    """The body as a JSON object: 415 unless JSON, 413 over ``max_body`` bytes, 400 when malformed or
    not valid text (``loads_strict``). A body the guard read as JSON (``BODY_KEY``) is JSON whatever
    its type: the guard's rule for untyped JSON decided that."""
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype != "application/json" and BODY_KEY not in (request.scope.get("state") or {}):
        raise UnsupportedMediaType("Content-Type must be application/json")
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise BadRequest("Content-Length is not a number")
        if int(length) > max_body:
            raise _limit_error(max_body)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body:
                raise _limit_error(max_body)
            chunks.append(chunk)
    except ClientDisconnect:
        raise HungUp("the client hung up before its body arrived") from None
    checked = (request.scope.get("state") or {}).get(BODY_KEY)
    body = checked[1] if checked and checked[0] == size else loads_strict(b"".join(chunks))
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


def validation_message(error: ValidationError) -> str:
    """A pydantic validation error as one line a caller can act on (the first five problems); a
    check of our own (a ``ValueError`` in a validator) is said in its own words, without pydantic's."""
    parts = []
    for e in error.errors()[:5]:
        where = ".".join(str(x) for x in e["loc"]) or "body"
        if e["type"] == "value_error" and e.get("ctx", {}).get("error"):  # our own check's words, whole
            parts.append(str(e["ctx"]["error"]))
        else:
            parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


def error_body(error: BenchError) -> dict[str, Any]:
    """The default error body (OpenAI chat's shape)."""
    return {"error": {"message": error.message, "type": "bench_gateway", "code": error.status}}


def render_error(error: BenchError) -> Response:
    """An error in the default shape, with its status and headers."""
    return JSONResponse(error_body(error), status_code=error.status, headers=error.headers)


def plain_text(text: str) -> str:
    """``text`` with anything UTF-8 cannot carry (a lone surrogate) replaced, so it can be sent."""
    return text.encode("utf-8", "replace").decode("utf-8") if _SURROGATE.search(text) else text


def render_safely(render: RenderError, error: BenchError) -> Response:
    """``render(error)``, the message made sendable first; a renderer that still fails gives way to
    a generic error in the same shape (an error renderer never turns a refusal into a 500)."""
    error.message = plain_text(error.message)
    try:
        return render(error)
    except Exception:
        log.exception("the error renderer failed on a %d", error.status)
        fallback = BenchError("the request could not be answered; the server log has the details")
        fallback.status = error.status
        return render(fallback)


def guarded(render: RenderError) -> Callable[[Handler], Handler]:
    """Wrap a handler so every failure leaves in the face's own error shape (``render``). A client
    that hung up mid-body is logged as that (its answer goes to nobody), never as a failure."""

    def wrap(handler: Handler) -> Handler:
        async def guarded_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except HungUp as e:
                log.info("%s %s: %s", request.method, request.url.path, e.message)
                return render_safely(render, e)
            except BenchError as e:
                return render_safely(render, e)
            except Exception:
                log.exception("unexpected failure on %s %s", request.method, request.url.path)
                return render(BenchError("internal error in the gateway; the server log has the details"))

        guarded_handler.__name__ = handler.__name__
        return guarded_handler

    return wrap


__all__ = ["BODY_KEY", "STATE_KEY", "Handler", "RenderError", "access_of", "context", "error_body", "guarded", "key_name",
           "loads_strict", "plain_text", "read_json", "render_error", "render_safely", "validation_message",
           "whole_number"]
