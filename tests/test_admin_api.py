"""The admin API of the app in-process, with the fake OpenAI upstream for listings."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from benchwarmers_mcp import __version__
from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback, free_port

SECRET = "sk-admin-test-0123456789abcdef"


def post(api: httpx.Client, path: str, body: dict) -> httpx.Response:
    return api.post(path, json=body)


def error_of(response: httpx.Response) -> str:
    body = response.json()
    assert set(body["error"]) == {"message", "type", "code"}
    assert body["error"]["code"] == response.status_code
    return body["error"]["message"]


def add_fake(api: httpx.Client, upstream: str, name: str = "fake", key: str | None = SECRET) -> httpx.Response:
    body = {"name": name, "base": upstream}
    if key is not None:
        body["key"] = key
    return post(api, "/api/endpoint", body)


def register(api: httpx.Client, served: str, endpoint: str = "fake", **extra) -> dict:
    response = post(api, "/api/model/register", {"served": served, "endpoint": endpoint, **extra})
    assert response.status_code == 201, response.text
    return response.json()["model"]


def every_file(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_status_summarises_the_server(api: httpx.Client, settings: Settings) -> None:
    body = api.get("/api/status").json()
    assert body["version"] == __version__
    assert body["data_folder"] == str(settings.home)
    assert body["bind"] == "127.0.0.1"
    assert body["counts"] == {"endpoints": 0, "models": 0, "ad_hoc": 0, "retired": 0, "collections": 0,
                              "panels": 0, "calls": 0, "verdicts": 0, "owed": 0}
    assert body["auth"] == {"admin_token": False, "keys_required": False}


def test_an_endpoint_key_goes_to_the_key_store_only(api: httpx.Client, upstream: str, settings: Settings) -> None:
    created = add_fake(api, upstream)
    assert created.status_code == 201
    assert SECRET not in created.text
    shown = created.json()["endpoint"]
    assert shown["key_name"] == "fake" and shown["key_source"] == "keys file"
    keys_file = settings.config_dir / "keys.json"
    assert json.loads(keys_file.read_text()) == {"fake": SECRET}
    assert keys_file.stat().st_mode & 0o777 == 0o600
    for path in every_file(settings.home):
        assert SECRET.encode() not in path.read_bytes(), path
    listed = api.get("/api/endpoints")
    assert SECRET not in listed.text
    assert [e["name"] for e in listed.json()["endpoints"]] == ["fake"]


def test_changing_an_endpoint_keeps_what_is_not_given(api: httpx.Client, upstream: str, settings: Settings) -> None:
    add_fake(api, upstream)
    changed = post(api, "/api/endpoint", {"name": "fake", "kind": "aggregator"})
    assert changed.status_code == 200 and changed.json()["created"] is False
    endpoint = changed.json()["endpoint"]
    assert (endpoint["base_url"], endpoint["api"], endpoint["kind"]) == (upstream, "chat", "aggregator")
    assert json.loads((settings.config_dir / "keys.json").read_text()) == {"fake": SECRET}
    rekeyed = post(api, "/api/endpoint/key", {"name": "fake", "key": "sk-second-key"})
    assert rekeyed.status_code == 200 and "sk-second" not in rekeyed.text
    assert json.loads((settings.config_dir / "keys.json").read_text()) == {"fake": "sk-second-key"}


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"name": "Bad Name", "base": "http://127.0.0.1:1/v1"}, 400, "name"),
    ({"name": "ok", "base": "ftp://example.com"}, 400, "base URL"),
    ({"name": "ok"}, 400, "base URL"),
    ({"name": "ok", "base": "http://127.0.0.1:1/v1", "api": "soap"}, 400, "api must be one of"),
    ({"name": "ok", "base": "http://127.0.0.1:1/v1", "kind": "cloud"}, 400, "kind must be one of"),
    ({"name": "ok", "api": "simulated", "kind": "cloud"}, 400, "kind must be one of"),
    ({"name": "ok", "base": "http://127.0.0.1:1/v1", "key": "two words"}, 400, "no spaces"),
    ({"name": "ok", "base": "http://127.0.0.1:1/v1", "key": "   "}, 400, "empty"),
    ({"name": "ok", "base": "http://127.0.0.1:1/v1", "secret": "x"}, 400, "secret"),
    ({"name": 5, "base": "http://127.0.0.1:1/v1"}, 400, "name"),
    ({"name": "ok", "base": "http://127.0.0.1:1/v1", "headers": {"Authorization": "Bearer x"}}, 400, "key store"),
])
def test_bad_endpoints_are_refused_with_the_reason(api: httpx.Client, body: dict, status: int, words: str,
                                                   settings: Settings) -> None:
    response = post(api, "/api/endpoint", body)
    assert response.status_code == status
    assert words in error_of(response)
    assert api.get("/api/endpoints").json()["endpoints"] == []
    assert not (settings.config_dir / "keys.json").exists()


def test_a_body_that_is_not_json_gets_415_or_400(api: httpx.Client) -> None:
    form = api.post("/api/endpoint", content=b"name=x", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert form.status_code == 415 and "application/json" in error_of(form)
    broken = api.post("/api/endpoint", content=b"{nope", headers={"Content-Type": "application/json"})
    assert broken.status_code == 400 and "not valid JSON" in error_of(broken)
    listed = api.post("/api/collection", json=["not", "an", "object"])
    assert listed.status_code == 400 and "JSON object" in error_of(listed)


def test_unknown_admin_routes_and_methods_answer_in_json(api: httpx.Client) -> None:
    missing = api.get("/api/nothing-here")
    assert missing.status_code == 404 and "no route" in error_of(missing)
    wrong = api.get("/api/model/retire")
    assert wrong.status_code == 405
    error_of(wrong)


def test_testing_an_endpoint_reports_its_listing_or_its_failure(api: httpx.Client, upstream: str,
                                                                fake: FakeUpstream) -> None:
    fake.served[:] = ["vendor/alpha", "vendor/beta:free"]
    add_fake(api, upstream)
    good = post(api, "/api/endpoint/test", {"name": "fake"}).json()
    assert good["ok"] is True and good["served"] == 2 and good["sample"] == ["vendor/alpha", "vendor/beta:free"]
    post(api, "/api/endpoint", {"name": "closed", "base": f"http://127.0.0.1:{free_port()}/v1"})
    bad = post(api, "/api/endpoint/test", {"name": "closed"}).json()
    assert bad["ok"] is False and "unreachable" in bad["error"]
    missing = post(api, "/api/endpoint/test", {"name": "nobody"})
    assert missing.status_code == 404 and "nobody" in error_of(missing)


def test_the_listing_call_carries_the_endpoint_key(api: httpx.Client, net: Loopback) -> None:
    seen: list[str] = []

    async def models(request: Request) -> JSONResponse:
        seen.append(request.headers.get("authorization", ""))
        if request.headers.get("authorization") != f"Bearer {SECRET}":
            return JSONResponse({"error": {"message": "bad key"}}, status_code=401)
        return JSONResponse({"object": "list", "data": [{"id": "keyed/model"}]})

    with net.serving(Starlette(routes=[Route("/v1/models", models)])) as base:
        post(api, "/api/endpoint", {"name": "keyed", "base": base + "/v1", "key": SECRET})
        good = post(api, "/api/endpoint/test", {"name": "keyed"}).json()
        post(api, "/api/endpoint/key", {"name": "keyed", "key": "sk-wrong"})
        bad = post(api, "/api/endpoint/test", {"name": "keyed"}).json()
    assert seen == [f"Bearer {SECRET}", "Bearer sk-wrong"]
    assert good["ok"] is True and good["sample"] == ["keyed/model"]
    assert bad["ok"] is False and bad["upstream_status"] == 401 and "bad key" in bad["error"]


def test_candidates_are_what_endpoints_serve_minus_the_bench(api: httpx.Client, upstream: str,
                                                             fake: FakeUpstream) -> None:
    fake.served[:] = ["vendor/alpha", "vendor/beta:free", "other/alpha"]
    add_fake(api, upstream)
    register(api, "vendor/alpha")
    everything = api.post("/api/candidates", json={}).json()
    assert [(c["served"], c["status"], c["alias"], c["suggested"]) for c in everything["candidates"]] == [
        ("vendor/alpha", "registered", "alpha", None),
        ("vendor/beta:free", "new", None, "beta-free"),
        ("other/alpha", "new", None, "alpha-2"),
    ]
    fresh = api.post("/api/candidates", json={"new": True, "find": "BETA"}).json()["candidates"]
    assert [c["served"] for c in fresh] == ["vendor/beta:free"]
    unknown = api.post("/api/candidates", json={"endpoint": "nobody"})
    assert unknown.status_code == 404


def test_an_unreachable_endpoint_is_reported_beside_the_others(api: httpx.Client, upstream: str,
                                                               fake: FakeUpstream) -> None:
    fake.served[:] = ["vendor/alpha"]
    add_fake(api, upstream)
    post(api, "/api/endpoint", {"name": "down", "base": f"http://127.0.0.1:{free_port()}/v1"})
    body = api.post("/api/candidates", json={}).json()
    assert [c["served"] for c in body["candidates"]] == ["vendor/alpha"]
    assert [e["endpoint"] for e in body["errors"]] == ["down"]


def test_registering_derives_the_alias_and_refuses_duplicates(api: httpx.Client, upstream: str) -> None:
    add_fake(api, upstream)
    first = register(api, "poolside/laguna-s-2.1:free")
    assert first["alias"] == "laguna-s-2.1-free" and first["status"] == "active"
    other = register(api, "elsewhere/laguna-s-2.1:free")
    assert other["alias"] == "laguna-s-2.1-free-2"
    named = register(api, "vendor/gamma", alias="my-gamma", role="code", ad_hoc=True, context_window=32000)
    assert (named["alias"], named["role"], named["status"], named["context_window"]) == (
        "my-gamma", "code", "ad hoc", 32000)
    again = post(api, "/api/model/register", {"served": "poolside/laguna-s-2.1:free", "endpoint": "fake"})
    assert again.status_code == 400 and "already on the bench as 'laguna-s-2.1-free'" in error_of(again)
    taken = post(api, "/api/model/register", {"served": "x/y", "endpoint": "fake", "alias": "my-gamma"})
    assert taken.status_code == 400 and "taken" in error_of(taken)
    nowhere = post(api, "/api/model/register", {"served": "x/y", "endpoint": "nobody"})
    assert nowhere.status_code == 404
    spaced = post(api, "/api/model/register", {"served": "has space", "endpoint": "fake"})
    assert spaced.status_code == 400 and "served" in error_of(spaced)
    badrole = post(api, "/api/model/register", {"served": "x/z", "endpoint": "fake", "role": "wizard"})
    assert badrole.status_code == 400 and "role must be one of" in error_of(badrole)


def test_models_change_retire_and_restore(api: httpx.Client, upstream: str) -> None:
    add_fake(api, upstream)
    register(api, "vendor/alpha")
    register(api, "vendor/beta")
    post(api, "/api/collection", {"name": "core", "members": ["alpha", "beta"]})
    changed = post(api, "/api/model", {"alias": "alpha", "role": "vision", "vision": True, "context_window": 8000})
    assert changed.json()["changed"] == ["context_window", "role", "vision"]
    model = changed.json()["model"]
    assert (model["role"], model["vision"], model["context_window"]) == ("vision", True, 8000)
    unknown = post(api, "/api/model", {"alias": "alpha", "vision": None})
    assert unknown.json()["model"]["vision"] is None
    empty = post(api, "/api/model", {"alias": "alpha"})
    assert empty.status_code == 400 and "nothing to change" in error_of(empty)
    typed = post(api, "/api/model", {"alias": "alpha", "context_window": "8000"})
    assert typed.status_code == 400 and "context_window" in error_of(typed)

    retired = post(api, "/api/model/retire", {"alias": "beta", "reason": "stopped answering"}).json()
    assert retired["model"]["status"] == "retired" and retired["model"]["retired_why"] == "stopped answering"
    assert retired["member_of"] == ["core"]
    twice = post(api, "/api/model/retire", {"alias": "beta", "reason": "again"})
    assert twice.status_code == 400 and "already retired" in error_of(twice)
    reasonless = post(api, "/api/model/retire", {"alias": "alpha"})
    assert reasonless.status_code == 400 and "reason" in error_of(reasonless)
    active = api.get("/api/models", params={"active": "1"}).json()["models"]
    assert [m["alias"] for m in active] == ["alpha"]
    statuses = {m["alias"]: m["status"] for m in api.get("/api/models").json()["models"]}
    assert statuses == {"alpha": "active", "beta": "retired"}

    restored = post(api, "/api/model/restore", {"alias": "beta"}).json()
    assert restored["model"]["status"] == "active" and restored["member_of"] == ["core"]
    not_retired = post(api, "/api/model/restore", {"alias": "beta"})
    assert not_retired.status_code == 400 and "not retired" in error_of(not_retired)
    found = api.get("/api/models", params={"find": "alp"}).json()["models"]
    assert [m["alias"] for m in found] == ["alpha"]
    by_role = api.get("/api/models", params={"role": "vision"}).json()["models"]
    assert [m["alias"] for m in by_role] == ["alpha"]


def test_a_retired_model_keeps_its_evidence(api: httpx.Client, upstream: str) -> None:
    add_fake(api, upstream)
    register(api, "alpha")
    post(api, "/api/collection", {"name": "solo", "members": ["alpha"]})
    api.post("/api/gateway-settings", json={"max_explorers": 0})
    answer = api.post("/v1/chat/completions", json={"model": "bench/solo",
                                                    "messages": [{"role": "user", "content": "hi"}]}).json()
    call = answer["bench"]["seats"][0]["call"]
    assert api.post("/bench/verdict", json={"call": call, "useful": True}).status_code == 200
    post(api, "/api/model/retire", {"alias": "alpha", "reason": "testing"})
    post(api, "/api/model/restore", {"alias": "alpha"})
    model = api.get("/api/models").json()["models"][0]
    assert (model["calls"], model["useful"], model["judged"]) == (1, 1, 1)
    counts = api.get("/api/status").json()["counts"]
    assert (counts["panels"], counts["calls"], counts["verdicts"], counts["owed"]) == (1, 1, 1, 0)


def test_collections_are_saved_edited_and_deleted(api: httpx.Client, upstream: str) -> None:
    add_fake(api, upstream)
    for served in ("a1", "b2", "c3", "d4"):
        register(api, served)
    made = post(api, "/api/collection", {"name": "reviewers", "members": ["a1", "b2", "c3"],
                                         "description": "adversarial review", "tags": ["code"],
                                         "shape": "review", "reply": "merged", "merger": "a1"})
    assert made.status_code == 201
    entry = made.json()["collection"]
    assert (entry["members"], entry["shape"], entry["reply"], entry["merger"]) == (
        ["a1", "b2", "c3"], "review", "merged", "a1")
    edited = post(api, "/api/collection", {"name": "reviewers", "add": ["d4"], "remove": ["a1"]})
    assert edited.status_code == 200
    entry = edited.json()["collection"]
    assert entry["members"] == ["b2", "c3", "d4"] and entry["description"] == "adversarial review"
    listed = api.get("/api/collections").json()["collections"]
    assert [c["id"] for c in listed] == ["bench/reviewers"]

    for body, words in [
        ({"name": "reviewers", "remove": ["zz"]}, "not members"),
        ({"name": "reviewers", "add": ["nobody"]}, "unknown model aliases"),
        ({"name": "fresh"}, "at least one member"),
        ({"name": "reviewers", "reply": "loud"}, "reply must be one of"),
        ({"name": "reviewers", "shape": "poetry"}, "unknown shape"),
        ({"name": "Bad!", "members": ["a1"]}, "collection name"),
        ({"name": "reviewers", "tags": ["Not A Tag"]}, "cannot be a tag"),
        ({"name": "reviewers", "members": "a1,b2"}, "members"),
    ]:
        refused = post(api, "/api/collection", body)
        assert refused.status_code == 400, body
        assert words in error_of(refused), body

    post(api, "/api/model/retire", {"alias": "a1", "reason": "gone"})
    joining = post(api, "/api/collection", {"name": "reviewers", "add": ["a1"]})
    assert joining.status_code == 400 and "retired" in error_of(joining)

    assert post(api, "/api/collection/remove", {"name": "reviewers"}).json() == {"removed": "reviewers"}
    again = post(api, "/api/collection/remove", {"name": "reviewers"})
    assert again.status_code == 404
    assert api.get("/api/collections").json()["collections"] == []


def test_gateway_settings_bound_the_collections(api: httpx.Client, upstream: str) -> None:
    assert api.get("/api/gateway-settings").json() == {"gateway": {"max_calls": 5, "max_explorers": 2}}
    changed = api.post("/api/gateway-settings", json={"max_calls": 4})
    assert changed.json() == {"gateway": {"max_calls": 4, "max_explorers": 2}}
    add_fake(api, upstream)
    for served in ("a1", "b2", "c3"):
        register(api, served)
    post(api, "/api/collection", {"name": "three", "members": ["a1", "b2", "c3"]})
    shrink = api.post("/api/gateway-settings", json={"max_calls": 2})
    assert shrink.status_code == 400 and "three" in error_of(shrink)
    for body in ({"max_explorers": 3}, {"max_calls": 11}, {"max_calls": "4"}, {"explorers": 1}):
        refused = api.post("/api/gateway-settings", json=body)
        assert refused.status_code == 400, body
    assert api.get("/api/gateway-settings").json() == {"gateway": {"max_calls": 4, "max_explorers": 2}}


def test_removing_an_endpoint_retires_its_models_only_when_asked(api: httpx.Client, upstream: str,
                                                                 settings: Settings) -> None:
    add_fake(api, upstream)
    register(api, "alpha")
    refused = post(api, "/api/endpoint/remove", {"name": "fake"})
    assert refused.status_code == 400 and "alpha" in error_of(refused)
    removed = post(api, "/api/endpoint/remove", {"name": "fake", "with_models": True}).json()
    assert removed == {"removed": "fake", "retired": ["alpha"], "key_removed": True}
    assert json.loads((settings.config_dir / "keys.json").read_text()) == {}
    model = api.get("/api/models").json()["models"][0]
    assert model["status"] == "retired" and "fake removed" in model["retired_why"]
    cannot = post(api, "/api/model/restore", {"alias": "alpha"})
    assert cannot.status_code == 400 and "add it again" in error_of(cannot)
    assert post(api, "/api/endpoint/remove", {"name": "fake"}).status_code == 404


def test_status_names_endpoints_without_a_key(api: httpx.Client, upstream: str) -> None:
    add_fake(api, upstream, key=None)
    post(api, "/api/endpoint", {"name": "ollama", "base": "http://127.0.0.1:11434", "api": "ollama",
                                "kind": "local"})
    body = api.get("/api/status").json()
    assert body["endpoints_without_key"] == ["fake"]
    assert body["counts"]["endpoints"] == 2


def test_a_key_shadowed_by_the_environment_is_noted(settings: Settings, upstream: str, net: Loopback) -> None:
    base = serve_gateway(net, settings, env_keys={"FAKE": "sk-from-env"})
    with net.client(base_url=base) as client:
        saved = add_fake(client, upstream).json()
        rekeyed = post(client, "/api/endpoint/key", {"name": "fake", "key": "sk-other"}).json()
        unkeyed = post(client, "/api/endpoint", {"name": "fake", "base": upstream}).json()
    for reply in (saved, rekeyed):
        assert reply["key_saved"] is True
        assert "BENCHWARMERS_KEY_FAKE" in reply["note"] and "sk-" not in reply["note"]
        assert reply["endpoint"]["key_source"] == "environment"
    assert "note" not in unkeyed
