"""A provider key never leaves through upstream text: an upstream that echoes the key (and the
endpoint's header values) in answers, streams, error bodies, headers, redirects, SSE error events
and model listings, through ``ModelCaller`` and the listing. Nothing it said reaches a consumer,
the store (its raw database files included) or a log with the key in it. The end-to-end twin,
through a server process, its replies, its log, the admin API and the CLI, is
``e2e/test_leaks_processes.py``."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from benchwarmers_mcp.errors import ProviderError
from benchwarmers_mcp.messages import Answer, AnswerBuilder, ModelRequest, user
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, endpoints, facts, ledger, models
from benchwarmers_mcp.store import limits as store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream import pacing
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.listing import served_names
from benchwarmers_mcp.upstream.pacing import PacingPolicy
from tests.fakes.echo_upstream import BEHAVIOURS, ECHO_KEY, ECHO_ORG, EchoUpstream, leaks, raw_store

HELLO = ModelRequest("", (user("hello"),))


@pytest.fixture
async def db(home: Path) -> AsyncIterator[Database]:
    async with Database(home / "benchwarmers.db") as database:
        await endpoints.add(database, Endpoint("echo", "http://echo.test/v1", key_name="echo",
                                               headers={"X-Org": ECHO_ORG, "X-Title": "benchwarmers tests"}))
        for name in BEHAVIOURS:
            await models.register(database, ModelRecord(name, name, "echo", name))
        yield database


@pytest.fixture
def echo() -> EchoUpstream:
    return EchoUpstream()


@pytest.fixture
async def client(echo: EchoUpstream) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=echo.app())) as http:
        yield http


@pytest.fixture
def keys(home: Path) -> KeyStore:
    return KeyStore(home.parent / "config", {"ECHO": ECHO_KEY})


@pytest.fixture
def caller(db: Database, keys: KeyStore, client: httpx.AsyncClient) -> ModelCaller:
    return ModelCaller(db, keys, client, PacingPolicy(backoff=0.01, retries=1))


async def _outcome(caller: ModelCaller, alias: str, streamed: bool) -> str:
    """What a consumer of the call gets, as text: the answer (every part) or the error."""
    model = await models.get(caller.db, alias)
    try:
        if streamed:
            builder = AnswerBuilder()
            async for event in caller.stream(model, HELLO, timeout=10):
                builder.add(event)
            answer: Answer = builder.answer()
        else:
            answer = await caller.complete(model, HELLO, timeout=10)
    except ProviderError as e:
        return f"{type(e).__name__}: {e.message} {e.args} {e.headers}"
    return repr(answer)


@pytest.mark.anyio
async def test_an_echoing_upstream_leaks_the_key_nowhere(caller, db, home, echo, caplog):
    caplog.set_level(logging.DEBUG)
    seen = {}
    for alias in BEHAVIOURS:
        for streamed in (False, True):
            await store.resume(db, connection="echo", alias=alias)  # a rest or pause must not stop the next
            seen[alias, streamed] = await _outcome(caller, alias, streamed)
    for outcome in seen.values():
        assert not leaks(outcome), outcome
    assert "[masked key echo]" in seen["whole", False] and "[masked header X-Org]" in seen["whole", False]
    assert "'token': '[masked key echo]'" in seen["stream", True].replace('\\"', "'").replace('"', "'")
    assert "You sent me [masked key echo] and then [masked key echo] [masked header X-Org]. Done s" in \
        seen["stream", True]
    assert "Incorrect API key provided: [masked key echo]" in seen["e429", False]
    assert "stream died; your key was [masked key echo]" in seen["midway", True]
    assert set(echo.models_seen) >= set(BEHAVIOURS), "every behaviour was called for real"

    # everything the store holds about those calls, read back through the store
    now = time.time()
    learned = await facts.rows_for(db)
    kept = json.dumps([await store.rests(db, now - 86400), await store.pauses(db, 0),
                       await store.open_alerts(db), await store.pending_retirements(db),
                       await pacing.overview(db, now), [r.__dict__ for r in await ledger.rows(db)],
                       learned], default=str)
    assert not leaks(kept), kept
    assert "Incorrect API key provided: [masked key echo]" in kept, "the stored reasons are there, masked"
    assert "maximum context length is 8192 tokens (sent with [masked key echo]" in kept, "learned, with evidence"
    assert ECHO_KEY.encode() not in raw_store(home), "the database files, WAL included, never hold the key"
    assert not leaks(caplog.text)


@pytest.mark.anyio
async def test_a_model_listing_that_echoes_the_key_is_masked(db, keys, client, echo, home):
    ctx = SimpleNamespace(keys=keys, client=client, settings=Settings.from_env({}, home=home))
    names = await served_names(ctx, await endpoints.get(db, "echo"))  # type: ignore[arg-type]
    assert names == ["echo-whole", "leaky-[masked key echo]"]
    echo.listing_fails = True
    with pytest.raises(ProviderError) as caught:
        await served_names(ctx, await endpoints.get(db, "echo"))  # type: ignore[arg-type]
    assert caught.value.upstream_status == 403
    assert "key [masked key echo] [masked header X-Org] may not list models" in caught.value.message
    assert not leaks(caught.value.message) and not leaks(str(caught.value.args))


@pytest.mark.anyio
async def test_a_key_given_to_try_an_endpoint_is_masked_like_a_stored_one(db, keys, client, echo, home):
    """``POST /api/endpoint/try`` lists models with a key from its body, never stored: what the
    upstream echoes of that key is masked too."""
    tried = "sk-tried-9Z8y7X6w5V4u3T2s1R0q"
    ctx = SimpleNamespace(keys=keys, client=client, settings=Settings.from_env({}, home=home))
    endpoint = await endpoints.get(db, "echo")
    names = await served_names(ctx, endpoint, key=tried)  # type: ignore[arg-type]
    assert names == ["echo-whole", "leaky-[masked key echo]"]
    echo.listing_fails = True
    with pytest.raises(ProviderError) as caught:
        await served_names(ctx, endpoint, key=tried)  # type: ignore[arg-type]
    assert "key [masked key echo] [masked header X-Org] may not list models" in caught.value.message
    assert tried[:12] not in caught.value.message and tried[:12] not in str(caught.value.args)
