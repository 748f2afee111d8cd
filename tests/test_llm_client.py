"""Issue 33 item 5: the ``llm`` CLI as the client of upstream calls, with the real ``llm`` package
(its Python API and its OpenAI plugin, over the openai SDK's own HTTP client) against the fake
upstream on a real loopback socket. Chosen by ``BENCH_CLIENT=llm`` or on Settings
(``/api/client``); the key of an endpoint the bench holds none for is llm's own ``keys.json``
(``LLM_USER_PATH``), masked like the bench's; a 429 is one request (the SDK's retries are off) and
rests the model; the ledger still counts the calls."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import endpoints, ledger, models
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.gateway import openai_sdk, serve_gateway
from tests.kits.loopback import Loopback
from tests.kits.servers import serve_in_thread
from tests.kits.store import in_store, store_of

SHARED = "sk-llm-keys-json-9Qe4Rw7Ty2Ui"  # kept only in llm's keys.json, never given to the bench


@pytest.fixture
def socket_fake(fake: FakeUpstream) -> Iterator[str]:
    """The fake upstream on a real loopback port: llm's client is the openai SDK's own, which no
    test transport reaches. Its /v1 base URL."""
    with serve_in_thread(fake.app()) as base:
        yield base + "/v1"


@pytest.fixture
def llm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """llm's own folder, with the endpoint's key in its keys.json (as ``llm keys set fakeup`` writes)."""
    folder = tmp_path / "llm"
    folder.mkdir()
    (folder / "keys.json").write_text(json.dumps({"// Note": "llm's keys", "fakeup": SHARED}))
    monkeypatch.setenv("LLM_USER_PATH", str(folder))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return folder


def seed(home: Path, base: str, served: dict[str, str]) -> None:
    async def go() -> None:
        async with store_of(home) as db:
            await endpoints.add(db, Endpoint("fakeup", base, "chat", "provider", "fakeup"))
            for alias, name in served.items():
                await models.register(db, ModelRecord(alias, name, "fakeup", family=alias))
            await collection_store.save(db, Collection("core", tuple(served), "through llm"))
    anyio.run(go)


def ask(net: Loopback, gateway: str, text: str = "Where is the stale read?") -> dict:
    reply = openai_sdk(net, gateway).chat.completions.create(model="bench/core",
                                                             messages=[{"role": "user", "content": text}])
    return {"bench": reply.model_extra["bench"], "text": reply.choices[0].message.content or ""}


def test_bench_client_llm_calls_through_llm_with_the_key_from_its_keys_json(
        net: Loopback, settings: Settings, home: Path, socket_fake: str, fake: FakeUpstream, llm_home: Path) -> None:
    seed(home, socket_fake, {"alpha": "alpha", "beta": "beta"})
    gateway = serve_gateway(net, replace(settings, client="llm"))
    with net.client(base_url=gateway, timeout=60) as api:
        shown = api.get("/api/client").json()
        assert (shown["client"], shown["chosen"], shown["default"], shown["llm_installed"]) == ("llm", None, "llm", True)
        assert any("ledger" in line for line in shown["differences"])
        assert any("rate-limit headers" in line for line in shown["differences"])

        got = ask(net, gateway)
        assert [s["status"] for s in got["bench"]["seats"]] == ["ok", "ok"]
        assert "answer from alpha" in got["text"] and "answer from beta" in got["text"]
        assert fake.count() == 2
        for call in fake.calls:
            assert call.headers["authorization"] == f"Bearer {SHARED}", "llm's keys.json gave the key"
            assert call.headers["user-agent"].startswith("AsyncOpenAI/Python"), "sent by llm's SDK client"
            assert call.headers.get("x-stainless-retry-count", "0") == "0"

        # the ledger counts them as every call (llm reports the tokens)
        rows = in_store(home, ledger.rows)
        assert sorted((r.alias, r.status) for r in rows) == [("alpha", "ok"), ("beta", "ok")]
        assert all(r.tokens_out > 0 for r in rows)

        # Settings chooses the built-in client over the environment's default: it holds no key for
        # the endpoint (llm's keys.json is llm's), so none is sent
        chosen = api.post("/api/client", json={"client": "builtin"}).json()
        assert (chosen["client"], chosen["chosen"], chosen["default"]) == ("builtin", "builtin", "llm")
        assert [s["status"] for s in ask(net, gateway)["bench"]["seats"]] == ["ok", "ok"]
        assert fake.count() == 4
        for call in fake.calls[2:]:
            assert not call.headers.get("user-agent", "").startswith("AsyncOpenAI"), "the built-in client"
            assert SHARED not in call.headers.get("authorization", "")

        # back to the default (null), and a client that is not one is a 400 in the API's shape
        assert api.post("/api/client", json={"client": None}).json()["client"] == "llm"
        bad = api.post("/api/client", json={"client": "litellm"})
        assert bad.status_code == 400 and "builtin, llm" in bad.json()["error"]["message"]
    net.stop(gateway)
    every = "".join(p.read_text(errors="replace") for p in home.rglob("*") if p.is_file() and p.suffix != ".db")
    assert SHARED not in every, "llm's key reached the data folder"


def test_a_429_through_llm_is_one_request_and_rests_the_model(
        net: Loopback, settings: Settings, home: Path, socket_fake: str, fake: FakeUpstream, llm_home: Path) -> None:
    seed(home, socket_fake, {"alpha": "alpha", "busy": "busy?fail=429"})
    gateway = serve_gateway(net, settings)  # the built-in client by default: Settings chooses llm
    with net.client(base_url=gateway, timeout=60) as api:
        assert api.get("/api/client").json()["client"] == "builtin"
        assert api.post("/api/client", json={"client": "llm"}).json()["client"] == "llm"
        seats = {s["alias"]: s for s in ask(net, gateway)["bench"]["seats"]}
        assert seats["alpha"]["status"] == "ok"
        assert seats["busy"]["status"] == "error" and "429" in seats["busy"]["error"], seats["busy"]
        assert fake.count("busy?fail=429") == 1, "the SDK's own retries are off: the caller decides"
        assert SHARED not in json.dumps(seats)
    assert "busy" in in_store(home, lambda db: limit_store.resting_aliases(db, time.time()))
    net.stop(gateway)


def test_bench_client_is_read_by_the_one_parser() -> None:
    assert Settings.from_env({"BENCH_CLIENT": " LLM "}, home=Path("/nowhere")).client == "llm"
    assert Settings.from_env({}, home=Path("/nowhere")).client == "builtin"


@pytest.mark.anyio
async def test_the_key_the_bench_holds_wins_over_llms(llm_home: Path, socket_fake: str, fake: FakeUpstream) -> None:
    from benchwarmers_mcp.messages import ModelRequest, user
    from benchwarmers_mcp.providers import make_provider
    from benchwarmers_mcp.providers.base import Connection
    from benchwarmers_mcp.providers.llm_client import shared_key

    assert shared_key("fakeup") == SHARED and shared_key("nobody") is None and shared_key(None) is None
    async with httpx.AsyncClient() as client:
        provider = make_provider("llm", Connection(socket_fake, "sk-the-benchs-own", client, api="chat"))
        answer = await provider.complete(ModelRequest("alpha", (user("hi"),)))
        assert answer.text.startswith("answer from alpha") and answer.usage.output_tokens > 0
        keyless = make_provider("llm", Connection(socket_fake, None, client, api="chat"))
        events = [e async for e in keyless.stream(ModelRequest("alpha", (user("hi"),)))]
        assert events and type(events[-1]).__name__ == "Finish"
    assert fake.calls[0].headers["authorization"] == "Bearer sk-the-benchs-own"
    # no key: llm sends a placeholder, never a key of its own (its openai key, OPENAI_API_KEY)
    assert SHARED not in fake.calls[1].headers["authorization"]
