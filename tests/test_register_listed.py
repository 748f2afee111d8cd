"""Registering a name the endpoint does not list: refused where its listing is known and complete
(with the closest names it lists, and ``force`` to insist), registered with a warning where the
listing cannot say (it did not answer, listed nothing, or is one page of several), through the one
registration every way onto the bench takes (the admin API here, the CLI in ``test_cli.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from benchwarmers_mcp.settings import Settings
from tests.catalog.kit import FakeProvider, Outbound, add_endpoint, gateway, listed, post

pytestmark = pytest.mark.anyio


async def _models(api: Any) -> list[str]:
    return [m["alias"] for m in (await api.get("/api/models")).json()["models"]]


async def test_a_name_the_complete_listing_lacks_is_refused_unless_forced(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(listed=listed("llama-3.3-70b-versatile", "qwen/qwen3-32b"))
    outbound = Outbound({"api.groq.com": fake.app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        refused = await post(api, "/api/model/register", {"served": "llama-3.3-70b", "endpoint": "groq"}, 400)
        message = refused["error"]["message"]
        assert "groq does not list llama-3.3-70b" in message and "did you mean llama-3.3-70b-versatile" in message
        assert "--force" in message and await _models(api) == [], "nothing registered"
        forced = await post(api, "/api/model/register", {"served": "llama-3.3-70b", "endpoint": "groq",
                                                         "force": True}, 201)
        assert forced["model"]["alias"] == "llama-3.3-70b" and "registered anyway" in forced["warning"]
        listed_ok = await post(api, "/api/model/register", {"served": "qwen/qwen3-32b", "endpoint": "groq"}, 201)
        assert "warning" not in listed_ok, "a listed name registers without a word"


async def test_a_listing_that_cannot_say_registers_it_with_a_warning(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    down = FakeProvider(listing_status=503)
    empty = FakeProvider()

    async def paged(request: Request) -> JSONResponse:  # Anthropic's shape: the first page of several
        return JSONResponse({"data": [{"id": "claude-a", "type": "model"}], "has_more": True, "last_id": "claude-a"})

    outbound = Outbound({"down.test": down.app(), "empty.test": empty.app(),
                         "paged.test": Starlette(routes=[Route("/v1/models", paged)])})
    async with gateway(settings, outbound, monkeypatch) as api:
        for name in ("down", "empty", "paged"):
            await add_endpoint(api, name, f"http://{name}.test/v1", **({"api": "anthropic"} if name == "paged" else {}))
        said = {name: (await post(api, "/api/model/register", {"served": "vendor/unlisted", "endpoint": name,
                                                               "alias": f"unlisted-{name}"}, 201))["warning"]
                for name in ("down", "empty", "paged")}
    assert "listing did not answer" in said["down"]
    assert "lists nothing" in said["empty"]
    assert "lists one page of its models" in said["paged"]
    assert all("a probe shows whether it answers" in w for w in said.values())
