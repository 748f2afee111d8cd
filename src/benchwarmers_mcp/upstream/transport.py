"""The outbound transport of the shared client: a keep-alive pool of ``upstream.connection``s.

``httpx.AsyncClient`` stays the interface every provider uses (requests, ``httpx.Response``,
streaming, the test seam ``upstream_transport=``); only the layer below it changes. httpx's default
transport (httpcore + h11, pure Python) costs most of an outbound call's CPU on the hot path; this
one sends the head and body in one write and parses with httptools (see issue 13 and
``benchmarks/outbound.py`` for the figures).

HTTP/1.1 only, as httpx's default. Bounds as ``httpx.Limits``: at most ``max_connections`` open in
all, at most ``max_keepalive`` idle, an idle one closed after ``keepalive_expiry`` seconds; a
request that finds every slot taken waits up to the pool timeout. An idle connection the server
closed is never handed out (the socket is polled before reuse); a request whose reused connection
was gone before it was written, or an idempotent one whose connection ended before any response
byte, is sent once more on a fresh connection. A POST that went out is never sent twice: the
server may have acted on it (an LLM call is billed) before it dropped the connection.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from typing import Any

import httpx

from benchwarmers_mcp.upstream.connection import Connection, ServerClosed, expire

Origin = tuple[str, str, int]
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
DEFAULT_PORTS = {"http": 80, "https": 443}


class _Pool:
    """Connections by origin. ``_open`` counts every connection from the moment a slot is taken for
    it (connecting, busy or idle) until it is discarded, so the bound holds while connects run."""

    def __init__(self, max_connections: int, max_keepalive: int, keepalive_expiry: float) -> None:
        self.max_connections, self.max_keepalive, self.expiry = max_connections, max_keepalive, keepalive_expiry
        self._idle: dict[Origin, list[Connection]] = {}
        self._idle_count = 0
        self._open: set[Connection] = set()
        self._connecting = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._swept = 0.0

    async def acquire(self, origin: Origin, connect: Callable[[], Coroutine[Any, Any, Connection]],
                      timeout: float | None) -> tuple[Connection, bool]:
        """A live connection to ``origin`` and whether it served a request before."""
        loop = asyncio.get_running_loop()
        if loop.time() - self._swept > min(1.0, self.expiry):
            self._sweep(loop.time())
        while True:
            conn = self._take_idle(origin, loop.time())
            if conn is not None:
                return conn, True
            if len(self._open) + self._connecting < self.max_connections or self._evict_one():
                self._connecting += 1
                try:
                    conn = await connect()
                except BaseException:
                    self._wake()  # the slot it held is free again
                    raise
                finally:
                    self._connecting -= 1
                self._open.add(conn)
                return conn, False
            waiter = loop.create_future()
            self._waiters.append(waiter)
            handle = loop.call_later(timeout, expire, waiter, httpx.PoolTimeout) if timeout is not None else None
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                    self._wake()  # woken, but leaving (cancelled): the turn passes to the next waiter
                raise
            finally:
                if handle is not None:
                    handle.cancel()
                if not waiter.done():
                    waiter.cancel()

    def release(self, conn: Connection) -> None:
        """A response read to its end: keep its connection for the next request, or close it."""
        if conn not in self._open:
            return
        if conn.reusable and self._idle_count < self.max_keepalive:
            conn.idle_since = asyncio.get_running_loop().time()
            self._idle.setdefault(conn.origin, []).append(conn)
            self._idle_count += 1
            self._wake()
        else:
            self.discard(conn)

    def discard(self, conn: Connection) -> None:
        """Close a connection and free its slot (an abandoned response, a failure, an expiry)."""
        conn.close()
        if conn in self._open:
            self._open.discard(conn)
            self._wake()

    def counts(self) -> dict[str, int]:
        idle = sum(conn.reusable for conns in self._idle.values() for conn in conns)
        return {"open": len(self._open) + self._connecting, "idle": idle}

    def close_all(self) -> None:
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()
        self._idle_count = 0

    def _take_idle(self, origin: Origin, now: float) -> Connection | None:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()  # the most recently used: the least likely to have timed out server-side
            self._idle_count -= 1
            if conn.reusable and now - conn.idle_since < self.expiry and not conn.readable():
                return conn
            self.discard(conn)
        return None

    def _sweep(self, now: float) -> None:
        """Close idle connections past their expiry or closed by their server, whatever their origin
        (at most once a second, or once an expiry if shorter): an origin not called again would otherwise hold its sockets."""
        self._swept = now
        for origin, conns in self._idle.items():
            keep = [c for c in conns if c.reusable and now - c.idle_since < self.expiry]
            if len(keep) < len(conns):
                for conn in conns:
                    if conn not in keep:
                        self.discard(conn)
                self._idle_count -= len(conns) - len(keep)
                self._idle[origin] = keep

    def _evict_one(self) -> bool:
        """Every slot is taken: close the longest-idle connection of any origin to make room."""
        oldest: Connection | None = None
        for conns in self._idle.values():
            if conns and (oldest is None or conns[0].idle_since < oldest.idle_since):
                oldest = conns[0]
        if oldest is None:
            return False
        self._idle[oldest.origin].remove(oldest)
        self._idle_count -= 1
        self.discard(oldest)
        return True

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


class _Body(httpx.AsyncByteStream):
    """A response body as it arrives; its end returns the connection to the pool, closing it early
    drops the connection (its unread rest would corrupt the next response)."""

    def __init__(self, conn: Connection, pool: _Pool, timeout: float | None) -> None:
        self._conn, self._pool, self._timeout = conn, pool, timeout
        self._settled = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            while data := await self._conn.piece(self._timeout):
                yield data
        except BaseException:
            self._settle(ended=False)
            raise
        self._settle(ended=True)

    async def aclose(self) -> None:
        self._settle(ended=False)

    def _settle(self, ended: bool) -> None:
        if not self._settled:
            self._settled = True
            (self._pool.release if ended or self._conn.reusable else self._pool.discard)(self._conn)


class LeanTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio sockets with httptools. ``ssl_context`` replaces the default trust
    (``httpx.create_ssl_context()``, made on the first https request so start-up stays quick)."""

    def __init__(self, *, max_connections: int = 100, max_keepalive: int = 20, keepalive_expiry: float = 5.0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self._pool = _Pool(max_connections, max_keepalive, keepalive_expiry)
        self._ssl_context = ssl_context

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        head = _head_of(request)
        try:
            body: bytes | None = head + request.content
        except httpx.RequestNotRead:
            body = None  # a streamed body: sent piece by piece after the head
        return await self._exchange(request.url, request.method, head, body, request,
                                    request.extensions.get("timeout", {}))

    async def post_prepared(self, url: httpx.URL, fields: Sequence[tuple[bytes, bytes]], content: bytes,
                            timeouts: Mapping[str, float | None]) -> httpx.Response:
        """A POST whose header lines (``fields``, Host and Content-Length among them) and body the
        caller made: what ``handle_async_request`` sends for such a request, without building an
        ``httpx.Request`` (its headers' merge and JSON body cost more than the send itself)."""
        head = _head(b"POST", url.raw_path, fields)
        return await self._exchange(url, "POST", head, head + content, None, timeouts)

    async def _exchange(self, url: httpx.URL, method: str, head: bytes, body: bytes | None,
                        request: httpx.Request | None, timeouts: Mapping[str, float | None]) -> httpx.Response:
        """Send ``body`` (head included), or ``head`` then ``request``'s stream when ``body`` is None,
        and answer the response's head with its body to come."""
        scheme = url.scheme
        if scheme not in DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {scheme!r}")
        host = url.raw_host.decode("ascii")
        origin = (scheme, host, url.port or DEFAULT_PORTS[scheme])
        for attempt in (1, 2):
            conn, reused = await self._pool.acquire(
                origin, lambda: self._connect(origin, timeouts.get("connect")), timeouts.get("pool"))
            try:
                conn.start(head_only=method == "HEAD")
                if body is not None:
                    await conn.write(body, timeouts.get("write"))
                else:
                    assert request is not None  # a streamed body is the request's
                    await conn.write(head, timeouts.get("write"))
                    await _send_stream(conn, request, timeouts.get("write"))
                status, reason, headers = await conn.head(timeouts.get("read"))
            except ServerClosed as e:
                self._pool.discard(conn)
                if reused and attempt == 1 and body is not None and (e.unread or method in IDEMPOTENT):
                    continue
                raise httpx.RemoteProtocolError(str(e)) from (e.cause or e)
            except BaseException:
                self._pool.discard(conn)
                raise
            return httpx.Response(status, headers=headers, stream=_Body(conn, self._pool, timeouts.get("read")),
                                  extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason})
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def aclose(self) -> None:
        self._pool.close_all()

    def connections(self) -> dict[str, int]:
        """How many connections are open (connecting, busy or idle) and how many of them wait idle
        and still usable: for diagnostics and the tests of the pool's bounds."""
        return self._pool.counts()

    async def _connect(self, origin: Origin, timeout: float | None) -> Connection:
        scheme, host, port = origin
        context = None
        if scheme == "https":
            if self._ssl_context is None:
                self._ssl_context = httpx.create_ssl_context()
            context = self._ssl_context
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(lambda: Connection(origin), host, port, ssl=context,
                                                       server_hostname=host if context else None)
        except TimeoutError as e:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out") from e
        except OSError as e:  # refused, unreachable, DNS, TLS verification (ssl.SSLError is one)
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {e}") from e
        return conn


def _head_of(request: httpx.Request) -> bytes:
    return _head(request.method.encode("ascii"), request.url.raw_path, request.headers.raw)


def _head(method: bytes, target: bytes, raw: Sequence[tuple[bytes, bytes]]) -> bytes:
    """The request line and headers as sent. A CR or LF inside a name or value would smuggle a
    header of its own: each header line must hold exactly one of each."""
    fields = b"".join([b"%s: %s\r\n" % pair for pair in raw])
    if fields.count(b"\n") != len(raw) or fields.count(b"\r") != len(raw):
        raise httpx.LocalProtocolError("a request header holds a line break")
    return b"%s %s HTTP/1.1\r\n%s\r\n" % (method, target, fields)


async def _send_stream(conn: Connection, request: httpx.Request, timeout: float | None) -> None:
    """A streamed request body, in chunked framing when httpx announced it (no length known)."""
    stream = request.stream
    if not isinstance(stream, httpx.AsyncByteStream):
        raise TypeError("the async transport needs an async request body")
    chunked = request.headers.get("transfer-encoding", "").lower() == "chunked"
    async for piece in stream:
        if piece:
            await conn.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece, timeout)
    if chunked:
        await conn.write(b"0\r\n\r\n", timeout)
