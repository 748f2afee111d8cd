"""In-process servers for tests: ASGI apps on made-up ``127.0.0.1`` ports, no socket opened.

Every app a test serves runs, lifespan and requests, on one event loop in a background thread (as a
server in a thread would). Clients reach them through the transports here, for ``httpx`` (the
gateway's outbound client, ollama, raw requests) and ``httpx2`` (the openai, anthropic, google-genai
and mcp SDKs), sync or async, from the test's thread, the test's own event loop, or an app on the
server loop (the gateway calling a fake upstream).

Unlike ``httpx.ASGITransport`` (which runs the app to its end and hands back the whole body) these
stream like a socket: the response starts when the app starts it, each piece of the body arrives
when the app sends it, a read timeout holds for the head and for every piece, closing a response
before its end is a disconnect the app sees, and an app that dies part way breaks the body as a
dropped connection would. An address no app is served on is passed to a real transport, so a free
port refuses as it does today.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import anyio
import httpx
import httpx2
from anyio.from_thread import BlockingPortal, start_blocking_portal

from tests.kits.ports import free_port

log = logging.getLogger("tests.loopback")

App = Callable[..., Awaitable[None]]
CLIENT_ADDRESS = ("127.0.0.1", 50123)
END, BROKEN = object(), object()


class ServerDidNotStart(RuntimeError):
    pass


@asynccontextmanager
async def _task_group() -> AsyncIterator[Any]:
    async with anyio.create_task_group() as tg:
        yield tg
        tg.cancel_scope.cancel()  # what is still running when the loopback closes


# ---- the server side: runs on the loopback's event loop --------------------------------------------

class Mailbox:
    """Messages for one reader on the server loop, never full."""

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._arrived = anyio.Event()

    def put(self, item: Any) -> None:
        self._items.append(item)
        self._arrived.set()

    async def get(self) -> Any:
        while not self._items:
            self._arrived = anyio.Event()
            await self._arrived.wait()
        return self._items.popleft()


@dataclass(eq=False)
class Exchange:
    """One request in flight: the head once the app sends it, then the body piece by piece."""

    method: str
    started: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)  # complete, or the client went away
    finished: anyio.Event = field(default_factory=anyio.Event)  # the app returned
    status: int = 0
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    complete: bool = False
    disconnected: bool = False
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def __post_init__(self) -> None:
        self._pieces = Mailbox()

    async def head(self, timeout: float | None) -> tuple[int, list[tuple[bytes, bytes]]]:
        with anyio.fail_after(timeout):
            await self.started.wait()
        return self.status, self.headers

    async def piece(self, timeout: float | None) -> Any:
        with anyio.fail_after(timeout):
            return await self._pieces.get()

    async def disconnect(self) -> None:
        """The client closed the response: the app's next ``receive`` says so, later sends are dropped."""
        if not self.complete:
            self.disconnected = True
            self.ended.set()

    def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.status, self.headers = status, headers
        self.started.set()

    def body(self, chunk: bytes, more: bool) -> None:
        if chunk and self.method != "HEAD":
            self._pieces.put(chunk)
        if not more:
            self.complete = True
            self._pieces.put(END)
            self.ended.set()

    def break_off(self) -> None:
        self._pieces.put(BROKEN)
        self.ended.set()


@dataclass(eq=False)
class Site:
    """One served app and its lifespan (``lifespan.startup`` before the first request, shutdown last)."""

    app: App
    state: dict[str, Any] = field(default_factory=dict)
    started: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)
    failure: BaseException | str | None = None

    def __post_init__(self) -> None:
        self._inbox = Mailbox()

    async def lifespan(self) -> None:
        async def receive() -> dict[str, Any]:
            return await self._inbox.get()

        async def send(message: dict[str, Any]) -> None:
            kind = message["type"]
            if kind.endswith(".failed"):
                self.failure = message.get("message") or kind
            (self.started if kind.startswith("lifespan.startup") else self.stopped).set()

        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        self._inbox.put({"type": "lifespan.startup"})
        try:
            await self.app(scope, receive, send)
        except Exception as e:  # a startup that raises, as uvicorn reports it
            log.error("lifespan of %r failed", self.app, exc_info=e)
            self.failure = self.failure or e
        finally:
            self.started.set()
            self.stopped.set()

    async def shut_down(self) -> None:
        self._inbox.put({"type": "lifespan.shutdown"})
        await self.stopped.wait()


class Loopback:
    """The apps one test serves, keyed by ``127.0.0.1:<port>``, on one server loop in a thread."""

    def __init__(self) -> None:
        self.sites: dict[str, Site] = {}
        self._exchanges: set[Exchange] = set()
        self._stack = ExitStack()
        self._portal: BlockingPortal | None = None
        self._tg: Any = None
        self.loop_thread: int | None = None
        self.closed = False

    # -- the server loop

    @property
    def portal(self) -> BlockingPortal:
        if self.closed:
            raise RuntimeError("this loopback is closed")
        if self._portal is None:
            self._portal = self._stack.enter_context(start_blocking_portal("asyncio", name="loopback"))
            self._tg = self._stack.enter_context(self._portal.wrap_async_context_manager(_task_group()))
            self.loop_thread = self._portal.call(threading.get_ident)
        return self._portal

    @property
    def running(self) -> bool:
        return self._portal is not None and not self.closed

    def on_loop(self) -> bool:
        return self.loop_thread is not None and threading.get_ident() == self.loop_thread

    async def acall(self, func: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run ``func`` on the server loop from any event loop (directly when already on it)."""
        if self.on_loop():
            return await func(*args)
        return await asyncio.wrap_future(self.portal.start_task_soon(func, *args))

    def call(self, func: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run ``func`` on the server loop from a thread that is not running it."""
        if self.on_loop():
            raise RuntimeError("a sync client cannot be used on the server loop")
        return self.portal.call(func, *args)

    # -- serving

    def serve(self, app: App, port: int | None = None) -> str:
        """Serve ``app`` (its lifespan started) at ``http://127.0.0.1:<port>``; returns that base URL."""
        port = port or free_port()
        address = f"127.0.0.1:{port}"
        if address in self.sites:
            raise RuntimeError(f"{address} is already served")
        self.sites[address] = self.call(self._start, app)
        return f"http://{address}"

    def serve_as(self, app: App, base: str) -> str:
        """Serve ``app`` at the address ``base`` names (a provider's own, ``https://api.openai.com``),
        reached only through this loopback's transports, where the real one would be; returns ``base``."""
        url = httpx.URL(base)
        address = f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
        if address in self.sites:
            raise RuntimeError(f"{address} is already served")
        self.sites[address] = self.call(self._start, app)
        return base

    @contextmanager
    def serving(self, app: App, port: int | None = None) -> Iterator[str]:
        """``serve`` for the length of a ``with`` block; the app is shut down at its end."""
        base = self.serve(app, port)
        try:
            yield base
        finally:
            self.stop(base)

    async def _start(self, app: App) -> Site:
        site = Site(app)
        self._tg.start_soon(site.lifespan)
        await site.started.wait()
        if site.failure is not None:
            raise ServerDidNotStart(f"the app did not start: {site.failure}") from (
                site.failure if isinstance(site.failure, BaseException) else None)
        return site

    def stop(self, base: str) -> None:
        """Shut down the app at ``base`` (a server stopped; its address refuses from now on)."""
        site = self.sites.pop(httpx.URL(base).netloc.decode())
        self.call(site.shut_down)

    def app_at(self, base: str) -> Any:
        return self.sites[httpx.URL(base).netloc.decode()].app

    def close(self) -> None:
        try:
            if self._portal is not None:
                self.call(self._close)
        finally:
            self.closed = True
            self._stack.close()

    async def _close(self) -> None:
        """As a server stopping: clients gone, requests still running ended, then every lifespan shut down."""
        for exchange in list(self._exchanges):
            await exchange.disconnect()
        with anyio.move_on_after(1):
            for exchange in list(self._exchanges):
                await exchange.finished.wait()
        for exchange in list(self._exchanges):
            exchange.scope.cancel()
        for address in reversed(list(self.sites)):
            with anyio.move_on_after(20):
                await self.sites.pop(address).shut_down()

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one request

    def site_for(self, url: Any) -> Site | None:
        port = url.port or (443 if url.scheme == "https" else 80)
        return self.sites.get(f"{url.host}:{port}")

    async def begin(self, site: Site, scope: dict[str, Any], body: bytes) -> Exchange:
        exchange = Exchange(scope["method"])
        self._exchanges.add(exchange)
        self._tg.start_soon(self._run, site, {**scope, "state": dict(site.state)}, body, exchange)
        return exchange

    async def _run(self, site: Site, scope: dict[str, Any], body: bytes, exchange: Exchange) -> None:
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await exchange.ended.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if exchange.disconnected:
                return  # as uvicorn: nobody is listening any more
            if message["type"] == "http.response.start":
                exchange.start(message["status"], [(bytes(k), bytes(v)) for k, v in message.get("headers", [])])
            elif message["type"] == "http.response.body":
                if not exchange.started.is_set() or exchange.complete:
                    raise RuntimeError(f"ASGI body sent out of order: {message['type']}")
                exchange.body(bytes(message.get("body", b"")), bool(message.get("more_body", False)))

        try:
            with exchange.scope:
                await site.app(scope, receive, send)
        except Exception as e:  # as uvicorn: logged, a 500 if nothing was sent, else the body breaks off
            log.error("Exception in ASGI application", exc_info=e)
        finally:
            self._exchanges.discard(exchange)
            exchange.finished.set()
            if not exchange.started.is_set():
                exchange.start(500, [(b"content-type", b"text/plain; charset=utf-8")])
                exchange.body(b"Internal Server Error", False)
            elif not exchange.complete:
                exchange.break_off()

    # -- clients

    def transport(self, lib: ModuleType = httpx, *, sync: bool = False) -> Any:
        """A transport for ``lib`` (``httpx`` or ``httpx2``) that reaches the apps served here."""
        kinds = TRANSPORTS[lib.__name__]
        return kinds[1](self) if sync else kinds[0](self)

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(transport=self.transport(httpx, sync=True), **kwargs)

    def aclient(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=self.transport(httpx), **kwargs)

    def client2(self, **kwargs: Any) -> httpx2.Client:
        """For the ``http_client=`` of the sync openai and anthropic SDK clients."""
        return httpx2.Client(transport=self.transport(httpx2, sync=True), **kwargs)

    def aclient2(self, **kwargs: Any) -> httpx2.AsyncClient:
        """For the async SDK clients and the mcp client."""
        return httpx2.AsyncClient(transport=self.transport(httpx2), **kwargs)


# ---- the client side: one pair of transports per HTTP library --------------------------------------

def scope_of(request: Any) -> dict[str, Any]:
    url = request.url
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw], "scheme": url.scheme,
            "path": url.path, "raw_path": url.raw_path.split(b"?")[0], "query_string": url.query,
            "server": (url.host, url.port), "client": CLIENT_ADDRESS, "root_path": ""}


def read_timeout(request: Any) -> float | None:
    value = (request.extensions.get("timeout") or {}).get("read")
    return None if value is None else float(value)


def make_transports(lib: ModuleType) -> tuple[type, type]:
    def timed_out(request: Any) -> Exception:
        return lib.ReadTimeout("timed out", request=request)

    def broken(request: Any) -> Exception:
        return lib.RemoteProtocolError("peer closed connection without sending complete message body",
                                       request=request)

    def check(piece: Any, request: Any) -> bytes | None:
        if piece is BROKEN:
            raise broken(request)
        return None if piece is END else piece

    class AsyncBody(lib.AsyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, net: Loopback, exchange: Exchange, request: Any) -> None:
            self.net, self.exchange, self.request = net, exchange, request

        async def __aiter__(self) -> AsyncIterator[bytes]:
            while True:
                try:
                    piece = check(await self.net.acall(self.exchange.piece, read_timeout(self.request)),
                                  self.request)
                except TimeoutError:
                    raise timed_out(self.request) from None
                if piece is None:
                    return
                yield piece

        async def aclose(self) -> None:
            if self.net.running:
                await self.net.acall(self.exchange.disconnect)

    class SyncBody(lib.SyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, net: Loopback, exchange: Exchange, request: Any) -> None:
            self.net, self.exchange, self.request = net, exchange, request

        def __iter__(self) -> Iterator[bytes]:
            while True:
                try:
                    piece = check(self.net.call(self.exchange.piece, read_timeout(self.request)), self.request)
                except TimeoutError:
                    raise timed_out(self.request) from None
                if piece is None:
                    return
                yield piece

        def close(self) -> None:
            if self.net.running:
                self.net.call(self.exchange.disconnect)

    class AsyncTransport(lib.AsyncBaseTransport):  # type: ignore[misc, name-defined]
        def __init__(self, net: Loopback) -> None:
            self.net = net
            self.real: Any = None

        async def handle_async_request(self, request: Any) -> Any:
            site = self.net.site_for(request.url)
            if site is None:  # nothing served there: the network says what it says
                self.real = self.real or lib.AsyncHTTPTransport()
                return await self.real.handle_async_request(request)
            body = await request.aread()
            exchange = await self.net.acall(self.net.begin, site, scope_of(request), body)
            try:
                status, headers = await self.net.acall(exchange.head, read_timeout(request))
            except TimeoutError:
                await self.net.acall(exchange.disconnect)
                raise timed_out(request) from None
            return lib.Response(status, headers=headers, stream=AsyncBody(self.net, exchange, request),
                                extensions={"http_version": b"HTTP/1.1"})

        async def aclose(self) -> None:
            if self.real is not None:
                await self.real.aclose()

    class SyncTransport(lib.BaseTransport):  # type: ignore[misc, name-defined]
        def __init__(self, net: Loopback) -> None:
            self.net = net
            self.real: Any = None

        def handle_request(self, request: Any) -> Any:
            site = self.net.site_for(request.url)
            if site is None:
                self.real = self.real or lib.HTTPTransport()
                return self.real.handle_request(request)
            body = request.read()
            exchange = self.net.call(self.net.begin, site, scope_of(request), body)
            try:
                status, headers = self.net.call(exchange.head, read_timeout(request))
            except TimeoutError:
                self.net.call(exchange.disconnect)
                raise timed_out(request) from None
            return lib.Response(status, headers=headers, stream=SyncBody(self.net, exchange, request),
                                extensions={"http_version": b"HTTP/1.1"})

        def close(self) -> None:
            if self.real is not None:
                self.real.close()

    return AsyncTransport, SyncTransport


TRANSPORTS = {"httpx": make_transports(httpx), "httpx2": make_transports(httpx2)}
