"""Issue 29, item 3: a scoped gateway key stays inside what its collections use, on both backends.

- ``with`` nominates only its collections' members, merger and explorer pool (``engine.reach``):
  anything else is skipped with one reason, whether it is registered or not, over the gateway and MCP.
- Its verdicts move only its collections' ratings: another collection's rating of the same model,
  its suggestions and automatic mode do not see them, unless Settings says they count everywhere.
- ``/bench/quotas`` and ``/bench/ratings`` show it only its collections' models and their connections.

The official openai SDK asks and reads; verdicts and settings go over the HTTP API."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import openai
import pytest

from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store import verdicts
from tests.kits.gateway import openai_sdk
from tests.kits.loopback import Loopback
from tests.kits.mcp import mcp_client
from tests.kits.seed import seed_async
from tests.kits.store import in_store, store_of, url_for

pytestmark = pytest.mark.backends
PROMPT = [{"role": "user", "content": "Where can this return a stale value?"}]
OUT_OF_REACH = "not a model this key's collections use (their members and explorer pool)"


@pytest.fixture
def settings(home: Path) -> Settings:
    """Keys required on loopback (the admin API stays open: no admin token)."""
    return Settings.from_env({"BENCHWARMERS_REQUIRE_KEYS": "1"}, home=home, config_dir=home.parent / "config",
                             database_url=url_for(home))


def make_keys(home: Path, **scopes: list[str] | None) -> dict[str, str]:
    async def make() -> dict[str, str]:
        async with store_of(home) as db:
            return {name: (await gateway_keys.create(db, f"{name}-key", scope))[1] for name, scope in scopes.items()}

    return anyio.run(make)


def sdk(net: Loopback, gateway: str, secret: str) -> openai.OpenAI:
    return openai_sdk(net, gateway, api_key=secret)


def bench_of(reply: Any) -> dict[str, Any]:
    bench: dict[str, Any] = reply.model_extra["bench"]
    return bench


# ---- with: nominees ------------------------------------------------------------------------------

@pytest.fixture
def reachable(home: Path) -> dict[str, str]:
    """``fast`` (sage; its pool: the general models lark and quill) and ``other`` (quill and two ad hoc
    models, one on a connection of its own) beside an image model; keys ``fast`` (scoped) and ``all``."""
    async def seed() -> None:
        await seed_async(home, base_url=None, api="simulated", endpoint="sim",
                         served={"sage": "simulated/sage", "lark": "simulated/lark", "quill": "simulated/quill"},
                         collections={"fast": ["sage"]})
        await seed_async(home, base_url=None, api="simulated", endpoint="sim", served={"painter": "simulated/painter"},
                         collections={}, role="image")
        await seed_async(home, base_url=None, api="simulated", endpoint="sim", served={"hidden": "simulated/hidden"},
                         collections={}, ad_hoc=True)
        await seed_async(home, base_url=None, api="simulated", endpoint="private",
                         served={"secret": "simulated/secret"}, collections={"other": ["quill", "hidden", "secret"]},
                         ad_hoc=True)

    anyio.run(seed)
    return make_keys(home, fast=["fast"], all=None)


def test_a_scoped_key_nominates_only_what_its_collections_use(reachable: dict[str, str], gateway: str,
                                                               net: Loopback) -> None:
    nominees = ["secret", "painter", "ghost", "lark"]  # another collection's, an image model, unknown, the pool's
    reply = sdk(net, gateway, reachable["fast"]).chat.completions.create(
        model="bench/fast", messages=PROMPT, extra_body={"with": nominees})
    bench = bench_of(reply)
    seated = {s["alias"]: s.get("note", "") for s in bench["seats"]}
    assert "secret" not in seated and "painter" not in seated, "nothing outside the key's collections is called"
    assert seated["sage"] == "" and seated["lark"] == "nominated"
    skipped = {s["alias"]: s["why"] for s in bench["skipped"] if s["seat"] == "with"}
    assert skipped == dict.fromkeys(["secret", "painter", "ghost"], OUT_OF_REACH), \
        "one reason whether the model is registered or not: the reply says nothing of other collections"

    # an unscoped key still nominates any registered model
    free = bench_of(sdk(net, gateway, reachable["all"]).chat.completions.create(
        model="bench/fast", messages=PROMPT, extra_body={"bench": {"with": ["secret"]}}))
    assert {s["alias"]: s.get("note") for s in free["seats"]}["secret"] == "nominated"


@pytest.mark.anyio
async def test_mcp_ask_nominates_only_what_the_key_s_collections_use(reachable: dict[str, str], gateway: str,
                                                                     net: Loopback) -> None:
    headers = {"Authorization": f"Bearer {reachable['fast']}"}
    async with mcp_client(net, gateway + "/mcp", mode="legacy", headers=headers,
                          timeout=httpx2.Timeout(30, read=120)) as client:
        asked = await client.call_tool("ask", {"collection": "fast", "prompt": "Review.", "with": ["secret", "lark"]})
    assert not asked.is_error
    block = json.loads(asked.content[1].text.partition("\n")[2])
    assert {s["alias"] for s in block["seats"]} >= {"sage", "lark"}
    assert "secret" not in {s["alias"] for s in block["seats"]}
    assert [s for s in block["skipped"] if s["seat"] == "with"] == [
        {"seat": "with", "alias": "secret", "why": OUT_OF_REACH}]


# ---- reads: quotas and ratings ---------------------------------------------------------------------

def test_a_scoped_key_reads_only_what_its_collections_use(reachable: dict[str, str], gateway: str,
                                                          http: httpx.Client, home: Path) -> None:
    for limit in ({"connection": "sim", "rpm": 50}, {"connection": "private", "rpm": 40},
                  {"model": "hidden", "rpm": 5}, {"model": "lark", "rpm": 7}):
        assert http.post(gateway + "/api/limits", json=limit).status_code == 200

    async def rest(db: Any) -> None:
        async with db.transaction() as tx:
            for alias in ("hidden", "lark"):
                await limit_store.rest(tx, alias, "sim", time.time() + 600, "upstream 429")

    in_store(home, rest)
    fast, everything = ({"Authorization": f"Bearer {reachable[k]}"} for k in ("fast", "all"))

    def quotas(headers: dict[str, str]) -> dict[str, tuple[list[tuple[str, int]], list[str]]]:
        r = http.get(gateway + "/bench/quotas", headers=headers)
        assert r.status_code == 200, r.text
        return {c["connection"]: (sorted((w["alias"] or "", w["limit"]) for w in c["windows"]),
                                  sorted(rest["alias"] for rest in c["resting"])) for c in r.json()["connections"]}

    assert quotas(everything) == {"sim": ([("", 50), ("hidden", 5), ("lark", 7)], ["hidden", "lark"]),
                                  "private": ([("", 40)], [])}
    assert quotas(fast) == {"sim": ([("", 50), ("lark", 7)], ["lark"])}, \
        "only the connections its collections' models use, and of their model windows and rests only those models'"

    def rated(headers: dict[str, str]) -> list[str]:
        r = http.get(gateway + "/bench/ratings", headers=headers, params={"collection": "fast"})
        assert r.status_code == 200, r.text
        return [m["alias"] for m in r.json()["models"]]

    assert rated(fast) == ["sage", "lark", "quill"]  # the member first, then its explorer pool
    assert sorted(rated(everything)) == ["hidden", "lark", "painter", "quill", "sage", "secret"]


# ---- verdicts: which ratings they move -------------------------------------------------------------

@pytest.fixture
def shared(home: Path) -> dict[str, str]:
    """``x`` sits in ``core`` (with ``y``) and in ``fast`` (with ``z``); keys ``fast`` (scoped), ``all``."""
    anyio.run(lambda: seed_async(home, base_url=None, api="simulated", endpoint="sim",
                                 served={a: f"simulated/{a}" for a in ("x", "y", "z")},
                                 collections={"core": ["x", "y"], "fast": ["x", "z"]}))
    return make_keys(home, fast=["fast"], all=None)


def calls_of(client: openai.OpenAI, collection: str, alias: str, times: int) -> list[str]:
    out = []
    for _ in range(times):
        bench = bench_of(client.chat.completions.create(model=f"bench/{collection}", messages=PROMPT))
        out += [s["call"] for s in bench["seats"] if s["alias"] == alias and s["status"] == "ok"]
    assert len(out) == times
    return out


def members(home: Path, name: str) -> tuple[str, ...]:
    async def read(db: Any) -> tuple[str, ...]:
        return (await collection_store.get(db, name)).members

    return in_store(home, read)


def test_a_scoped_keys_verdicts_move_only_its_collections_ratings(shared: dict[str, str], gateway: str,
                                                                  net: Loopback, http: httpx.Client,
                                                                  home: Path) -> None:
    fast, everything = ({"Authorization": f"Bearer {shared[k]}"} for k in ("fast", "all"))
    assert http.post(gateway + "/api/gateway-settings", json={"max_calls": 5, "max_explorers": 0}).status_code == 200
    learning = http.post(gateway + "/api/learning-settings", json={"auto": True})
    assert learning.status_code == 200 and learning.json()["scoped_verdicts"] == "own"

    # the scoped key finds x confidently wrong on bench/fast, eight times: automatic mode benches it there
    for call in calls_of(sdk(net, gateway, shared["fast"]), "fast", "x", 8):
        r = http.post(gateway + "/bench/verdict", headers=fast,
                      json={"call": call, "useful": False, "false": ["the cache is never refreshed"]})
        assert r.status_code == 200, r.text
    assert members(home, "fast") == ("z",), "on its own collection the key's verdicts count in full"

    def rating(collection: str) -> dict[str, Any]:
        r = http.get(gateway + "/bench/ratings", headers=everything, params={"collection": collection})
        return {m["alias"]: m for m in r.json()["models"]}["x"]

    on_fast, on_core, overall = rating("fast"), rating("core"), {
        m["alias"]: m for m in http.get(gateway + "/bench/ratings", headers=everything).json()["models"]}["x"]
    assert on_fast["evidence"]["panel"]["wrong"] == 8 and on_fast["status"] == "confidently wrong"
    assert on_core["weight"] == 0 and "panel" not in on_core["evidence"] and on_core["status"] == "unrated", \
        "another collection's rating of the same model does not count them"
    assert overall["evidence"]["panel"]["wrong"] == 8, "the rating over everything is the model's whole record"

    # a review of core (after an unscoped verdict there) leaves x on it, automatic mode or not
    core = sdk(net, gateway, shared["all"])
    y_calls = calls_of(core, "core", "y", 2)
    assert http.post(gateway + "/bench/verdict", headers=everything,
                     json={"call": y_calls[0], "useful": True}).status_code == 200
    assert members(home, "core") == ("x", "y")
    suggestions = http.get(gateway + "/bench/suggestions", headers=everything, params={"state": "all"}).json()
    assert not [s for s in suggestions["suggestions"] if s["collection"] == "core"]

    # the user counts scoped keys' verdicts everywhere: the next review of core benches x
    learning = http.post(gateway + "/api/learning-settings", json={"scoped_verdicts": "everywhere"})
    assert learning.status_code == 200 and learning.json() == {
        "auto": True, "shadow": [], "explore": "ucb", "scoped_verdicts": "everywhere"}
    assert rating("core")["evidence"]["panel"]["wrong"] == 8
    assert http.post(gateway + "/bench/verdict", headers=everything,
                     json={"call": y_calls[1], "useful": True}).status_code == 200
    assert members(home, "core") == ("y",)

    written = [(line.key_name, line.scope) for line in in_store(home, verdicts.log)]
    assert written == [("fast-key", ("fast",))] * 8 + [("all-key", None)] * 2, "each line keeps its key's scope"


def test_learning_settings_refuse_an_unknown_scoped_verdicts_value(settings: Settings, gateway: str,
                                                                   http: httpx.Client) -> None:
    refused = http.post(gateway + "/api/learning-settings", json={"scoped_verdicts": "nowhere"})
    assert refused.status_code == 400 and "scoped_verdicts is one of own, everywhere" in refused.text
    assert http.get(gateway + "/api/learning-settings").json()["scoped_verdicts"] == "own"
    page = http.get(gateway + "/settings")
    assert page.status_code == 200
    assert 'name="scoped_verdicts" value="own" checked' in page.text
    assert http.post(gateway + "/api/learning-settings", json={"scoped_verdicts": "everywhere"}).status_code == 200
    assert 'name="scoped_verdicts" value="everywhere" checked' in http.get(gateway + "/settings").text
