"""How the server listens: its socket, bound before anything else is made, and uvicorn's HTTP
protocol with every connection bounded in time and size.

The parser is httptools (llhttp, in C): uvicorn's h11 protocol cost about a fifth of the server's
CPU on a route turn (``benchmarks/hotpath.py`` profiles). uvicorn bounds an idle kept-alive
connection (``timeout_keep_alive``), but with httptools it has no bound on a request head at all:
neither its time (a head that trickles in a byte at a time, a fresh connection that sends nothing)
nor its size (uvicorn keeps the URL and headers as they come). ``BoundedHttpProtocol`` adds both:

- a request head must arrive whole within ``head_timeout`` seconds of the connection being ready
  for it (opened, or done with its last answer), however the bytes trickle; after that the
  connection is closed, with a 408 when part of a head came;
- a head still unfinished after ``max_head_bytes`` bytes is answered 400 and the connection
  closed. A head that is whole goes on to the guard (``access/guard.py``), which answers a large
  one 431 in the route's own shape, as it does the header count, the body's deadline and the
  other head checks, so they hold whatever server runs the app.

llhttp refuses ``Content-Length`` with ``Transfer-Encoding`` itself, with uvicorn's plain-text 400;
it is told to let the pair through (``lenient_chunked_length``) so the guard answers it, in the
route's shape and closing the connection, before any body is read.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from benchwarmers_mcp.settings import Settings

# Seconds a stopping server gives the requests still open (a panel's streamed answers) before it
# cancels them: enough for the seats of a panel under way to land, short of systemd's 90 s before
# it kills (Docker's default is 10 s: a container that should let answers land wants a longer
# stop timeout).
SHUTDOWN_GRACE = 30

TIMED_OUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
             b"content-length: 41\r\n\r\nthe request head did not arrive in time.\n")


class ListenError(Exception):
    """The socket could not be bound; the message is one line saying what to do."""


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline and a size bound for each request head (see the
    module docstring)."""

    head_timeout = 10.0
    max_head_bytes = 32 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # both: uvicorn's (an answer to the first of pipelined requests) and the guard's pair
        self.parser.set_dangerous_leniencies(lenient_data_after_close=True, lenient_chunked_length=True)
        self._head_timer: asyncio.TimerHandle | None = None
        self._reading_head = True  # between one message's end (or the connection's start) and the next head
        self._head_bytes = 0  # bytes received while reading a head

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def data_received(self, data: bytes) -> None:
        if self._reading_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._reading_head and self._head_bytes > self.max_head_bytes and not self.transport.is_closing():
            self.send_400_response("the request head is too large.")

    def on_headers_complete(self) -> None:
        self._reading_head, self._head_bytes = False, 0
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._reading_head = True
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
            self._cancel_head_timer()  # closed, or a pipelined request already under way
        else:  # kept alive: the next head has its own deadline
            self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _unsupported_upgrade_warning(self) -> None:
        """No route takes a WebSocket (``ws="none"`` in ``server_for``): a request asking to upgrade is
        answered as plain HTTP, without uvicorn's two warning lines advising to install a library."""

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._reading_head:
            return
        if self._head_bytes:  # part of a head came: say why before closing
            self.transport.write(TIMED_OUT)
        self.transport.close()


def protocol_for(settings: Settings) -> type[BoundedHttpProtocol]:
    return type("BoundedHttpProtocol", (BoundedHttpProtocol,),
                {"head_timeout": settings.head_timeout, "max_head_bytes": settings.max_head_bytes})


def _host(bind: str) -> str:
    return f"[{bind}]" if ":" in bind else bind


def bind_problem(bind: str) -> str | None:
    """Why ``bind`` is not an address to listen on (it does not resolve), or None."""
    try:
        socket.getaddrinfo(bind.strip("[]"), None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return (f"BENCH_BIND={bind[:80]!r} is not an address to listen on: use an IP address of this machine "
                "(127.0.0.1, ::1, 0.0.0.0) or its host name")
    return None


def _explain(error: OSError, where: str) -> str:
    if error.errno == errno.EADDRINUSE:
        return (f"cannot listen on {where}: the port is in use (another Benchwarmers, or another program); "
                "stop it or choose another port with BENCH_PORT")
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"cannot listen on {where}: permission denied (ports below 1024 need privileges); set BENCH_PORT"
    if error.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {where}: this machine has no such address; set BENCH_BIND to one of its own"
    return f"cannot listen on {where}: {error.strerror or error}"


def bind_socket(settings: Settings) -> socket.socket:
    """The listening socket, bound now (before any folder is made); ``ListenError`` saying why not."""
    host, where = settings.bind.strip("[]"), f"{_host(settings.bind)}:{settings.port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, settings.port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError):
        raise ListenError(bind_problem(settings.bind) or f"cannot listen on {where}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if host == "::" else 1)
        sock.bind(address)
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError as e:
        sock.close()
        raise ListenError(_explain(e, where)) from None
    return sock


class Server(uvicorn.Server):
    """uvicorn's server, which tells the app it is stopping before it waits for open requests: the
    dashboard's event streams end at once (``app.closing``), so an open browser tab never holds a
    stopping server. What is still in flight then (a panel's answers) gets ``SHUTDOWN_GRACE``.
    ``on_stopped`` runs once the app has stopped whole (its store closed), before uvicorn hands a
    signal that stopped it back to the process."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None] | None = None,
                 on_stopped: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self.on_stop = on_stop
        self.on_stopped = on_stopped

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.on_stop is not None:
            self.on_stop()
        await super().shutdown(sockets)
        if self.on_stopped is not None and not self.force_exit:
            self.on_stopped()


def server_for(app: Any, settings: Settings, *, on_stop: Callable[[], None] | None = None,
               on_stopped: Callable[[], None] | None = None, log_config: dict[str, Any] | None = None) -> Server:
    """uvicorn for ``app`` with the connection bounds of ``settings``; ``on_stop`` runs first when it
    stops, ``on_stopped`` once it has stopped cleanly; ``log_config`` is uvicorn's logging (``None``:
    uvicorn's own)."""
    config = uvicorn.Config(app, host=settings.bind, port=settings.port, http=protocol_for(settings),
                            timeout_keep_alive=max(1, round(settings.keep_alive_timeout)), log_level="warning",
                            access_log=False, lifespan="on", server_header=False,
                            timeout_graceful_shutdown=SHUTDOWN_GRACE,
                            # no route takes a WebSocket: "auto" would import a WebSocket library
                            # wherever one is installed (google-genai brings websockets), ~20 ms a start
                            ws="none",
                            log_config=LOGGING_CONFIG if log_config is None else log_config)
    return Server(config, on_stop, on_stopped)


__all__ = ["SHUTDOWN_GRACE", "BoundedHttpProtocol", "ListenError", "Server", "bind_problem", "bind_socket", "protocol_for",
           "server_for"]
