"""Issue 16.3: "went paid" comes from the catalog refresh the scheduler's ``catalog`` job runs: a
free model the refreshed catalog prices raises the alert (with its actions), a later refresh that
still prices it keeps that one alert open (never a second), and one that says free again clears it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from benchwarmers_mcp.settings import Settings
from tests.catalog.kit import (
    FEED_SETTINGS,
    FEEDS_HOST,
    FakeFeeds,
    FakeProvider,
    Outbound,
    add_endpoint,
    gateway,
    listed,
    models_dev_doc,
    post,
    register,
)

pytestmark = pytest.mark.anyio
GROQ_MODEL = "llama-3.3-70b-versatile"


def priced(price_in: float, price_out: float) -> Callable[[str, str, dict[str, Any]], None]:
    def change(provider: str, model: str, raw: dict[str, Any]) -> None:
        if (provider, model) == ("groq", GROQ_MODEL):
            raw["cost"] = {**(raw.get("cost") or {}), "input": price_in, "output": price_out}
    return change


async def test_the_catalog_job_raises_refreshes_and_clears_went_paid(settings: Settings,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    feeds = FakeFeeds(models_dev=models_dev_doc(change=priced(0, 0)))
    groq = FakeProvider(listed=listed(GROQ_MODEL))
    outbound = Outbound({FEEDS_HOST: feeds.app(), "api.groq.com": groq.app("/openai/v1")})

    async def catalog_job() -> dict[str, Any]:
        done = await post(api, "/api/scheduler/run", {"job": "catalog", "wait": True}, 200)
        assert done["status"] == "ran", done
        return dict(done["detail"])

    async def went_paid() -> list[dict[str, Any]]:
        return [a for a in (await api.get("/api/alerts")).json()["alerts"] if a["kind"] == "went_paid"]

    async with gateway(settings, outbound, monkeypatch, **FEED_SETTINGS) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        alias = (await register(api, GROQ_MODEL, "groq"))["alias"]  # priced in the shipped snapshot
        first = await catalog_job()  # the feed says free: nothing to say (it was priced, not free)
        assert first["went_paid"] == [] and await went_paid() == [] and feeds.hits.count("models.dev") == 1

        feeds.models_dev = models_dev_doc(change=priced(0.59, 0.79))
        assert (await catalog_job())["went_paid"] == [alias]
        [alert] = await went_paid()
        assert alert["subject"] == alias and "$0.59 / $0.79" in alert["message"]
        assert [a["label"] for a in alert["actions"]] == ["Mark ad hoc", "Retire", "Dismiss"]
        assert alert["actions"][0]["cli"] == f"bench model ad-hoc {alias} on"

        feeds.models_dev = models_dev_doc(change=priced(0.6, 0.8))  # priced still: the alert stays, not raised twice
        assert (await catalog_job())["went_paid"] == []
        [again] = await went_paid()
        assert again["id"] == alert["id"]

        feeds.models_dev = models_dev_doc(change=priced(0, 0))
        cleared = await catalog_job()
        assert cleared["free_again"] == [alias] and await went_paid() == []
        runs = (await api.get("/api/scheduler")).json()["runs"]
        assert [r["job"] for r in runs].count("catalog") == 4 and {r["trigger"] for r in runs} == {"now"}
    assert outbound.blocked == []
