"""The outbound transport (``upstream.transport.LeanTransport``) on real loopback sockets: small raw
asyncio servers here play the upstream, each doing the one thing a test needs (pause mid-stream,
close an idle connection, reset a reused one, never answer), and the client is the same
``httpx.AsyncClient`` the app makes. One test runs the real app over it with the openai SDK."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import struct
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import httptools
import httpx
import openai
import pytest
import trustme

from benchwarmers_mcp.app import make_client
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.upstream.transport import LeanTransport
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.gateway import gateway_app
from tests.kits.loopback import Loopback, free_port
from tests.kits.route import seed_members
from tests.kits.servers import serve_in_thread

pytestmark = pytest.mark.anyio


@pytest.fixture(params=[pytest.param(("asyncio", {}), id="asyncio"),
                        pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop")])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, bool]]:
    """Every test on both loops: the server runs under uvloop when it is installed (uvicorn's auto)."""
    return request.param


# ---- the raw upstream ----------------------------------------------------------------------------

@dataclass
class Req:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    index: int  # its place on its connection (0 = the connection's first request)


class Peer(asyncio.Protocol):
    """One server-side connection: parses requests with httptools and hands each to the handler."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.requests: list[Req] = []
        self.closed = asyncio.Event()
        self.transport: asyncio.Transport | None = None
        self._new()

    def _new(self) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self._url, self._headers, self._body = b"", {}, b""  # type: ignore[var-annotated]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not an asyncio.Transport subclass
        self.server.peers.append(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode().lower()] = value.decode()

    def on_body(self, body: bytes) -> None:
        self._body += body

    def on_message_complete(self) -> None:
        method = self.parser.get_method().decode()
        req = Req(method, self._url.decode(), self._headers, self._body, len(self.requests))
        self.requests.append(req)
        self.server.requests.append(req)
        self._new()
        self.server.handler(self, req)

    def send(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def reply(self, body: bytes = b"ok", status: str = "200 OK", *extra: str) -> None:
        head = [f"HTTP/1.1 {status}", f"content-length: {len(body)}", *extra]
        self.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    def reset(self) -> None:
        """Close with a reset (SO_LINGER 0), as a server that drops a connection it will not serve."""
        assert self.transport is not None
        sock = self.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()


Handler = Callable[[Peer, Req], None]


@dataclass
class Server:
    handler: Handler
    peers: list[Peer] = field(default_factory=list)
    requests: list[Req] = field(default_factory=list)
    port: int = 0

    def url(self, path: str = "/", scheme: str = "http", host: str = "127.0.0.1") -> str:
        return f"{scheme}://{host}:{self.port}{path}"


def answer_ok(peer: Peer, req: Req) -> None:
    peer.reply(b"echo:" + req.body if req.body else b"ok")


@asynccontextmanager
async def serving(handler: Handler = answer_ok, tls: ssl.SSLContext | None = None) -> AsyncIterator[Server]:
    server = Server(handler)
    listener = await asyncio.get_running_loop().create_server(lambda: Peer(server), "127.0.0.1", 0, ssl=tls)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()
        for peer in server.peers:
            if peer.transport is not None:
                peer.transport.abort()
        await listener.wait_closed()


@asynccontextmanager
async def lean(**kwargs: object) -> AsyncIterator[tuple[httpx.AsyncClient, LeanTransport]]:
    """The shared client's shape (no redirects, a timeout) over a LeanTransport."""
    transport = LeanTransport(**kwargs)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, follow_redirects=False, timeout=10) as client:
        yield client, transport


async def until(condition: Callable[[], bool]) -> None:
    """Wait (loop turns, at most 10 s) for the client's loop to see what the server did: the pool's
    state has no event to wait on, so this looks again every 10 ms."""
    with anyio.fail_after(60):
        for _ in iter(condition, True):
            await asyncio.sleep(0.01)


# ---- keep-alive and the pool ---------------------------------------------------------------------

async def test_keep_alive_reuses_one_connection_per_origin() -> None:
    async with serving() as a, serving() as b, lean() as (client, transport):
        for i in range(3):
            assert (await client.post(a.url("/x"), content=b"%d" % i)).content == b"echo:%d" % i
        assert (await client.get(b.url())).text == "ok"
        assert len(a.peers) == 1 and [r.index for r in a.requests] == [0, 1, 2]
        assert len(b.peers) == 1
        assert transport.connections() == {"open": 2, "idle": 2}


async def test_idle_connection_the_server_closed_is_never_reused() -> None:
    def answer_and_close(peer: Peer, req: Req) -> None:
        answer_ok(peer, req)  # keep-alive by its headers, but the server closes the socket right after
        assert peer.transport is not None
        peer.transport.close()

    async with serving(answer_and_close) as server, lean() as (client, transport):
        assert (await client.post(server.url(), content=b"a")).status_code == 200
        await until(lambda: transport.connections()["idle"] == 0)  # the loop saw the EOF
        assert (await client.post(server.url(), content=b"b")).content == b"echo:b"
        # at once, before the loop has read the EOF: the socket is looked at before it is reused
        assert (await client.post(server.url(), content=b"c")).content == b"echo:c"
        assert len(server.peers) == 3 and [r.index for r in server.requests] == [0, 0, 0]


async def test_a_reset_after_the_request_went_out_resends_only_an_idempotent_one() -> None:
    """The server read the second request on the reused connection, then reset it: a POST may have
    been acted on (billed), so it is not sent again; a GET in the same spot is."""
    def reset_second(peer: Peer, req: Req) -> None:
        peer.reset() if req.index == 1 else answer_ok(peer, req)

    async with serving(reset_second) as server, lean() as (client, _):
        assert (await client.post(server.url(), content=b"one")).content == b"echo:one"
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            await client.post(server.url(), content=b"two")
        assert [r.body for r in server.requests] == [b"one", b"two"], "the POST went once"
        await client.get(server.url("/g"))
        assert (await client.get(server.url("/g"))).text == "ok"
        assert [r.target for r in server.peers[-1].requests] == ["/g"], "the GET went again, on a fresh one"


async def test_a_post_the_server_may_have_processed_is_not_sent_again() -> None:
    def close_on_second(peer: Peer, req: Req) -> None:
        if req.index == 1:  # read it, then hang up without a word: it may have acted on it
            assert peer.transport is not None
            peer.transport.close()
        else:
            answer_ok(peer, req)

    async with serving(close_on_second) as server, lean() as (client, _):
        await client.post(server.url(), content=b"one")
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            await client.post(server.url(), content=b"two")
        assert caught.value.__cause__ is not None
        assert [r.body for r in server.requests] == [b"one", b"two"] and len(server.peers) == 1
        # an idempotent request in the same spot is sent again on a fresh connection
        await client.get(server.url("/g"))
        assert (await client.get(server.url("/g"))).text == "ok"
        assert [r.target for r in server.peers[-1].requests] == ["/g"]


async def test_pool_bounds_total_and_idle_connections() -> None:
    gate = asyncio.Event()
    most = 0

    def hold(peer: Peer, req: Req) -> None:
        async def later() -> None:
            nonlocal most
            most = max(most, transport.connections()["open"])  # the client's count: no race with EOFs
            await gate.wait()
            peer.reply()
        asyncio.get_running_loop().create_task(later())

    async with serving(hold) as server, lean(max_connections=2, max_keepalive=1) as (client, transport):
        calls = [asyncio.ensure_future(client.get(server.url())) for _ in range(5)]
        await until(lambda: len(server.requests) == 2)
        assert transport.connections()["open"] == 2
        gate.set()
        assert [r.status_code for r in await asyncio.gather(*calls)] == [200] * 5
        assert most == 2  # never more than two at once (closed ones beyond the idle bound were replaced)
        assert transport.connections() == {"open": 1, "idle": 1}


async def test_idle_connections_expire_whatever_their_origin() -> None:
    async with serving() as a, serving() as b, lean(keepalive_expiry=0.1) as (client, transport):
        await client.get(a.url())
        await client.get(b.url())
        await asyncio.sleep(0.3)  # past the expiry (a wait, not a measure: longer changes nothing)
        await client.get(b.url())  # a's connection is swept though a is not called again
        with anyio.fail_after(60):
            await a.peers[0].closed.wait()
            await b.peers[0].closed.wait()
        assert len(b.peers) == 2 and transport.connections() == {"open": 1, "idle": 1}


async def test_pool_timeout_when_every_connection_is_busy() -> None:
    def never(peer: Peer, req: Req) -> None:
        pass

    async with serving(never) as server, lean(max_connections=1) as (client, _):
        first = asyncio.ensure_future(client.get(server.url(), timeout=httpx.Timeout(10)))
        await until(lambda: len(server.requests) == 1)
        with pytest.raises(httpx.PoolTimeout):
            await client.get(server.url(), timeout=httpx.Timeout(10, pool=0.2))
        first.cancel()


async def test_aclose_closes_every_pooled_connection() -> None:
    async with serving() as server:
        async with lean() as (client, _):
            await client.get(server.url())
            peer = server.peers[0]
            assert not peer.closed.is_set()
        with anyio.fail_after(60):
            await peer.closed.wait()


# ---- bodies --------------------------------------------------------------------------------------

def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def test_the_first_event_arrives_before_the_last_is_sent() -> None:
    release = asyncio.Event()

    def sse(peer: Peer, req: Req) -> None:
        if req.method == "GET":
            return answer_ok(peer, req)

        async def run() -> None:
            peer.send(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                      + chunk(b"data: one\n\n"))
            await release.wait()
            peer.send(chunk(b"data: two\n\n") + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        asyncio.get_running_loop().create_task(run())

    async with serving(sse) as server, lean() as (client, _):
        with anyio.fail_after(60):
            async with client.stream("POST", server.url(), json={"stream": True}) as response:
                lines = response.aiter_lines()
                assert await anext(lines) == "data: one"
                release.set()
                rest = [line async for line in lines if line]
        assert rest == ["data: two", "data: [DONE]"]
        assert (await client.get(server.url())).text == "ok" and len(server.peers) == 1  # kept alive


async def test_content_length_chunked_and_close_delimited_bodies() -> None:
    def framed(peer: Peer, req: Req) -> None:
        if req.target == "/length":
            peer.reply(b"x" * 70_000)
        elif req.target == "/chunked":
            peer.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                      + chunk(b"abc") + chunk(b"def" * 1000) + b"0\r\nx-trailer: t\r\n\r\n")
        else:  # no length: the body ends when the server closes
            peer.send(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end")
            assert peer.transport is not None
            peer.transport.close()

    async with serving(framed) as server, lean() as (client, _):
        assert (await client.get(server.url("/length"))).content == b"x" * 70_000
        assert (await client.get(server.url("/chunked"))).content == b"abc" + b"def" * 1000
        assert len(server.peers) == 1
        assert (await client.get(server.url("/close"))).text == "until the end"
        assert (await client.get(server.url("/length"))).status_code == 200
        assert len(server.peers) == 2


async def test_head_1xx_204_and_304_have_no_body_and_keep_the_connection() -> None:
    def bodiless(peer: Peer, req: Req) -> None:
        if req.method == "HEAD":
            peer.send(b"HTTP/1.1 200 OK\r\ncontent-length: 1234\r\n\r\n")
        elif req.target == "/204":
            peer.send(b"HTTP/1.1 204 No Content\r\n\r\n")
        elif req.target == "/304":
            peer.send(b"HTTP/1.1 304 Not Modified\r\ncontent-length: 99\r\n\r\n")
        elif req.target == "/100":
            peer.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            peer.reply(b"after continue", "201 Created")
        else:
            answer_ok(peer, req)

    async with serving(bodiless) as server, lean() as (client, _):
        head = await client.head(server.url("/h"))
        assert (head.status_code, head.content, head.headers["content-length"]) == (200, b"", "1234")
        assert (await client.get(server.url("/204"))).content == b""
        assert (await client.get(server.url("/304"))).status_code == 304
        after = await client.post(server.url("/100"), content=b"b")
        assert (after.status_code, after.content) == (201, b"after continue")
        assert (await client.get(server.url("/next"))).text == "ok"
        assert len(server.peers) == 1 and len(server.requests) == 5


async def test_connection_close_is_honoured() -> None:
    def close_header(peer: Peer, req: Req) -> None:
        peer.reply(b"bye", "200 OK", "connection: close")  # and leaves the socket open

    async with serving(close_header) as server, lean() as (client, transport):
        assert (await client.get(server.url())).text == "bye"
        with anyio.fail_after(60):
            await server.peers[0].closed.wait()  # the client hung up, as the server asked
        await client.get(server.url())
        assert len(server.peers) == 2 and transport.connections()["idle"] == 0


async def test_a_response_closed_before_its_end_closes_its_connection() -> None:
    def endless(peer: Peer, req: Req) -> None:
        if req.target == "/endless":
            peer.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + chunk(b"data: 1\n\n"))
        else:
            answer_ok(peer, req)

    async with serving(endless) as server, lean() as (client, transport):
        async with client.stream("GET", server.url("/endless")) as response:
            async for _ in response.aiter_bytes():
                break
        with anyio.fail_after(60):
            await server.peers[0].closed.wait()
        assert (await client.get(server.url("/plain"))).text == "ok"
        assert len(server.peers) == 2 and transport.connections() == {"open": 1, "idle": 1}


async def test_a_slow_reader_pauses_the_socket_instead_of_buffering() -> None:
    size = 64 * 1024 * 1024

    def flood(peer: Peer, req: Req) -> None:
        peer.send(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size + b"z" * size)

    async with serving(flood) as server, lean() as (client, _):
        async with client.stream("GET", server.url()) as response:
            stream = response.aiter_raw()
            got = len(await anext(stream))
            peer_transport = server.peers[0].transport
            assert peer_transport is not None
            last = -1
            while peer_transport.get_write_buffer_size() != last:  # until the server's writes stall
                last = peer_transport.get_write_buffer_size()
                await asyncio.sleep(0.2)
            assert last > 0  # the client stopped reading: the rest waits on the server's side
            got += sum([len(piece) async for piece in stream])
        assert got == size


async def test_request_bodies_bytes_in_one_write_and_streamed_chunked() -> None:
    async def pieces() -> AsyncIterator[bytes]:
        for part in (b"alpha-", b"", b"beta-", b"gamma"):
            yield part

    async with serving() as server, lean() as (client, _):
        assert (await client.post(server.url(), json={"a": 1})).content == b'echo:{"a":1}'
        assert server.requests[0].headers["content-length"] == "7"
        assert (await client.post(server.url(), content=pieces())).content == b"echo:alpha-beta-gamma"
        assert server.requests[1].headers["transfer-encoding"] == "chunked"
        with pytest.raises(httpx.LocalProtocolError):
            await client.get(server.url(), headers={"x-evil": "a\r\nx-injected: 1"})
        assert len(server.requests) == 2


# ---- TLS -----------------------------------------------------------------------------------------

async def test_tls_with_a_trusted_and_an_untrusted_certificate() -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(server_context)
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    async with serving(tls=server_context) as server:
        async with lean(ssl_context=trusting) as (client, _):
            for host in ("localhost", "127.0.0.1"):
                response = await client.post(server.url("/", "https", host), content=b"secret")
                assert response.content == b"echo:secret"
        async with lean() as (client, _):  # httpx's trust store has never heard of this CA
            with pytest.raises(httpx.ConnectError) as caught:
                await client.get(server.url("/", "https", "localhost"))
            assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError)
        assert len(server.requests) == 2


# ---- timeouts and failures -----------------------------------------------------------------------

async def test_each_timeout_raises_its_httpx_kind() -> None:
    def mute(peer: Peer, req: Req) -> None:
        if req.target == "/half":
            peer.send(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")

    silent = socket.socket()  # the kernel completes the TCP handshake; nobody answers the TLS hello
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    async with serving(mute) as server, lean(ssl_context=ssl.create_default_context()) as (client, _):
        short = httpx.Timeout(10, connect=0.2, read=0.2, write=0.2)
        with pytest.raises(httpx.ConnectTimeout):
            await client.get(f"https://127.0.0.1:{silent.getsockname()[1]}/", timeout=short)
        silent.close()
        with pytest.raises(httpx.ReadTimeout):
            await client.get(server.url("/silent"), timeout=short)
        with pytest.raises(httpx.ReadTimeout):
            await client.get(server.url("/half"), timeout=short)

    def deaf(peer: Peer, req: Req) -> None:
        answer_ok(peer, req)

    async with serving(deaf) as server, lean() as (client, _):
        await client.get(server.url())  # the connection, then the server stops reading it
        assert server.peers[0].transport is not None
        server.peers[0].transport.pause_reading()
        with pytest.raises(httpx.WriteTimeout):
            await client.post(server.url(), content=b"w" * (64 * 1024 * 1024),
                              timeout=httpx.Timeout(10, write=0.3))


async def test_failures_are_httpx_errors_with_their_cause() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    refused = listener.getsockname()[1]
    listener.close()

    def broken(peer: Peer, req: Req) -> None:
        if req.target == "/garbage":
            peer.send(b"NOT HTTP AT ALL\r\n\r\n")
        elif req.target == "/cut":
            peer.send(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort")
            assert peer.transport is not None
            peer.transport.close()
        elif req.target == "/reset":
            peer.send(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort")
            peer.reset()

    async with serving(broken) as server, lean() as (client, transport):
        with pytest.raises(httpx.ConnectError) as refused_error:
            await client.get(f"http://127.0.0.1:{refused}/")
        assert isinstance(refused_error.value.__cause__, ConnectionRefusedError)
        for path, kind in (("/garbage", httpx.RemoteProtocolError), ("/cut", httpx.RemoteProtocolError),
                           ("/reset", httpx.ReadError)):
            with pytest.raises(kind) as caught:
                await client.get(server.url(path))
            assert path == "/cut" or caught.value.__cause__ is not None, path  # a clean EOF has no cause
        with pytest.raises(httpx.UnsupportedProtocol):
            await transport.handle_async_request(httpx.Request("GET", f"ftp://127.0.0.1:{server.port}/"))
        assert transport.connections()["open"] == 0  # every broken connection was let go


# ---- the app: its client, proxies ------------------------------------------------------------------

async def test_make_client_keeps_httpx_transport_when_a_proxy_is_configured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def as_proxy(peer: Peer, req: Req) -> None:
        peer.reply(f"proxied {req.target}".encode())

    async with serving(as_proxy) as proxy:
        env = {"BENCHWARMERS_HOME": str(tmp_path), "HTTP_PROXY": proxy.url("")}
        monkeypatch.setenv("HTTP_PROXY", proxy.url(""))  # what httpx itself reads
        settings = Settings.from_env(env)
        assert settings.upstream_proxy
        async with make_client(settings) as client:
            reply = await client.get("http://upstream.invalid/v1/models")
        assert reply.text == "proxied http://upstream.invalid/v1/models"
        monkeypatch.delenv("HTTP_PROXY")
        direct = Settings.from_env({"BENCHWARMERS_HOME": str(tmp_path)})
        assert not direct.upstream_proxy
        async with make_client(direct) as client:
            assert (await client.get(proxy.url("/v1/models"))).text == "proxied /v1/models"


def test_route_turns_through_the_app_reach_a_real_upstream_socket(
        settings: Settings, home: Path, net: Loopback) -> None:
    fake = FakeUpstream()
    with serve_in_thread(fake.app()) as upstream:
        seed_members(home, upstream + "/v1", {"alpha": "alpha"}, {"agents": ["alpha"]},
                     max_output=4096, context_window=100_000)
        port = free_port()
        app = gateway_app(replace(settings, port=port))  # no transport seam: the real network
        base = net.serve(app, port)
        lean_transport = app.state.ctx.client._transport
        assert isinstance(lean_transport, LeanTransport)
        assert app.state.ctx.caller.transport is lean_transport, "model calls go to it directly"
        with openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="x", max_retries=0) as oa:
            whole = oa.chat.completions.create(model="bench/agents:route",
                                               messages=[{"role": "user", "content": "hello lean"}])
            assert whole.choices[0].message.content == "answer from alpha: hello lean"
            stream = oa.chat.completions.create(model="bench/agents:route", stream=True,
                                                messages=[{"role": "user", "content": "stream it"}])
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            assert text == "answer from alpha: stream it"
        async def counts() -> dict[str, int]:  # read on the app's own loop
            return lean_transport.connections()

        deadline = time.monotonic() + 60  # the server may still be reading the stream's end
        while net.call(counts) != {"open": 1, "idle": 1} and time.monotonic() < deadline:
            time.sleep(0.01)
        assert net.call(counts) == {"open": 1, "idle": 1}  # both turns on one connection
        net.stop(base)  # the lifespan ends: the shared client, and the transport under it, close
        assert net.call(counts) == {"open": 0, "idle": 0}
    assert [json.loads(json.dumps(c.body))["messages"][-1]["content"] for c in fake.calls] == [
        "hello lean", "stream it"]
