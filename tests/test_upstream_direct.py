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
