"""Issue 33 item 7 in Chromium against a real server process and a fake authorization server on
loopback: the first run offers "Sign in with ..." beside "Paste a key" (OpenRouter's key flow, the
browser going to the provider and back); the Endpoints page signs in to Hugging Face (oauth, PKCE)
and to GitHub Models (device: the code shown, the page waiting until it is entered); a callback
with a state nobody sent is refused; a renewal the provider refuses is one "sign in again" alert
whose button signs that endpoint in again and clears it. Tokens end in the keys file, never on a
page. No console error, and no request to any host but the server and the fake provider. Then
Settings: the llm client chosen and what it cannot do said (item 5), and a provider's free models
kept to its own app (item 6)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, expect

from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import signins as signin_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from tests.fakes.auth_server import FakeAuthServer
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.browser import Watch, shot
from tests.kits.servers import serve_in_thread, spawn_server
from tests.kits.store import in_store

pytestmark = pytest.mark.e2e

WAIT = 60_000  # generous: the machine may be busy; nothing here waits on a clock
expect.set_options(timeout=WAIT)


def test_sign_in_with_each_flow_from_the_dashboard(browser: Browser, home: Path, upstream: str) -> None:
    auth = FakeAuthServer(client_id="bench-app", device_interval=0.2, device_script=["authorization_pending"])
    with serve_in_thread(auth.app()) as provider:
        env = {**auth.env(provider, "openrouter", BENCH_CONNECT_OPENROUTER_BASE_URL=upstream),
               **auth.env(provider, "huggingface", BENCH_CONNECT_HUGGINGFACE_BASE_URL=upstream,
                          BENCH_CONNECT_HUGGINGFACE_CLIENT_ID="bench-app"),
               **auth.env(provider, "github", BENCH_CONNECT_GITHUB_BASE_URL=upstream,
                          BENCH_CONNECT_GITHUB_CLIENT_ID="bench-app", BENCH_CONNECT_GITHUB_MODELS_URL=upstream + "/models"),
               "BENCH_SCHEDULER_TICK": "0.5"}
        with spawn_server(home, **env) as base, httpx.Client(base_url=base, timeout=60) as api:
            context = browser.new_context(base_url=base)
            context.set_default_timeout(WAIT)
            page = context.new_page()
            watch = Watch(page)

            # the first run: sign in with OpenRouter (its key flow) beside pasting a key
            page.goto("/")
            expect(page.get_by_role("heading", name="Add your first endpoint")).to_be_visible()
            expect(page.get_by_role("heading", name="Paste a key")).to_be_visible()
            for name in ("OpenRouter", "NanoGPT", "Hugging Face", "Pollinations", "ChatGPT plan", "GitHub Models",
                         "Ollama on this machine"):
                expect(page.get_by_role("button", name=f"Sign in with {name}", exact=True)).to_be_visible()
            shot(page, "first-run-sign-in")
            page.get_by_role("button", name="Sign in with OpenRouter", exact=True).click()
            page.wait_for_url(re.compile(r"/endpoints\?signin="))
            outcome = page.locator("[data-signin-outcome]")
            expect(outcome).to_have_attribute("data-signin-outcome", "done")
            expect(outcome).to_contain_text("Signed in with OpenRouter")
            card = page.locator("#endpoints section", has_text="openrouter")
            expect(card).to_contain_text("signed in with OpenRouter")
            assert auth.calls["key_authorize"] == 1 and auth.calls["key_exchange"] == 1

            # the Endpoints page: Hugging Face through its own page (oauth with PKCE)
            page.get_by_role("button", name="Sign in with Hugging Face", exact=True).click()
            page.wait_for_url(re.compile(r"/endpoints\?signin="))
            expect(outcome).to_contain_text("Signed in with Hugging Face")
            expect(page.locator("#endpoints section", has_text="huggingface")).to_contain_text("signed in with Hugging Face")
            assert auth.calls["authorize"] == 1 and auth.calls["token:authorization_code"] == 1
            shot(page, "endpoints-signed-in")

            # GitHub Models by a code typed on any device: the code shows, the page waits for it
            form = page.locator("#signin-github form")
            form.get_by_role("button", name="Sign in with GitHub Models", exact=True).click()
            expect(form.locator("[data-user-code]")).to_have_text("WDJB-MJHT")
            expect(form.get_by_role("link", name=re.compile("activate"))).to_have_attribute(
                "href", re.compile(r"/activate\?user_code=WDJB-MJHT$"))
            page.wait_for_url(re.compile(r"/endpoints\?signin="))
            expect(outcome).to_contain_text("Signed in with GitHub Models")
            assert auth.calls["device"] == 1 and auth.calls["token:urn:ietf:params:oauth:grant-type:device_code"] == 2

            keys = json.loads((home.parent / "config" / "keys.json").read_text())
            assert set(auth.issued) <= set(keys.values()), "every token and key is in the keys file"
            signins = {s["endpoint"]: s for s in api.get("/api/connect/signins").json()["signins"]}
            assert set(signins) == {"openrouter", "huggingface", "github"}

            # a callback with a state no flow sent: a page saying so, nothing finished
            said = len(watch.errors)
            refused = page.goto("/connect/callback?state=" + "x" * 43 + "&code=code-1")
            assert refused is not None and refused.status == 400
            expect(page.locator("body")).to_contain_text("no sign-in was started here with this state")
            del watch.errors[said:]  # Chromium's own line for a document answered 400
            page.goto("/endpoints")

            # the provider refuses a renewal: one alert saying "sign in again", its button signs in again
            auth.refuse_refresh = True
            soon = time.time() + 30  # within RENEW_BEFORE: the renewer takes it at its next tick
            in_store(home, lambda db: signin_store.renewed(db, "huggingface", soon, time.time(), "huggingface"))
            item = page.locator("#action-needed li").filter(has_text="huggingface")
            expect(item).to_contain_text("sign in again")
            expect(page.locator("#endpoints section", has_text="huggingface")).to_contain_text("sign-in ended")
            assert auth.calls["token:refresh_token"] == 1
            shot(page, "signin-alert")
            item.get_by_role("link", name="Sign in again").click()
            page.wait_for_url(re.compile(r"/endpoints\?reconnect=huggingface#signin-huggingface$"))
            again = page.locator("#signin-huggingface form")
            expect(again).to_contain_text("Sign huggingface in again")
            again.get_by_role("button", name="Sign in with Hugging Face", exact=True).click()
            page.wait_for_url(re.compile(r"/endpoints\?signin="))
            expect(outcome).to_contain_text("Signed in with Hugging Face")
            expect(page.locator("#action-needed li").filter(has_text="huggingface")).to_have_count(0)
            assert auth.calls["token:refresh_token"] == 1, "a refused refresh is asked once, not again and again"

            html = page.content()
            assert not any(token in html for token in auth.issued), "no token on a page"
            assert watch.hosts() <= {urlsplit(base).netloc, urlsplit(provider).netloc}, watch.hosts()
            assert watch.errors == []
            context.close()


@pytest.fixture
def fake() -> FakeUpstream:
    return FakeUpstream(served=["alpha"])


def test_settings_chooses_the_client_and_keeps_own_app_free_models_off(browser: Browser, home: Path) -> None:
    """Items 5 and 6 on Settings: the llm client chosen (and what it cannot do said), then back to
    the default; a provider's free models switched to its own app only, kept off panels."""
    async def seed(db) -> None:  # an endpoint on OpenRouter's address, never called here
        await endpoint_store.add(db, Endpoint("or", "https://openrouter.ai/api/v1", key_name="or"))
        await model_store.register(db, ModelRecord("llama-free", "meta-llama/llama-3.3-70b-instruct:free", "or",
                                                   "llama"))
        await model_store.register(db, ModelRecord("mini", "openai/gpt-4o-mini", "or", "gpt"))

    home.mkdir(parents=True, exist_ok=True)
    in_store(home, seed)
    with spawn_server(home) as base, httpx.Client(base_url=base, timeout=60) as api:
        context = browser.new_context(base_url=base)
        context.set_default_timeout(WAIT)
        page = context.new_page()
        watch = Watch(page)
        page.goto("/settings")
        region = page.locator("#client-region")
        expect(region.locator("[data-client-differences] li").first).to_contain_text("rate-limit headers")
        expect(region).to_contain_text("ledger")
        region.get_by_label("The llm CLI's Python API and plugins").check()
        region.get_by_role("button", name="Save client").click()
        expect(region.get_by_role("button", name="Back to the default (builtin)")).to_be_visible()
        assert api.get("/api/client").json()["chosen"] == "llm"
        region.get_by_role("button", name="Back to the default (builtin)").click()
        expect(region.get_by_role("button", name="Back to the default (builtin)")).to_have_count(0)
        assert api.get("/api/client").json()["chosen"] is None

        own = page.locator("#own-app-region")
        row = own.locator("tr[data-provider='openrouter']")
        expect(row).to_contain_text("used like any model")
        row.get_by_role("button", name=re.compile("free models work only in its own app")).click()
        expect(row).to_contain_text("own app only")
        expect(own).to_contain_text("Kept off panels now: llama-free")
        shot(page, "settings-providers")
        assert api.get("/api/own-app-free").json()["providers"] == ["openrouter"]
        row.get_by_role("button", name=re.compile("free models again")).click()
        expect(row).to_contain_text("used like any model")
        assert api.get("/api/own-app-free").json()["providers"] == []
        assert watch.errors == []
        assert watch.hosts() == {urlsplit(base).netloc}
        context.close()


def test_a_signed_in_session_comes_back_from_another_sites_provider_still_logged_in(
        browser: Browser, home: Path, upstream: str) -> None:
    """With an admin token, the login cookie is SameSite=Strict: a redirect chain that began on the
    provider's site (``localhost`` here, another site than ``127.0.0.1``) would arrive without it,
    on the login page. The callback's page goes on by itself, same-site, so it arrives logged in."""
    token = "a-long-enough-admin-token-for-tests"
    auth = FakeAuthServer(client_id="bench-app", consent=True)
    with serve_in_thread(auth.app()) as served:
        provider = served.replace("127.0.0.1", "localhost")
        env = auth.env(provider, "huggingface", BENCH_CONNECT_HUGGINGFACE_BASE_URL=upstream,
                       BENCH_CONNECT_HUGGINGFACE_CLIENT_ID="bench-app")
        with spawn_server(home, BENCHWARMERS_ADMIN_TOKEN=token, **env) as base:
            context = browser.new_context(base_url=base)
            context.set_default_timeout(WAIT)
            page = context.new_page()
            page.goto("/endpoints")
            page.get_by_label("Admin token").fill(token)
            page.get_by_role("button", name="Log in").click()
            page.get_by_role("button", name="Sign in with Hugging Face", exact=True).click()
            page.get_by_role("link", name="Allow").click()  # on the provider's page: its site starts the way back
            page.wait_for_url(re.compile(r"/endpoints\?signin="))
            expect(page.locator("[data-signin-outcome]")).to_contain_text("Signed in with Hugging Face")
            assert auth.calls["authorize"] == 1 and auth.calls["token:authorization_code"] == 1
            context.close()
