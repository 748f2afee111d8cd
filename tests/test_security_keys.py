"""Issue 8, gateway keys: made once, judged by the first credential sent, scoped, capped, revoked at
once, and written on every call. Real clients (openai, anthropic, google-genai) read the refusals."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, calls, verdicts
from benchwarmers_mcp.store import keys as key_store
from tests.kits.loopback import Loopback
from tests.kits.security import app_client, bearer
from tests.kits.seed import seed, seed_async
from tests.kits.store import url_for

pytestmark = pytest.mark.anyio
KEY_RE = re.compile(r"^bwk_[A-Za-z0-9_-]{43}$")
PROMPT = [{"role": "user", "content": "Where can this return a stale value?"}]


@pytest.fixture
def settings(home: Path) -> Settings:
    """Keys required on loopback (the admin API stays open: no admin token)."""
    return Settings.from_env({"BENCHWARMERS_REQUIRE_KEYS": "1"}, home=home, config_dir=home.parent / "config",
                             database_url=url_for(home))


async def seeded(home: Path) -> None:
    await seed_async(home, base_url=None, api="simulated", endpoint="simulated",
                     served={"sage": "simulated/sage", "quill": "simulated/quill"},
                     collections={"core": ["sage"], "other": ["quill"]})


async def make_key(client: httpx.AsyncClient, name: str, **extra) -> str:
    r = await client.post("/api/gateway-key", json={"name": name, **extra})
    assert r.status_code == 200, r.text
    return r.json()["key"]


async def test_a_key_is_shown_once_and_only_its_hash_is_kept(settings: Settings, home: Path) -> None:
    await seeded(home)
    async with app_client(settings) as client:
        r = await client.post("/api/gateway-key", json={"name": "ci", "collections": ["bench/core"], "rpm": 30})
        made = r.json()
        assert set(made) == {"name", "key", "hint", "collections", "rpm", "created"}
        assert KEY_RE.match(made["key"]) and made["hint"] == made["key"][-4:]
        assert made["collections"] == ["core"] and made["rpm"] == 30 and r.headers["cache-control"] == "no-store"
        listed = (await client.get("/api/gateway-keys")).json()["keys"]
        assert listed == [{"name": "ci", "hint": made["hint"], "collections": ["core"], "rpm": 30,
                           "created": made["created"], "last_used": None}]
        assert made["key"] not in (await client.get("/api/gateway-keys")).text
        await client.get("/v1/models", headers=bearer(made["key"]))
        assert (await client.get("/api/gateway-keys")).json()["keys"][0]["last_used"] is not None
    async with Database(settings.store_target) as db:
        row = await key_store.find(db, "ci")
    assert row is not None
    assert made["key"] not in [str(v) for v in asdict(row).values()]
    assert len(row.sha256) == 64


async def test_bad_key_requests_are_400(settings: Settings, home: Path) -> None:
    await seeded(home)
    async with app_client(settings) as client:
        await make_key(client, "taken")
        for body, words in (({"name": "Bad Name"}, "cannot be a gateway key name"), ({"name": "x"}, "2 to 32 characters"),
                            ({"name": "local"}, "reserved"), ({"name": "taken"}, "exists"),
                            ({"name": "k1", "rpm": 0}, "rpm"), ({"name": "k1", "rpm": 10_001}, "rpm"),
                            ({"name": "k1", "rpm": "5"}, "rpm"), ({"name": "k1", "rpm": True}, "rpm"),
                            ({"name": "k1", "collections": []}, "non-empty"),
                            ({"name": "k1", "collections": "core"}, "non-empty"),
                            ({"name": "k1", "collections": ["core", "nope"]}, "unknown collections: nope")):
            r = await client.post("/api/gateway-key", json=body)
            assert r.status_code == 400 and words in r.json()["error"]["message"], (body, r.text)
        gone = await client.post("/api/gateway-key/remove", json={"name": "never"})
        assert gone.status_code == 404


async def test_where_the_key_goes_and_the_first_one_sent_is_judged(settings: Settings, home: Path) -> None:
    await seeded(home)
    async with app_client(settings) as client:
        key = await make_key(client, "app")
        stranger = "bwk_" + "A" * 43
        for headers in (bearer(key), {"x-api-key": key}, {"x-goog-api-key": key},
                        {"Authorization": "Bearer ", "x-api-key": key}):
            assert (await client.get("/v1/models", headers=headers)).status_code == 200, headers
        assert (await client.get(f"/v1beta/models?key={key}")).status_code != 401  # Gemini routes only
        cases = [({}, "missing"), ({"Authorization": "Basic dXNlcjpwYXNz"}, "malformed"),
                 (bearer("sk-proj-NotAGatewayKey123456"), "some other key"), (bearer("bwk_short"), "malformed"),
                 (bearer(stranger), "unknown"), ({**bearer(stranger), "x-api-key": key}, "unknown"),
                 ({"x-api-key": stranger, "x-goog-api-key": key}, "unknown")]
        for headers, words in cases:
            r = await client.get("/v1/models", headers=headers)
            assert r.status_code == 401 and words in r.text, (headers, r.text)
            assert r.headers["www-authenticate"] == 'Bearer realm="benchwarmers"'
            assert "NotAGatewayKey" not in r.text and stranger not in r.text and key not in r.text
        assert (await client.get(f"/v1/models?key={key}")).status_code == 401


async def test_a_revoked_key_is_refused_at_once(settings: Settings, home: Path) -> None:
    await seeded(home)
    async with app_client(settings) as client:
        key = await make_key(client, "temp")
        assert (await client.get("/v1/models", headers=bearer(key))).status_code == 200
        removed = await client.post("/api/gateway-key/remove", json={"name": "temp"})
        assert removed.json() == {"ok": True, "removed": "temp"}
        again = await client.get("/v1/models", headers=bearer(key))
        assert again.status_code == 401 and "unknown" in again.text


async def test_rpm_over_the_cap_is_429_with_retry_after(settings: Settings, home: Path) -> None:
    await seeded(home)
    async with app_client(settings) as client:
        capped, free = await make_key(client, "capped", rpm=2), await make_key(client, "free")
        assert [(await client.get("/v1/models", headers=bearer(capped))).status_code for _ in range(2)] == [200, 200]
        over = await client.get("/v1/models", headers=bearer(capped))
        assert over.status_code == 429 and 1 <= int(over.headers["retry-after"]) <= 60
        assert "capped" in over.json()["error"]["message"] and capped not in over.text
        assert [(await client.get("/v1/models", headers=bearer(free))).status_code for _ in range(5)] == [200] * 5


async def test_the_key_name_is_written_on_every_call(settings: Settings, home: Path) -> None:
    await seeded(home)
    async with app_client(settings) as client:
        key = await make_key(client, "writer")
        r = await client.post("/v1/chat/completions", json={"model": "bench/core", "messages": PROMPT},
                              headers=bearer(key))
        assert r.status_code == 200, r.text
        call = r.json()["bench"]["seats"][0]["call"]
        v = await client.post("/bench/verdict", json={"call": call, "useful": True}, headers=bearer(key))
        assert v.status_code == 200, v.text
    async with Database(settings.store_target) as db:
        assert (await calls.panels(db))[0].key_name == "writer"
        assert (await verdicts.log(db))[0].key_name == "writer"


@pytest.fixture
def scoped(home: Path, gateway: str, http: httpx.Client) -> tuple[str, str]:
    """(a key scoped to bench/core, a key for everything), made over the real server's admin API."""
    seed(home, base_url=None, api="simulated", endpoint="simulated",
         served={"sage": "simulated/sage", "quill": "simulated/quill"},
         collections={"core": ["sage"], "other": ["quill"]})
    made = [http.post(gateway + "/api/gateway-key", json=body).json()["key"]
            for body in ({"name": "core-only", "collections": ["core"]}, {"name": "all"})]
    return made[0], made[1]


def test_a_scoped_key_is_refused_elsewhere_and_sees_only_its_own(gateway: str, scoped: tuple[str, str], net: Loopback) -> None:
    core_only, everything = scoped
    sdk = openai.OpenAI(http_client=net.client2(), base_url=gateway + "/v1", api_key=core_only, max_retries=0)
    assert {m.id.split(":")[0] for m in sdk.models.list()} == {"bench/core"}
    answer = sdk.chat.completions.create(model="bench/core", messages=PROMPT)
    assert answer.choices[0].message.content
    for model in ("bench/other", "bench/other:merged", "other"):
        with pytest.raises(openai.PermissionDeniedError) as e:
            sdk.chat.completions.create(model=model, messages=PROMPT)
        assert "bench/core" in e.value.message
    full = openai.OpenAI(http_client=net.client2(), base_url=gateway + "/v1", api_key=everything, max_retries=0)
    assert {m.id.split(":")[0] for m in full.models.list()} == {"bench/core", "bench/other"}
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(http_client=net.client2(), base_url=gateway + "/v1", api_key="bwk_" + "B" * 43, max_retries=0).models.list()


def test_every_sdk_sends_the_key_where_the_guard_reads_it(gateway: str, scoped: tuple[str, str], net: Loopback) -> None:
    stranger = "bwk_" + "C" * 43
    an = anthropic.Anthropic(http_client=net.client2(), base_url=gateway, api_key=stranger, max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as e:
        an.messages.create(model="bench/core", max_tokens=50, messages=PROMPT)
    assert "unknown gateway key" in str(e.value) and stranger not in str(e.value)
    gm = genai.Client(api_key=stranger, http_options={"base_url": gateway, "timeout": 20_000,
                                                      "httpx_client": net.client2()})
    with pytest.raises(genai_errors.ClientError) as g:
        gm.models.generate_content(model="core", contents="hi")
    assert g.value.code == 401 and stranger not in str(g.value)
