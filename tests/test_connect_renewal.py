"""Issue 33 item 3: a signed-in endpoint's token is renewed before it expires; a refresh the
provider refuses ends the sign-in with one ``signin`` alert ("sign in again", with its action), and
the endpoint's calls are refused here from then on, none sent upstream; sign-out revokes and
removes the tokens. On a hand-built context whose clock the test sets, against the fake
authorization server and the fake OpenAI upstream (each an ASGI app behind one transport)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import AuthOrBilling
from benchwarmers_mcp.health import alerts as health_alerts
from benchwarmers_mcp.messages import Message, ModelRequest
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import signins as signin_store
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.connect.flows import SignIns
from benchwarmers_mcp.upstream.connect.renewal import RENEW_BEFORE, Renewer
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.pacing import PacingPolicy
from tests.fakes.auth_server import FakeAuthServer
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.health import ManualClock

pytestmark = [pytest.mark.anyio, pytest.mark.backends]
AUTH, UPSTREAM = "http://auth.test", "http://upstream.test/v1"


class ByHost(httpx.AsyncBaseTransport):
    """Each host to its own in-process app."""

    def __init__(self, apps: dict[str, httpx.AsyncBaseTransport]) -> None:
        self.apps = apps

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.apps[request.url.host].handle_async_request(request)


@asynccontextmanager
async def signed_in(home: Path, auth: FakeAuthServer, upstream: FakeUpstream, clock: ManualClock,
                    database_url: str | None) -> AsyncIterator[Context]:
    """A context with ``huggingface`` signed in (the oauth flow, through the fake) and one model on it."""
    env = {**auth.env(AUTH, "huggingface"), "BENCH_CONNECT_HUGGINGFACE_BASE_URL": UPSTREAM}
    settings = Settings.from_env(env, home=home, config_dir=home.parent / "config", database_url=database_url)
    transport = ByHost({"auth.test": httpx.ASGITransport(app=auth.app()),
                        "upstream.test": httpx.ASGITransport(app=upstream.app())})
    async with Database(settings.store_target) as db, httpx.AsyncClient(transport=transport) as client, \
            anyio.create_task_group() as tg:
        keys = KeyStore(settings.config_dir, {})
        ctx = Context(settings, db, keys, client, ModelCaller(db, keys, client, PacingPolicy(retries=0), clock=clock),
                      tg, clock=clock, replica="one")
        flows = SignIns(ctx)
        started = await flows.start("huggingface", client_id="hf-app", base="http://127.0.0.1:8122")
        to_callback = (await client.get(started["authorize_url"])).headers["location"]
        state = httpx.URL(to_callback).params["state"]
        assert (await flows.callback(to_callback, state)).status == "done"
        await model_store.register(db, ModelRecord("llama", "meta/llama", "huggingface", "llama"))
        yield ctx
        tg.cancel_scope.cancel()


def ask() -> ModelRequest:
    return ModelRequest("meta/llama", [Message("user", "hello")])


async def test_a_token_is_renewed_before_it_expires_and_only_then(home: Path, database_url: str | None) -> None:
    auth, upstream, clock = FakeAuthServer(client_id="hf-app", expires_in=3600), FakeUpstream(), ManualClock()
    async with signed_in(home, auth, upstream, clock, database_url) as ctx:
        renewer = Renewer(ctx)
        assert await renewer.renew_due() == {}  # an hour left: nothing to do
        first = ctx.keys.get("huggingface")
        clock.set(clock.now() + 3600 - RENEW_BEFORE + 10)  # five minutes before the end, less ten seconds
        assert await renewer.renew_due() == {"huggingface": "renewed"}
        assert auth.calls["token:refresh_token"] == 1
        assert ctx.keys.get("huggingface") == auth.issued[-1] != first
        assert ctx.keys.get("huggingface.refresh") in auth.refresh_tokens  # the rotated one
        signin = await signin_store.get(ctx.db, "huggingface")
        assert signin is not None and signin.renewed_at == clock.now()
        assert signin.expires_at == pytest.approx(clock.now() + 3600)
        assert await renewer.renew_due() == {}  # renewed: not due again
        answer = await ctx.caller.complete(await model_store.get(ctx.db, "llama"), ask(), timeout=30)
        assert answer.text and upstream.calls[-1].headers["authorization"] == f"Bearer {auth.issued[-1]}"


async def test_a_refused_refresh_is_one_alert_and_no_upstream_call(home: Path, database_url: str | None) -> None:
    auth, upstream, clock = FakeAuthServer(client_id="hf-app", expires_in=60), FakeUpstream(), ManualClock()
    async with signed_in(home, auth, upstream, clock, database_url) as ctx:
        auth.refuse_refresh = True
        renewer = Renewer(ctx)
        assert await renewer.renew_due() == {"huggingface": "ended"}
        for _ in range(3):  # later ticks: an ended sign-in is not due, and raises nothing more
            clock.set(clock.now() + 30)
            assert await renewer.renew_due() == {}
        assert auth.calls["token:refresh_token"] == 1
        [alert] = [a for a in await alert_store.open_alerts(ctx.db) if a.kind == "signin"]
        assert alert.subject == "huggingface" and "sign in again" in alert.message
        assert "invalid_grant" in alert.message and "bench endpoint connect huggingface" in alert.message
        actions = health_alerts.describe(alert)["actions"]
        assert actions[0] == {"label": "Sign in again", "method": "POST", "path": "/api/connect/start",
                              "body": {"preset": "huggingface", "endpoint": "huggingface", "flow": "oauth"},
                              "cli": "bench endpoint connect huggingface", "asks": [],
                              "page": "/endpoints?reconnect=huggingface#signin-huggingface"}
        model = await model_store.get(ctx.db, "llama")
        for _ in range(3):
            with pytest.raises(AuthOrBilling, match="not sent: connection huggingface is paused .* sign-in ended"):
                await ctx.caller.complete(model, ask(), timeout=30)
        assert upstream.count() == 0  # refused here, every time: nothing went out with the dead token
        signin = await signin_store.get(ctx.db, "huggingface")
        assert signin is not None and signin.ended and "invalid_grant" in (signin.ended_why or "")

        auth.refuse_refresh = False  # signing in again ends the hold and the alert
        flows = SignIns(ctx)
        started = await flows.start("huggingface", base="http://127.0.0.1:8122")  # the client id was kept
        to_callback = (await ctx.client.get(started["authorize_url"])).headers["location"]
        await flows.callback(to_callback, httpx.URL(to_callback).params["state"])
        assert [a for a in await alert_store.open_alerts(ctx.db) if a.kind == "signin"] == []
        assert (await ctx.caller.complete(model, ask(), timeout=30)).text
        assert upstream.count() == 1


async def test_sign_out_revokes_and_removes_the_tokens(home: Path, database_url: str | None) -> None:
    auth, upstream, clock = FakeAuthServer(client_id="hf-app"), FakeUpstream(), ManualClock()
    async with signed_in(home, auth, upstream, clock, database_url) as ctx:
        access, refresh = ctx.keys.get("huggingface"), ctx.keys.get("huggingface.refresh")
        out = await SignIns(ctx).sign_out("huggingface")
        assert out["revoked"] == ["refresh_token", "access_token"] and out["tokens_removed"]
        assert auth.revoked == [refresh, access]
        stored = json.loads((ctx.settings.config_dir / "keys.json").read_text())
        assert "huggingface" not in stored and "huggingface.refresh" not in stored
        assert await signin_store.get(ctx.db, "huggingface") is None
        with pytest.raises(AuthOrBilling, match="signed out"):
            await ctx.caller.complete(await model_store.get(ctx.db, "llama"), ask(), timeout=30)
        assert upstream.count() == 0


async def test_the_keys_file_keeps_a_change_made_by_another_process(tmp_path: Path) -> None:
    one, two = KeyStore(tmp_path, {}), KeyStore(tmp_path, {})
    one.set("groq", "gsk-1")
    assert two.get("groq") == "gsk-1"
    two.update({"hf": "at-1", "hf.refresh": "rt-1"})  # read again under the lock: groq stays
    one.update({"hf": "at-2", "hf.refresh": None})
    assert json.loads((tmp_path / "keys.json").read_text()) == {"groq": "gsk-1", "hf": "at-2"}
    assert (tmp_path / "keys.json").stat().st_mode & 0o777 == 0o600
