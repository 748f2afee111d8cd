"""Sending one request to an upstream: what every provider does the same way on both paths.

The headers (JSON, the key in the API's own header), the POST with the response hook and the
status check, the parsed body or the open stream, and the answer built from the mapped events.
Transport errors become ours inside ``map_transport_errors``, the one boundary, on both paths.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from benchwarmers_mcp.messages import Answer, AnswerBuilder, Finish, StreamEvent
from benchwarmers_mcp.providers.base import Connection, map_transport_errors, raise_for_status
from benchwarmers_mcp.providers.sse import parse_json
from benchwarmers_mcp.upstream.transport import LeanTransport


def json_headers(conn: Connection, key_header: str, key_prefix: str = "", *, fixed: dict[str, str] | None = None,
                 key_wins: bool = False) -> dict[str, str]:
    """JSON headers with the key (if any) in ``key_header``; the endpoint's own headers override
    the fixed ones, and the key too unless ``key_wins``."""
    head = {"Content-Type": "application/json", **(fixed or {})}
    key = {key_header: key_prefix + conn.api_key} if conn.api_key else {}
    return {**head, **conn.headers, **key} if key_wins else {**head, **key, **conn.headers}


def _seen(conn: Connection, response: httpx.Response) -> None:
    if conn.on_response:
        conn.on_response(response)


@functools.lru_cache(maxsize=512)
def _url(url: str) -> httpx.URL:
    """A parsed URL (immutable), kept: an endpoint's few URLs are parsed once, not on every call."""
    return httpx.URL(url)


def _deadlines(conn: Connection) -> dict[str, float]:
    """The call's deadline for every phase but connecting, which has the client's connect timeout
    when that is shorter (a bare ``timeout=`` float would give connecting the whole deadline)."""
    connect, deadline = conn.client.timeout.connect, conn.timeout
    return {"connect": deadline if connect is None else min(connect, deadline), "read": deadline,
            "write": deadline, "pool": deadline}


@functools.lru_cache(maxsize=512)
def _origin(url: str) -> httpx.Request:
    """What a prepared POST's response names as its request: the method and URL only (the one
    reader, ``pacing.Seen``, takes the host), made once per URL."""
    return httpx.Request("POST", _url(url))


@functools.lru_cache(maxsize=512)
def _fields(defaults: tuple[tuple[bytes, bytes], ...], headers: tuple[tuple[str, str], ...],
            netloc: bytes) -> tuple[tuple[tuple[bytes, bytes], ...], tuple[tuple[bytes, bytes], ...], bool]:
    """The header lines httpx would send before and after the body's length: Host first, then the
    client's defaults under the call's own (httpx's own merge); and whether to add Content-Length
    (not when the call names it, or Transfer-Encoding, itself)."""
    merged = httpx.Headers(list(defaults))
    merged.update(dict(headers))
    raw = tuple(merged.raw)
    names = {name.lower() for name, _ in raw}
    host = () if b"host" in names else ((b"Host", netloc),)
    return host, raw, not names & {b"content-length", b"transfer-encoding"}


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)  # built once, not per call


def _encode(body: dict[str, Any]) -> bytes:
    """The body as httpx's ``json=`` encodes it."""
    return _ENCODER.encode(body).encode("utf-8")


async def _send(conn: Connection, url: str, body: dict[str, Any], headers: dict[str, str], *,
                stream: bool) -> httpx.Response:
    """Send through the client's transport directly when there is one (``Connection.transport``),
    else through the client; a whole answer's body is read before it returns.

    Sent directly, the POST is made here once, as bytes: the header lines are worked out once per
    endpoint and key, and are what an ``httpx.Request`` with ``json=`` would send (a test compares
    them byte for byte), for a fifth of the CPU. Our own transport takes the bytes
    (``LeanTransport.post_prepared``); any other (a test's) gets a request made of the same bytes."""
    if conn.transport is None:
        request = conn.client.build_request("POST", url, json=body, headers=headers,
                                            timeout=httpx.Timeout(**_deadlines(conn)))
        return await conn.client.send(request, stream=stream)
    parsed = _url(url)
    host, raw, with_length = _fields(tuple(conn.client.headers.raw), tuple(headers.items()), parsed.netloc)
    content = _encode(body)
    fields = (*host, *raw, *(((b"Content-Length", str(len(content)).encode("ascii")),) if with_length else ()))
    if isinstance(conn.transport, LeanTransport):
        response = await conn.transport.post_prepared(parsed, fields, content, _deadlines(conn))
        response.request = _origin(url)
    else:
        request = httpx.Request("POST", parsed, headers=list(fields), content=content,
                                extensions={"timeout": _deadlines(conn)})
        response = await conn.transport.handle_async_request(request)
        response.request = request
    if not stream:
        try:
            await response.aread()
        finally:
            await response.aclose()
    return response


async def post_json(conn: Connection, url: str, body: dict[str, Any],
                    headers: dict[str, str]) -> tuple[Any, httpx.Headers]:
    """POST for a whole answer: its parsed JSON body and the response headers (for in-band errors)."""
    with map_transport_errors():
        response = await _send(conn, url, body, headers, stream=False)
        _seen(conn, response)
        await raise_for_status(response)
        return parse_json(_text(response)), response.headers


def _text(response: httpx.Response) -> str:
    """The body as text: UTF-8 (JSON's own encoding) unless the response names another charset.
    ``response.text`` works the charset out with the email package's header parser on every call
    (a 3-seat panel parsed three Content-Type headers that way)."""
    ctype = response.headers.get("content-type", "")
    if "charset" in ctype.lower() and not _UTF8.search(ctype):
        return response.text
    return response.content.decode("utf-8", "replace")


_UTF8 = re.compile(r"charset\s*=\s*\"?utf-?8\"?\s*(;|$)", re.I)


@asynccontextmanager
async def open_stream(conn: Connection, url: str, body: dict[str, Any],
                      headers: dict[str, str]) -> AsyncIterator[httpx.Response]:
    """POST for a stream: the checked response, open while the block reads it; transport errors
    raised while reading are mapped here too."""
    with map_transport_errors():
        response = await _send(conn, url, body, headers, stream=True)
        try:
            _seen(conn, response)
            await raise_for_status(response)
            yield response
        finally:
            await response.aclose()


def collect(events: Iterable[StreamEvent], finish: Finish) -> Answer:
    """A whole answer from the same events the streamed path yields, then its finish."""
    builder = AnswerBuilder()
    for event in events:
        builder.add(event)
    builder.add(finish)
    return builder.answer()
