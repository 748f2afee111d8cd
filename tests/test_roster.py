"""One truth about a model: its status is one word of one closed list, decided in ``engine/roster.py``,
and every surface shows that word (the admin API, Health, At a glance, Models, Collections, Action
needed, the ratings' rows); a model failing its health checks is not seated as an explorer until it
answers again, while a member that fails still fails over as before."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from benchwarmers_mcp.engine import roster
from benchwarmers_mcp.engine.roster import Failed, Signs, Status, status_of
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store.models import ModelRecord
from tests.catalog.kit import (
    FakeProvider,
    Outbound,
    add_endpoint,
    error,
    gateway,
    listed,
    post,
    register,
    said,
)

NOW = 1_800_000_000.0
MODEL = ModelRecord("m", "vendor/m", "prov", "m")


def test_each_sign_decides_one_word_of_one_closed_list() -> None:
    retired = ModelRecord("m", "vendor/m", "prov", "m", retired_at=NOW - 60, retired_why="stopped answering")
    cases = [
        (retired, Signs(gone="404", answered=NOW), "retired"),
        (MODEL, Signs(retiring={"retires_at": "2027-01-15T00:00:00+00:00", "why": "no answer for 3 days"},
                      failed=Failed(NOW - 60, "timeout")), "retiring"),
        (MODEL, Signs(gone="upstream 404: no such model", rest=(NOW + 60, "upstream 500")), "gone"),
        (MODEL, Signs(failed=Failed(NOW - 60, "structural", "no such model")), "gone"),
        (MODEL, Signs(failed=Failed(NOW - 60, "empty"), rest=(NOW + 60, "429"), answered=NOW - 3600), "failing"),
        (MODEL, Signs(failed=Failed(NOW - 60, "capacity"), rest=(NOW + 60, "upstream 429")), "resting"),
        (MODEL, Signs(rest=(NOW - 1, "over"), answered=NOW - 180), "healthy"),
        (MODEL, Signs(failed=Failed(NOW - 60, "capacity")), "untested"),
        (MODEL, Signs(), "untested"),
    ]
    got = [status_of(m, s, NOW).word for m, s, _ in cases]
    assert got == [want for _, _, want in cases]
    assert set(got) == set(roster.STATUSES), "every word is reachable, and no other"
    failing = status_of(MODEL, Signs(failed=Failed(NOW - 180, "timeout", "no answer in 90 s")), NOW)
    assert failing.why.startswith("its health check 3 min ago failed: it timed out (no answer in 90 s)")
    assert "not seated as an explorer until it answers again" in failing.why and not failing.explores
    assert status_of(MODEL, Signs(rest=(NOW + 300, "upstream 429")), NOW).why == "back in 5 min: upstream 429"
    assert status_of(MODEL, Signs(answered=NOW - 180), NOW).why == "answered 3 min ago"
    with pytest.raises(ValueError, match="not a status"):
        Status("active", "the old admin word")


def _status(rows: list[dict[str, Any]], alias: str) -> str:
    return next(str(r["status"]) for r in rows if r["alias"] == alias)


def _row_status(html: str, alias: str) -> str:
    found = re.search(rf'<tr [^>]*data-status="([^"]+)"[^>]*data-alias="{re.escape(alias)}"', html)
    assert found, f"{alias} has a row"
    return found.group(1)


async def _seated(api: httpx.AsyncClient, collection: str) -> dict[str, str]:
    """Who sat on one panel of ``collection``: alias -> seat label."""
    reply = await post(api, "/v1/chat/completions", {"model": f"bench/{collection}", "messages": [
        {"role": "user", "content": "Where can refresh() go stale?"}]}, 200)
    return {s["alias"]: s["seat"] for s in reply["bench"]["seats"]}


async def everywhere(api: httpx.AsyncClient, alias: str) -> set[str]:
    """The status of ``alias`` on every surface that shows one."""
    seen = {_status((await api.get("/api/models")).json()["models"], alias),
            _status((await api.get("/api/health")).json()["models"], alias),
            _status([{"alias": r["alias"], **r["model"]} for r in (await api.get("/bench/ratings")).json()["models"]],
                    alias)}
    for page in ("/", "/registered"):
        seen.add(_row_status((await api.get(page)).text, alias))
    glance = (await api.get("/")).text  # At a glance's "Models to watch" (what was "Resting and pending")
    watched = re.findall(rf'<li><span class="chip[^"]*">([a-z ]+)</span> <strong>{re.escape(alias)}</strong>', glance)
    seen.update(watched)
    if seen & {"retiring", "gone", "failing", "resting"}:
        assert watched, f"{alias} is listed under Models to watch"
    health = (await api.get("/health-checks")).text
    row = re.search(rf'<tr data-alias="{re.escape(alias)}">(.*?)</tr>', health, re.S)
    assert row
    seen.add(re.search(r'<span class="chip[^"]*"[^>]*>([a-z ]+)</span>', row.group(1)).group(1))  # type: ignore[union-attr]
    return seen


@pytest.mark.anyio
async def test_a_failing_health_check_reads_the_same_everywhere_and_bars_explorer_seats(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(listed=listed("member-model", "steady-model", "shaky-model"))
    fake.replies["shaky-model"] = said("")  # it answers nothing: its health check fails (no rest follows)
    outbound = Outbound({"api.prov.test": fake.app("/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "prov", "https://api.prov.test/v1")
        for served in ("member-model", "steady-model", "shaky-model"):
            await register(api, served, "prov")
        await post(api, "/api/collection", {"name": "core", "members": ["member-model"]}, 201)
        await post(api, "/api/collection", {"name": "side", "members": ["shaky-model"]}, 201)
        assert await everywhere(api, "shaky-model") == {"untested"}
        probed = await post(api, "/api/probe", {"alias": "shaky-model"}, 200)
        assert probed["answered"] is False

        assert await everywhere(api, "shaky-model") == {"failing"}, "one word on every surface"
        why = next(m for m in (await api.get("/api/models")).json()["models"] if m["alias"] == "shaky-model")
        assert "its health check" in why["status_why"] and "answered nothing" in why["status_why"]
        for _ in range(3):  # explorers are drawn from the healthy and untested: never the failing one
            seats = await _seated(api, "core")
            assert seats.get("steady-model") == "explorer" and "shaky-model" not in seats, seats
        assert (await _seated(api, "side"))["shaky-model"] == "member", "a failing member is still seated"

        fake.replies["shaky-model"] = said("ready")  # it answers again
        assert (await post(api, "/api/probe", {"alias": "shaky-model"}, 200))["answered"] is True
        assert await everywhere(api, "shaky-model") == {"healthy"}
        assert "shaky-model" in await _seated(api, "core"), "seated as an explorer again once it answered"


@pytest.mark.anyio
async def test_a_model_a_call_found_gone_reads_gone_in_action_needed_too(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(listed=listed("here-model", "gone-model"))
    fake.replies["gone-model"] = error(404, "The model `gone-model` does not exist")
    outbound = Outbound({"api.prov.test": fake.app("/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "prov", "https://api.prov.test/v1")
        for served in ("here-model", "gone-model"):
            await register(api, served, "prov")
        await post(api, "/api/collection", {"name": "core", "members": ["here-model", "gone-model"]}, 201)
        await _seated(api, "core")
        assert await everywhere(api, "gone-model") == {"gone"}
        banner = (await api.get("/collections")).text.split('id="action-needed"', 1)[1].split("</section>", 1)[0]
        item = re.search(r'<li data-subject="gone-model"><span class="chip ([a-z]*)">([a-z ]+)</span>', banner)
        assert item and item.groups() == ("err", "gone"), "the alert wears the model's status, not 'may be gone'"
        collections = (await api.get("/collections")).text
        assert re.search(r'<tr data-alias="gone-model"><th scope="row">gone-model</th><td><span class="chip err"'
                         r'[^>]*>gone</span>', collections)
