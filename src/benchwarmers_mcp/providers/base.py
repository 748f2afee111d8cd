"""The outbound Protocol: two members. Each provider speaks one upstream API.

"How to speak" lives in the provider class; "where and with which key" is the ``Connection`` it
is built with (base URL, key, headers, the one shared ``httpx.AsyncClient``). Providers raise only
``errors.ProviderError`` subclasses: foreign exceptions are mapped at one boundary,
``map_transport_errors``, and statuses by ``error_for_status``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from benchwarmers_mcp.errors import (
    AuthOrBilling,
    ModelGone,
    ProviderError,
    RateLimited,
    UpstreamFailure,
    UpstreamTimeout,
)
from benchwarmers_mcp.messages import Answer, ModelRequest, StreamEvent
from benchwarmers_mcp.upstream import quota

ResponseHook = Callable[[httpx.Response], None]


@dataclass(frozen=True)
class Connection:
    """``transport``: the shared client's own transport, which a call is sent to directly (the
    client's cookie jar, auth and redirect machinery cost a third of a call's CPU and a gateway
    wants none of them: no redirect is followed, no cookie is carried from one user's call to the
    next). None when the client must route calls itself (proxies from the environment)."""

    base_url: str
    api_key: str | None
    client: httpx.AsyncClient
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 420.0
    on_response: ResponseHook | None = None
    transport: httpx.AsyncBaseTransport | None = None
    api: str = "chat"  # the endpoint's API (a client that speaks several, ``providers/llm_client.py``, reads it)


class Provider(Protocol):
    def __init__(self, connection: Connection) -> None: ...

    async def complete(self, request: ModelRequest) -> Answer: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...


class _TransportErrors:
    """The one place where httpx's exceptions become ours. A class, not ``@contextmanager``: it
    wraps every upstream call, and a generator-based manager costs a generator and two frames more
    each time."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: object) -> None:
        if e is None or isinstance(e, ProviderError):
            return
        if isinstance(e, httpx.TimeoutException):
            raise UpstreamTimeout(f"upstream timed out ({type(e).__name__})") from e
        if isinstance(e, httpx.TransportError):
            raise UpstreamFailure(f"upstream unreachable: {type(e).__name__}: {e}") from e
        if isinstance(e, httpx.HTTPError):  # pragma: no cover - other httpx failures
            raise UpstreamFailure(f"upstream call failed: {type(e).__name__}: {e}") from e


_TRANSPORT_ERRORS = _TransportErrors()  # it keeps no state: one serves every call


def map_transport_errors() -> _TransportErrors:
    """The one place where httpx's exceptions become ours (``with map_transport_errors(): ...``)."""
    return _TRANSPORT_ERRORS


def error_message(body: Any) -> str:
    """The human message out of an upstream error body, whatever its shape: the raw bytes or text,
    or a body (or stream event) already parsed."""
    if isinstance(body, (bytes, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            data = json.loads(text)
        except ValueError:
            return text.strip()[:500]
    else:
        data, text = body, json.dumps(body)
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err)[:500]
        return str(err)[:500]
    return text.strip()[:500]


def prefixed(prefix: str, text: str) -> str:
    """``prefix: text``, said once: a text that already starts so (an upstream that is itself a
    gateway, an error reported again) is not wrapped a second time."""
    head = prefix + ":"
    while text.startswith(head):
        text = text[len(head):].lstrip()
    return f"{head} {text}"


def error_for_status(status: int, headers: httpx.Headers, body: Any) -> ProviderError:
    """Map an upstream HTTP status to the error tree (statuses, never message matching); ``body``
    as ``error_message`` takes it. A 429's wait is ``quota.stated_wait``'s: the later of the wait it
    states anywhere and a used-up window's reset, so a window reopening in seconds is retried or
    rested for those seconds, and one used up for minutes is not retried after a short Retry-After."""
    message = prefixed(f"upstream {status}", error_message(body))
    now = time.time()
    if status == 429:
        return RateLimited(message, upstream_status=status,
                           retry_after=quota.stated_wait(headers, quota.error_envelope(body), message, now))
    wait = quota.retry_after(headers, now)
    if status == 404:
        return ModelGone(message, upstream_status=status)
    if status in (401, 402, 403):
        return AuthOrBilling(message, upstream_status=status)
    if status == 408:
        return UpstreamTimeout(message, upstream_status=status)
    return UpstreamFailure(message, upstream_status=status, retry_after=wait)


async def raise_for_status(response: httpx.Response) -> None:
    if 300 <= response.status_code < 400:
        where = response.headers.get("location", "")
        host = httpx.URL(where).host if where else ""
        raise UpstreamFailure(f"upstream redirected ({response.status_code}) to {host or 'another location'}; "
                              "redirects are not followed, so a key never reaches another host: fix the base URL",
                              upstream_status=response.status_code)
    if response.status_code >= 400:
        body = await response.aread()
        raise error_for_status(response.status_code, response.headers, body)
