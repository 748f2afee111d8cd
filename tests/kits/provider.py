"""Shared set-up for the outbound provider tests (no tests here): a native fake served on the test's
loopback, one client that reaches it, a provider pointed at the fake, and the whole/streamed/error
ways of calling it.

A test module defines an ``upstream_fake`` fixture (its fake), takes ``base`` and ``client`` by
assignment (``base, client = kit.base, kit.client``) and may set ``API_ROOT``, what the provider's
base URL adds to the fake's address."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from benchwarmers_mcp.errors import ProviderError
from benchwarmers_mcp.messages import Answer, AnswerBuilder, ModelRequest, StreamEvent, user
from benchwarmers_mcp.providers import Connection, Provider, make_provider
from tests.fakes.native import NativeFake
from tests.kits.loopback import Loopback


@pytest.fixture
def base(upstream_fake: NativeFake, request: pytest.FixtureRequest, net: Loopback) -> str:
    return net.serve(upstream_fake.app()) + getattr(request.module, "API_ROOT", "")


@pytest.fixture
async def client(net: Loopback) -> AsyncIterator[httpx.AsyncClient]:
    async with net.aclient() as c:
        yield c


def connect(api: str, base: str, client: httpx.AsyncClient, key: str | None,
            headers: dict[str, str] | None = None) -> Provider:
    return make_provider(api, Connection(base, key, client, headers or {}, timeout=10))


async def streamed(p: Provider, request: ModelRequest) -> tuple[Answer, list[StreamEvent]]:
    builder, events = AnswerBuilder(), []
    async for event in p.stream(request):
        events.append(event)
        builder.add(event)
    return builder.answer(), events


async def answer_of(p: Provider, request: ModelRequest, *, stream: bool) -> Answer:
    return (await streamed(p, request))[0] if stream else await p.complete(request)


async def raised(p: Provider, served: str, kind: type[ProviderError], *, stream: bool) -> ProviderError:
    """The error a one-line question to ``served`` raises, whole or streamed; it must be a ``kind``."""
    with pytest.raises(kind) as caught:
        await answer_of(p, ModelRequest(served, (user("hi"),)), stream=stream)
    return caught.value


async def until_error(p: Provider, request: ModelRequest, kind: type[ProviderError] = ProviderError,
                      match: str | None = None) -> tuple[list[StreamEvent], ProviderError]:
    """The events a stream yields before it raises (it must raise a ``kind`` matching ``match``)."""
    seen: list[StreamEvent] = []
    with pytest.raises(kind, match=match) as caught:
        async for event in p.stream(request):
            seen.append(event)
    return seen, caught.value
