"""How the server listens: its socket, bound before anything else is made, and uvicorn's HTTP
protocol with every connection bounded in time and size.

uvicorn bounds an idle kept-alive connection (``timeout_keep_alive``) and the size of a request
head (h11's ``max_incomplete_event_size``: past it the request is answered 400 and the connection
closed), but it has no deadline for a request head that trickles in a byte at a time, nor for a
fresh connection that sends nothing. ``BoundedH11Protocol`` adds one: a request head must arrive
whole within ``head_timeout`` seconds of the connection being ready for it (opened, or done with
its last answer), however the bytes trickle; after that the connection is closed, with a 408 when
part of a head came. The body's deadline, the header count and the other head checks are the
guard's (``access/guard.py``), so they hold whatever server runs the app.

The protocol is always h11, named here, so an installed ``httptools`` never swaps in a parser
without these bounds.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Callable
from typing import Any

import h11
import uvicorn
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.h11_impl import H11Protocol

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


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request head (see the module docstring)."""

    head_timeout = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_timer: asyncio.TimerHandle | None = None
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
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # a whole head arrived: the guard bounds the body
            self._cancel_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            self._cancel_head_timer()
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
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.conn.trailing_data[0]:  # part of a head came: say why before closing
            self.transport.write(TIMED_OUT)
        self.transport.close()


def protocol_for(settings: Settings) -> type[BoundedH11Protocol]:
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"head_timeout": settings.head_timeout})


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
    stopping server. What is still in flight then (a panel's answers) gets ``SHUTDOWN_GRACE``."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self.on_stop = on_stop

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.on_stop is not None:
            self.on_stop()
        await super().shutdown(sockets)


def server_for(app: Any, settings: Settings, *, on_stop: Callable[[], None] | None = None,
               log_config: dict[str, Any] | None = None) -> Server:
    """uvicorn for ``app`` with the connection bounds of ``settings``; ``on_stop`` runs first when it
    stops; ``log_config`` is uvicorn's logging (``None``: uvicorn's own)."""
    config = uvicorn.Config(app, host=settings.bind, port=settings.port, http=protocol_for(settings),
                            timeout_keep_alive=max(1, round(settings.keep_alive_timeout)),
                            h11_max_incomplete_event_size=settings.max_head_bytes, log_level="warning",
                            access_log=False, lifespan="on", server_header=False,
                            timeout_graceful_shutdown=SHUTDOWN_GRACE,
                            # no route takes a WebSocket: "auto" would import a WebSocket library
                            # wherever one is installed (google-genai brings websockets), ~20 ms a start
                            ws="none",
                            log_config=LOGGING_CONFIG if log_config is None else log_config)
    return Server(config, on_stop)


__all__ = ["SHUTDOWN_GRACE", "BoundedH11Protocol", "ListenError", "Server", "bind_problem", "bind_socket", "protocol_for",
           "server_for"]
