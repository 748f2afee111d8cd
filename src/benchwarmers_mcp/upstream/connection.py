"""One outbound HTTP/1.1 connection: an asyncio Protocol that parses responses with httptools.

Why not httpcore: a streamed chat completion through httpcore + h11 (pure Python) costs about four
times the CPU of the request itself on the hot path (issue 13). Here the bytes go from the socket
to llhttp (C) and the body pieces straight to a queue the response stream drains; Python runs once
per callback, not once per byte-level state change.

The protocol knows nothing of pools or of httpx's client: it sends one request at a time and hands
back its head and its body pieces. Failures become httpx's exception types here (``raise ... from``)
so ``providers.base.map_transport_errors`` stays the one place they become ours.
"""

from __future__ import annotations

import asyncio
import select
from collections import deque
from typing import cast

import httptools
import httpx

# a slow reader makes the socket pause above this many buffered body bytes, resume below LOW_WATER
HIGH_WATER = 256 * 1024
LOW_WATER = 64 * 1024
NO_BODY_STATUS = (204, 304)


class ServerClosed(Exception):
    """The server closed (or reset) the connection before a single response byte came back.
    ``unread`` says the server cannot have read the request (the socket was gone before we wrote):
    the transport may send such a request again on a fresh connection. A reset after our bytes went
    out is not that: a server may read a request, act on it (an LLM call is billed) and then drop
    the connection, so only an idempotent request is sent again then."""

    def __init__(self, unread: bool, cause: BaseException | None) -> None:
        super().__init__("server disconnected without sending a response")
        self.unread, self.cause = unread, cause


def expire(future: asyncio.Future[None], error: type[httpx.TransportError]) -> None:
    if not future.done():
        future.set_exception(error("timed out"))


class Connection(asyncio.Protocol):
    """The protocol of one socket. ``reusable`` says it may serve the next request: its last
    response was read to the end, the server kept it alive and has not closed it since."""

    def __init__(self, origin: tuple[str, str, int]) -> None:
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.lost = False  # connection_lost came: never reuse
        self.eof = False
        self.idle_since = 0.0
        self._loop = asyncio.get_running_loop()
        self._parser: httptools.HttpResponseParser | None = None
        self._head_only = False
        self._interim = False  # a 1xx head was parsed: its message end is not the response's
        self._got_byte = False
        self._head_done = False
        self._done = False  # the response's body ended
        self._keep_alive = False
        self._close_delimited = False
        self._status = 0
        self._reason = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._drain: asyncio.Future[None] | None = None

    # --- asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is one, not a subclass

    def data_received(self, data: bytes) -> None:
        parser = self._parser
        if parser is None:  # bytes while idle (or after a HEAD's head): the stream is out of step
            self._keep_alive = False
            self.close()
            return
        self._got_byte = True
        try:
            parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._keep_alive = False
        except httptools.HttpParserError as e:
            self._fail(httpx.RemoteProtocolError(f"malformed response from the server: {e}"), e)

    def eof_received(self) -> bool:
        self.eof = True
        if self._parser is not None and self._head_done and self._close_delimited and not self._done:
            self._keep_alive = False
            self._finish()
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._parser is not None and self._head_done and self._close_delimited and exc is None:
            self._finish()  # a TLS stream may end without eof_received: the body ends with it
        if self._parser is not None and not self._done:
            if not self._got_byte:  # after our write: a reset does not prove it went unread
                self._fail(ServerClosed(False, exc), exc)
            elif exc is not None:
                self._fail(httpx.ReadError(f"connection lost before the response ended: {exc}"), exc)
            else:
                self._fail(httpx.RemoteProtocolError("server disconnected before the response ended"), exc)
        self._wake()
        if self._drain is not None and not self._drain.done():
            self._drain.set_exception(httpx.WriteError("connection lost while sending the request"))

    def pause_writing(self) -> None:
        self._drain = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)
        self._drain = None

    # --- httptools callbacks ----------------------------------------------------------------
    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        assert self._parser is not None
        status = self._parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # an interim head: wait for the final one
            self._interim, self._headers, self._reason = True, [], b""
            return
        self._status, self._head_done = status, True
        self._keep_alive = self._parser.should_keep_alive() and status != 101
        framed = any(n.lower() in (b"content-length", b"transfer-encoding") for n, _ in self._headers)
        no_body = self._head_only or status in NO_BODY_STATUS or status == 101
        self._close_delimited = not framed and not no_body
        if self._close_delimited:
            self._keep_alive = False
        self._wake()
        if no_body:  # llhttp would wait for a HEAD's announced body; the response ends here
            self._finish()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)
        self._buffered += len(body)
        if self._buffered > HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        if not self._done:
            self._finish()

    # --- the request side -------------------------------------------------------------------
    @property
    def reusable(self) -> bool:
        return (self._done and self._keep_alive and not self.lost and not self.eof
                and self.transport is not None and not self.transport.is_closing())

    def readable(self) -> bool:
        """Whether the idle socket has something to read that the loop has not read yet: a FIN (the
        server closed it) or stray bytes. Either way it must not carry a request. The loop reads an
        EOF only on its next turn, so a request sent right after the last response ended would go to
        a socket the server already closed (and a POST could then not be retried); one poll of the
        descriptor, as httpcore does, closes that gap."""
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return True
        try:
            ready, _, _ = select.select([sock.fileno()], [], [], 0)
        except (OSError, ValueError):  # a descriptor already closed
            return True
        return bool(ready)

    def start(self, head_only: bool) -> None:
        """Ready the parser for the next response; ``head_only`` for a HEAD request."""
        self._parser = httptools.HttpResponseParser(self)
        self._head_only, self._interim, self._got_byte = head_only, False, False
        self._head_done = self._done = self._keep_alive = self._close_delimited = False
        self._status, self._reason, self._headers = 0, b"", []
        self._body.clear()
        self._buffered, self._error = 0, None

    async def write(self, data: bytes, timeout: float | None) -> None:
        """Send bytes, waiting (up to ``timeout``) while the socket's buffer is full."""
        transport = self.transport
        if self.lost or transport is None or transport.is_closing():
            raise ServerClosed(True, None)
        transport.write(data)
        drain = self._drain
        if drain is not None:
            handle = self._loop.call_later(timeout, expire, drain, httpx.WriteTimeout) \
                if timeout is not None else None
            try:
                await drain
            finally:
                if handle is not None:
                    handle.cancel()

    async def head(self, timeout: float | None) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        """Wait for the response's status line and headers."""
        while not self._head_done:
            self._raise_error()
            await self._wait(timeout)
        return self._status, self._reason, self._headers

    async def piece(self, timeout: float | None) -> bytes:
        """The body bytes buffered so far (waiting for some); ``b""`` once the body ended."""
        while True:
            if self._body:
                data = self._body.popleft() if len(self._body) == 1 else b"".join(self._body)
                self._body.clear()
                self._buffered = 0
                if self._paused and self.transport is not None:
                    self._paused = False
                    self.transport.resume_reading()
                return data
            if self._done:
                return b""
            self._raise_error()
            await self._wait(timeout)

    def close(self) -> None:
        """Drop the socket (a response abandoned midway, a pool closing, a broken stream)."""
        self._keep_alive = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # --- inside -----------------------------------------------------------------------------
    def _finish(self) -> None:
        self._done = True
        self._parser = None
        self._wake()

    def _fail(self, error: BaseException, cause: BaseException | None) -> None:
        if self._error is None:
            error.__cause__ = cause
            self._error = error
        self.close()
        self._wake()

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error
        if self.lost:
            raise httpx.ReadError("connection lost")

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self, timeout: float | None) -> None:
        waiter = self._waiter = self._loop.create_future()
        handle = self._loop.call_later(timeout, expire, waiter, httpx.ReadTimeout) \
            if timeout is not None else None
        try:
            await waiter
        finally:
            self._waiter = None
            if handle is not None:
                handle.cancel()
