"""Reading a request body: JSON only, bounded in size, an object at the top."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request

from benchwarmers_mcp.errors import BadRequest, TooLarge, UnsupportedMediaType


def _limit_error(max_body: int) -> TooLarge:
    return TooLarge(f"the body is over {max_body:,} bytes; send images as http(s) URLs or smaller images")


async def read_json(request: Request, max_body: int) -> dict[str, Any]:
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
