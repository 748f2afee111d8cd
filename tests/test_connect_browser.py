"""Issue 33 items 1, 3 and 7: the browser sign-ins (``key`` and ``oauth``) through the server's own
routes, against a fake authorization server on loopback: a client that follows redirects as a
browser does goes to the provider's authorize URL, comes back to ``/connect/callback`` on the
server, whose page goes on to ``/endpoints?signin=<id>``. The tokens end in the keys file (0600), never in
the store, a reply or a log; a wrong state, a code used twice and a refusal are each refused."""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from tests.fakes.auth_server import FakeAuthServer
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback


def every_file(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


@pytest.fixture
def auth() -> FakeAuthServer:
    return FakeAuthServer(client_id="hf-app")


@pytest.fixture
def auth_base(auth: FakeAuthServer, net: Loopback) -> str:
    return net.serve(auth.app())


@pytest.fixture
def gw(net: Loopback, settings: Settings, auth: FakeAuthServer, auth_base: str) -> str:
    env = {**auth.env(auth_base, "huggingface"), **auth.env(auth_base, "openrouter"),
           **auth.env(auth_base, "chatgpt")}
    return serve_gateway(net, settings, connect_env=env)


@pytest.fixture
def api(gw: str, net: Loopback) -> Iterator[httpx.Client]:
    with net.client(base_url=gw, timeout=60) as client:
        yield client


@pytest.fixture
def browser(net: Loopback) -> Iterator[httpx.Client]:
    """A client that follows redirects, as a browser would, across the fake and the server."""
    with net.client(follow_redirects=True, timeout=60) as client:
        yield client


def onwards(page: httpx.Response) -> str:
    """Where the callback's page goes on to by itself (its meta refresh): a same-site navigation,
    so the SameSite=Strict login cookie goes along (a redirect from the provider's site would not)."""
    assert page.status_code == 200 and page.url.path == "/connect/callback", (page.status_code, page.url)
    found = re.search(r"http-equiv=refresh content='0;url=([^']+)'", page.text)
    assert found, page.text
    return html.unescape(found.group(1))


def keys_of(settings: Settings) -> dict[str, str]:
    return json.loads((settings.config_dir / "keys.json").read_text())


def test_oauth_sign_in_ends_on_the_endpoints_page_with_the_tokens_kept_as_keys(
        api: httpx.Client, browser: httpx.Client, gw: str, auth: FakeAuthServer, auth_base: str,
        settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    started = api.post("/api/connect/start", json={"preset": "huggingface", "client_id": "hf-app"})
    assert started.status_code == 201, started.text
    flow = started.json()["flow"]
    assert flow["status"] == "pending" and flow["flow"] == "oauth" and flow["endpoint"] == "huggingface"
    sent = parse_qs(urlsplit(started.json()["authorize_url"]).query)
    assert sent["code_challenge_method"] == ["S256"] and len(sent["code_challenge"][0]) == 43
    assert sent["redirect_uri"] == [gw + "/connect/callback"] and sent["client_id"] == ["hf-app"]
    assert sent["scope"] == ["openid inference-api"] and len(sent["state"][0]) >= 43

    page = browser.get(started.json()["authorize_url"])
    assert onwards(page) == f"/endpoints?signin={flow['id']}"
    assert [h.url.path for h in page.history] == ["/authorize"]
    assert auth.calls["token:authorization_code"] == 1

    done = api.get("/api/connect/flow", params={"id": flow["id"]}).json()["flow"]
    assert done["status"] == "done" and done["error"] is None
    [access] = auth.issued
    kept = keys_of(settings)
    assert kept["huggingface"] == access and kept["huggingface.refresh"].startswith("rt-")
    assert (settings.config_dir / "keys.json").stat().st_mode & 0o777 == 0o600
    endpoint = next(e for e in api.get("/api/endpoints").json()["endpoints"] if e["name"] == "huggingface")
    assert endpoint["base_url"] == "https://router.huggingface.co/v1" and endpoint["api"] == "chat"
    assert endpoint["key_source"] == "keys file"
    [signin] = api.get("/api/connect/signins").json()["signins"]
    assert signin["preset"] == "huggingface" and signin["renewable"] and not signin["ended"]
    assert signin["expires_at"] > signin["signed_in_at"] + 3000

    secrets = [access, kept["huggingface.refresh"]]
    for path in every_file(settings.home):  # the data folder: the store and everything beside it
        assert not any(s.encode() in path.read_bytes() for s in secrets), path
    for text in (started.text, page.text, api.get("/api/connect/signins").text, caplog.text):
        assert not any(s in text for s in secrets)


def test_a_callback_with_a_wrong_state_or_a_used_code_is_refused(
        api: httpx.Client, net: Loopback, auth: FakeAuthServer, settings: Settings) -> None:
    started = api.post("/api/connect/start", json={"preset": "huggingface", "client_id": "hf-app"}).json()
    with net.client() as step:  # one hop at a time: keep the callback's URL
        to_provider = step.get(started["authorize_url"])
        callback = to_provider.headers["location"]
        forged = callback.replace(parse_qs(urlsplit(callback).query)["state"][0], "x" * 43)
        wrong = step.get(forged)
        assert wrong.status_code == 400 and "no sign-in was started here" in wrong.text
        assert auth.calls["token:authorization_code"] == 0  # nothing was exchanged for a forged state
        first = step.get(callback)
        assert onwards(first) == f"/endpoints?signin={started['flow']['id']}"
        again = step.get(callback)
    assert again.status_code == 400 and "already finished" in again.text
    assert auth.calls["token:authorization_code"] == 1  # the code went to the provider once
    assert api.get("/api/connect/flow", params={"id": started["flow"]["id"]}).json()["flow"]["status"] == "done"
    assert keys_of(settings)["huggingface"] == auth.issued[0]


def test_a_sign_in_the_user_declines_ends_denied_and_keeps_nothing(
        api: httpx.Client, browser: httpx.Client, auth: FakeAuthServer, settings: Settings) -> None:
    auth.deny = True
    started = api.post("/api/connect/start", json={"preset": "huggingface", "client_id": "hf-app"}).json()
    page = browser.get(started["authorize_url"])
    assert onwards(page) == f"/endpoints?signin={started['flow']['id']}"
    flow = api.get("/api/connect/flow", params={"id": started["flow"]["id"]}).json()["flow"]
    assert flow["status"] == "denied" and "access_denied" in flow["error"]
    assert auth.calls["token:authorization_code"] == 0
    assert not (settings.config_dir / "keys.json").exists()
    assert api.get("/api/connect/signins").json()["signins"] == []


def test_openrouter_key_flow_hands_back_an_api_key(api: httpx.Client, browser: httpx.Client, auth: FakeAuthServer,
                                                   gw: str, settings: Settings) -> None:
    started = api.post("/api/connect/start", json={"preset": "openrouter"})
    assert started.status_code == 201
    sent = parse_qs(urlsplit(started.json()["authorize_url"]).query)
    assert "client_id" not in sent and sent["code_challenge_method"] == ["S256"]
    assert sent["callback_url"][0].startswith(gw + "/connect/callback?state=")
    page = browser.get(started.json()["authorize_url"])
    assert onwards(page).startswith("/endpoints?signin=")
    [key] = auth.issued
    assert key.startswith("sk-or-v1-") and keys_of(settings) == {"openrouter": key}  # a key: no refresh token
    endpoint = next(e for e in api.get("/api/endpoints").json()["endpoints"] if e["name"] == "openrouter")
    assert endpoint["kind"] == "aggregator" and endpoint["headers"] == ["HTTP-Referer", "X-Title"]
    [signin] = api.get("/api/connect/signins").json()["signins"]
    assert signin["flow"] == "key" and signin["expires_at"] is None and not signin["renewable"]


def test_a_client_issued_on_the_callback_is_the_one_the_code_is_exchanged_for(
        api: httpx.Client, browser: httpx.Client, auth: FakeAuthServer, settings: Settings) -> None:
    auth.client_id, auth.issue_client = "dynamic_agent_client", "issued-client-7"
    started = api.post("/api/connect/start", json={"preset": "chatgpt"}).json()
    assert parse_qs(urlsplit(started["authorize_url"]).query)["resource"] == ["https://api.openai.com/v1"]
    browser.get(started["authorize_url"])
    assert auth.bodies[-1]["client_id"] == "issued-client-7"
    endpoint = next(e for e in api.get("/api/endpoints").json()["endpoints"] if e["name"] == "chatgpt")
    assert endpoint["api"] == "responses"
    assert keys_of(settings)["chatgpt"] == auth.issued[0]


def test_start_refusals_are_clear(api: httpx.Client) -> None:
    unknown = api.post("/api/connect/start", json={"preset": "nope"})
    assert unknown.status_code == 404 and "presets: openrouter" in unknown.json()["error"]["message"]
    no_client = api.post("/api/connect/start", json={"preset": "huggingface"})
    assert no_client.status_code == 400 and "--client-id" in no_client.json()["error"]["message"]
    wrong_flow = api.post("/api/connect/start", json={"preset": "openrouter", "flow": "device"})
    assert wrong_flow.status_code == 400 and "signs in with key" in wrong_flow.json()["error"]["message"]
    bad_name = api.post("/api/connect/start", json={"preset": "openrouter", "endpoint": "Bad Name!"})
    assert bad_name.status_code == 400
    missing = api.get("/api/connect/flow", params={"id": "nothing"})
    assert missing.status_code == 404
    presets = api.get("/api/connect/presets").json()
    assert {p["id"] for p in presets["presets"]} == {"openrouter", "nanogpt", "huggingface", "pollinations",
                                                      "chatgpt", "github", "ollama"}
    hf = next(p for p in presets["presets"] if p["id"] == "huggingface")
    assert hf["needs_client_id"] and hf["flows"] == ["oauth", "device"] and hf["free_tier"]
    assert hf["env"]["client_id"] == "BENCH_CONNECT_HUGGINGFACE_CLIENT_ID"
    assert presets["callback"].endswith("/connect/callback")
