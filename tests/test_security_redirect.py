"""Issue 8: an upstream redirect is never followed, so a key never reaches another host."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from benchwarmers_mcp.app import make_client
from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.security import PROMPT, UPSTREAM_KEY, seed_fake
from tests.kits.store import url_for


def redirector(to: str) -> Starlette:
    async def bounce(request: Request) -> Response:
        return RedirectResponse(to + request.url.path, status_code=307)

    return Starlette(routes=[Route("/{path:path}", bounce, methods=["GET", "POST"])])


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings.from_env({"BENCHWARMERS_KEY_FAKE": UPSTREAM_KEY}, home=home, config_dir=home.parent / "config",
                             database_url=url_for(home))


def test_an_upstream_redirect_is_never_followed(home: Path, settings: Settings, gateway: str, net: Loopback,
                                                http: httpx.Client) -> None:
    elsewhere = FakeUpstream()
    with net.serving(elsewhere.app()) as far, net.serving(redirector(far)) as near:
        anyio.run(seed_fake, home, near + "/v1")
        r = http.post(gateway + "/v1/chat/completions", json={"model": "bench/core", "messages": PROMPT})
        assert r.status_code == 200, r.text
        seats = r.json()["bench"]["seats"]
        assert [seat["status"] for seat in seats] == ["error"]
        assert "redirected (307)" in seats[0]["error"] and "not followed" in seats[0]["error"]

        async def direct() -> int:
            async with make_client(settings, net.transport()) as client:
                return (await client.post(near + "/v1/chat/completions", json={})).status_code

        assert anyio.run(direct) == 307
    assert elsewhere.calls == []
