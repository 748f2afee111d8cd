"""Model calls are sent to the shared client's transport directly (``Connection.transport``):
the client's default headers and connect timeout, none of its cookie jar. A gateway carries no
cookie from one user's call to the next; the client path (proxies) still does what httpx does."""

from __future__ import annotations

import json

import httpx
import pytest

from benchwarmers_mcp.messages import ModelRequest, TextDelta, user
from benchwarmers_mcp.providers import make_provider
from benchwarmers_mcp.providers.base import Connection

pytestmark = pytest.mark.anyio

WHOLE = {"id": "c", "object": "chat.completion", "model": "m",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}]}
CHUNK = {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {"content": "hello"}, "finish_reason": "stop"}]}


def _upstream(seen: list[httpx.Request]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        cookie = {"set-cookie": f"session=s{len(seen)}; Path=/"}
        if json.loads(request.content).get("stream"):
            body = f"data: {json.dumps(CHUNK)}\n\ndata: [DONE]\n\n".encode()
            return httpx.Response(200, content=body, headers={**cookie, "content-type": "text/event-stream"})
        return httpx.Response(200, json=WHOLE, headers=cookie)

    return httpx.MockTransport(answer)


async def _calls(direct: bool) -> tuple[list[httpx.Request], httpx.AsyncClient]:
    seen: list[httpx.Request] = []
    transport = _upstream(seen)
    client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(420.0, connect=10.0))
    conn = Connection("https://upstream.test/v1", "sk-test", client, timeout=300.0,
                      transport=transport if direct else None)
    provider = make_provider("chat", conn)
    request = ModelRequest("m", (user("hi"),))
    for _ in range(2):
        assert (await provider.complete(request)).text == "hello"
    events = [e async for e in provider.stream(request)]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hello"]
    await client.aclose()
    return seen, client


async def test_a_direct_call_keeps_the_clients_headers_and_carries_no_cookie() -> None:
    seen, client = await _calls(direct=True)
    assert len(seen) == 3
    for request in seen:
        assert "cookie" not in request.headers, "no cookie goes from one call to the next"
        assert request.headers["user-agent"] == client.headers["user-agent"]
        assert request.headers["accept-encoding"] == client.headers["accept-encoding"]
        assert request.headers["authorization"] == "Bearer sk-test"
        assert request.headers["host"] == "upstream.test"
        assert request.extensions["timeout"] == {"connect": 10.0, "read": 300.0, "write": 300.0, "pool": 300.0}
    assert not client.cookies, "the shared client's jar stays empty"


async def test_through_the_client_the_cookie_jar_works_as_httpx_does() -> None:
    """The path kept for proxies: the client's own behaviour, cookies included (so the test above
    tells the two paths apart)."""
    seen, client = await _calls(direct=False)
    assert "cookie" not in seen[0].headers
    assert all(r.extensions["timeout"] == {"connect": 10.0, "read": 300.0, "write": 300.0, "pool": 300.0}
               for r in seen), "connecting has the client's 10 s on this path too, not the whole deadline"
    assert seen[1].headers["cookie"] == "session=s1" and seen[2].headers["cookie"] == "session=s2"


async def test_a_prepared_post_sends_the_bytes_an_httpx_request_would() -> None:
    """The lean transport's prepared POST (the server's path) against the same call built as an
    ``httpx.Request`` with ``json=`` by httpx itself: byte for byte the same head and body, on a real
    loopback socket. (A test's transport gets a request made of the prepared bytes: the tests above.)"""
    import asyncio

    from benchwarmers_mcp.providers import http
    from benchwarmers_mcp.upstream.transport import LeanTransport

    received: list[bytes] = []
    answer = json.dumps(WHOLE).encode()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                received.append(head + await reader.readexactly(length))
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                             % (len(answer), answer))
                await writer.drain()
        except asyncio.IncompleteReadError:  # the client closed its connection
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport = LeanTransport()
    client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(420.0, connect=10.0))
    try:
        conn = Connection(f"http://127.0.0.1:{port}/v1", "sk-test", client, headers={"X-Team": "blue", "User-Agent": "mine"},
                          timeout=300.0, transport=transport)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "héllo ✓ \"quoted\""}], "n": 1.5}
        headers = http.json_headers(conn, "Authorization", "Bearer ")
        prepared = await http._send(conn, url, body, headers, stream=False)
        assert prepared.json() == WHOLE and prepared.request.url.host == "127.0.0.1"
        merged = httpx.Headers(client.headers)  # the POST as the shared client itself would build it
        merged.update(headers)
        built = await transport.handle_async_request(httpx.Request("POST", url, json=body, headers=merged))
        await built.aread()
        assert len(received) == 2 and received[0] == received[1], received
        assert b"\r\nUser-Agent: mine\r\n" in received[0] and b"\r\nHost: 127.0.0.1:%d\r\n" % port in received[0]
    finally:
        await client.aclose()
        await asyncio.sleep(0.05)  # the handler sees the close and closes its end
        server.close()
        await server.wait_closed()
