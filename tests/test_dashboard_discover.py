"""The Discover page: the catalog's rows as ``GET /api/discover`` (and so ``bench discover``) gives
them, in its order; each filter (free, new, tools, vision, a modality, reach, provider, text)
keeps only the rows it says; "Add" posts to ``/api/discover/add``, the path ``bench discover
add`` takes, same-origin only: to the onboarding queue (the row says so until the model is on
the bench), or registered at once ("Register now"); the Models page then shows each fact with its
source."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from tests.catalog.kit import FakeFeeds, openrouter_row
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback

SHOWN = 100  # rows a page of Discover shows


def keys(html: str) -> list[str]:
    """The catalog keys of the rows the page shows, in its order."""
    region = html.split('id="discover-rows"', 1)[1]
    return re.findall(r'<tr data-key="([^"]+)"', region)


def catalog_rows(api: httpx.Client, **params: str) -> list[dict[str, Any]]:
    reply = api.get("/api/discover", params={"limit": "5000", **params})
    assert reply.status_code == 200, reply.text
    return list(reply.json()["rows"])


def row_html(html: str, key: str) -> str:
    return html.split(f'<tr data-key="{key}"', 1)[1].split("</tr>", 1)[0]


def test_the_rows_are_the_catalogs_in_discovers_order(api: httpx.Client) -> None:
    everything = catalog_rows(api)
    page = api.get("/discover")
    assert page.status_code == 200, page.text[:300]
    shown = keys(page.text)
    assert shown == [r["key"] for r in everything[:SHOWN]]  # free first, then new, then reach
    assert f"{len(everything):,} match" in page.text
    first = everything[0]
    cells = row_html(page.text, first["key"])
    assert first["free"] and '<span class="chip ok">free</span>' in cells
    following = api.get("/discover", params={"offset": str(SHOWN)})
    assert keys(following.text) == [r["key"] for r in everything[SHOWN:2 * SHOWN]]
    assert 'rel="prev"' in following.text and f"showing {SHOWN + 1}–{2 * SHOWN}" in following.text


@pytest.mark.parametrize(("params", "keeps"), [
    ({"free": "1"}, lambda r: r["free"]),
    ({"tools": "1"}, lambda r: r["tools"] is True),
    ({"vision": "1", "tools": "1"}, lambda r: r["vision"] is True and r["tools"] is True),
    ({"modality": "in:audio"}, lambda r: "audio" in (r["input_modalities"] or [])),
    ({"modality": "out:image"}, lambda r: "image" in (r["output_modalities"] or [])),
    ({"provider": "groq"}, lambda r: r["provider"] == "groq"),
    ({"reach": "easy", "free": "1"}, lambda r: r["reach"] == "easy" and r["free"]),
    ({"find": "llama"}, lambda r: "llama" in r["key"].lower() or "llama" in r["name"].lower()),
])
def test_each_filter_keeps_only_what_it_says(api: httpx.Client, params: dict[str, str], keeps: Any) -> None:
    everything = catalog_rows(api)
    wanted = [r["key"] for r in everything if keeps(r)]
    assert 0 < len(wanted) < len(everything), params  # the filter takes some rows and leaves some
    html = api.get("/discover", params=params).text
    assert keys(html) == wanted[:SHOWN]
    assert f"{len(wanted):,} match" in html
    for name, value in params.items():  # the form shows the filters it was given
        if name in ("free", "tools", "vision"):
            assert re.search(rf'name="{name}" value="1" checked', html)
        elif name == "find":
            assert f'value="{value}"' in html
        else:
            assert f'<option value="{value}" selected>' in html


def test_new_rows_are_marked_and_filtered(settings: Settings, net: Loopback) -> None:
    """A row this install first saw today is "new" (and first among the paid); a fresh install
    calls nothing new. The new row comes from a refresh against a fake OpenRouter feed."""
    feeds = FakeFeeds(openrouter={"data": [openrouter_row("acme/brand-new-coder", context=64000, output=8000,
                                                          prompt="0.000001", completion="0.000002")]})
    base = net.serve(feeds.app())
    gateway = serve_gateway(net, settings, catalog_models_dev_url="", catalog_freellmapi_url="",
                            catalog_openrouter_url=f"{base}/api/v1/models")
    with net.client(base_url=gateway, timeout=60) as api:
        assert keys(api.get("/discover", params={"new": "1"}).text) == []  # the first visit sees the snapshot
        assert "Nothing in the catalog matches" in api.get("/discover", params={"new": "1"}).text
        refreshed = api.post("/api/catalog/refresh", json={})
        assert refreshed.status_code == 200 and feeds.hits == ["openrouter"], refreshed.text
        key = "openrouter/acme/brand-new-coder"
        html = api.get("/discover", params={"new": "1"}).text
        assert keys(html) == [key]
        row = row_html(html, key)
        assert '<span class="chip ok">new</span>' in row and "$1/2" in row and "64k" in row
        everything = [r["key"] for r in catalog_rows(api)]
        assert keys(api.get("/discover").text) == everything[:SHOWN] and key in everything
        assert "shipped models.dev data" in api.get("/discover").text  # only OpenRouter was refreshed


def test_add_registers_it_through_discovers_path(api: httpx.Client, fake: FakeUpstream, upstream: str,
                                                 gateway: str) -> None:
    fake.served = ["gpt-4o-mini"]
    assert api.post("/api/endpoint", json={"name": "local", "base": upstream, "key": "sk-local-key-0123456789"}
                    ).status_code == 201
    key = "openai/gpt-4o-mini"
    html = api.get("/discover", params={"provider": "openai", "find": "gpt-4o-mini"}).text
    row = row_html(html, key)
    assert 'data-api="/api/discover/add"' in row and f'name="model" value="{key}"' in row
    assert '<option value="local">local (by name)</option>' in row  # a local endpoint, asked for by name

    # what the form posts, as the dashboard's script sends it: same-origin JSON; another origin is refused
    assert 'name="mode"' in row and '<option value="quick">' in row
    assert 'name="now" value="true" data-type="bool">Register now' in row
    body = {"model": key, "endpoint": "local", "now": True}  # "Register now"
    foreign = api.post("/api/discover/add", json=body, headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403, foreign.text
    cross = api.post("/api/discover/add", json=body, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403, cross.text
    added = api.post("/api/discover/add", json=body, headers={"Origin": gateway, "Sec-Fetch-Site": "same-origin"})
    assert added.status_code == 201, added.text
    alias = added.json()["model"]["alias"]
    assert (added.json()["endpoint"], added.json()["via"]) == ("local", "named")

    after = row_html(api.get("/discover", params={"provider": "openai", "find": "gpt-4o-mini"}).text, key)
    assert f"on the bench as {alias}" in after and "/api/discover/add" not in after
    assert keys(api.get("/discover", params={"reach": "bench"}).text) == [key]

    models = api.get("/registered").text
    facts = models.split(f'id="facts-{alias}"', 1)[1].split("</dialog>", 1)[0]
    window = facts.split('data-fact="context_window"', 1)[1].split("</tr>", 1)[0]
    shown = api.get("/api/model/facts", params={"alias": alias}).json()["facts"]["context_window"]
    assert f"{shown['value']:,}" in window and ">catalog</span>" in window and key in window


def test_add_queues_it_for_onboarding_until_it_is_on_the_bench(api: httpx.Client, fake: FakeUpstream,
                                                               upstream: str) -> None:
    fake.served = ["gpt-4o-mini"]
    assert api.post("/api/endpoint", json={"name": "local", "base": upstream, "key": "sk-local-key-0123456789"}
                    ).status_code == 201
    key = "openai/gpt-4o-mini"
    queued = api.post("/api/discover/add", json={"model": key, "endpoint": "local", "mode": "quick"})  # "Add"
    assert queued.status_code == 202, queued.text
    assert queued.json()["item"]["mode"] == "quick" and queued.json()["entry"] == key
    seen = []
    deadline = time.monotonic() + 60
    while True:  # queued, then running its steps, then on the bench: the row says which
        row = row_html(api.get("/discover", params={"provider": "openai", "find": "gpt-4o-mini"}).text, key)
        seen.append("bench" if "on the bench as" in row else "queue" if "onboarding: " in row else "neither")
        if seen[-1] == "bench":
            break
        assert seen[-1] == "queue" and "/api/discover/add" not in row, row  # no second Add while it waits
        assert time.monotonic() < deadline, seen
        time.sleep(0.05)
    items = api.get("/api/onboarding").json()
    assert [(i["served"], i["endpoint"]) for i in items["items"]] == [("gpt-4o-mini", "local")], items
