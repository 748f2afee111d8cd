"""Sending one request to an upstream: what every provider does the same way on both paths.

The headers (JSON, the key in the API's own header), the POST with the response hook and the
status check, the parsed body or the open stream, and the answer built from the mapped events.
Transport errors become ours inside ``map_transport_errors``, the one boundary, on both paths.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from benchwarmers_mcp.messages import Answer, AnswerBuilder, Finish, StreamEvent
from benchwarmers_mcp.providers.base import Connection, map_transport_errors, raise_for_status
from benchwarmers_mcp.providers.sse import parse_json


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


def _timeout(conn: Connection) -> httpx.Timeout:
    """The call's deadline for every phase but connecting, which has the client's connect timeout
    when that is shorter (a bare ``timeout=`` float would give connecting the whole deadline)."""
    connect = conn.client.timeout.connect
    return httpx.Timeout(conn.timeout, connect=conn.timeout if connect is None else min(connect, conn.timeout))


def _request(conn: Connection, url: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Request:
    """The POST as the shared client would build it: its default headers (user agent, accepted
    encodings) under the call's own, and ``_timeout``."""
    merged = httpx.Headers(conn.client.headers)
    merged.update(headers)
    return httpx.Request("POST", _url(url), json=body, headers=merged,
                         extensions={"timeout": _timeout(conn).as_dict()})


async def _send(conn: Connection, url: str, body: dict[str, Any], headers: dict[str, str], *,
                stream: bool) -> httpx.Response:
    """Send through the client's transport directly when there is one (``Connection.transport``),
    else through the client; a whole answer's body is read before it returns."""
    if conn.transport is None:
        request = conn.client.build_request("POST", url, json=body, headers=headers, timeout=_timeout(conn))
        return await conn.client.send(request, stream=stream)
    request = _request(conn, url, body, headers)
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
        return parse_json(response.text), response.headers


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
