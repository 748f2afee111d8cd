"""The dashboard's judging pages over HTTP (issue 30; Chromium drives them in
tests/e2e/test_dashboard_judging.py): page paths with a parameter (``/panels/{id}``) in the
registry, answered by the route table's one page entry; a panel's page with who asked, each seat's
call id and answer (escaped: the markdown renderer gets text), the verdict form, errored seats
without Useful and the claims map; a 404 page for an unknown panel; links to it from At a glance,
Ask, Logs and Action needed; To judge with its filters, the keys of ``judge_keys.py`` and
the sidebar's count."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from benchwarmers_mcp import routes
from benchwarmers_mcp.judge_keys import KEYS
from benchwarmers_mcp.web.registry import Page, discover
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.judging import ANSWERS, answering, ask
from tests.kits.seed import seed

HOSTILE = "Fine, except <script>alert(1)</script> and <img src=x onerror=alert(2)> in `a.py:3`."


async def _load(view):  # a page loader for the registry tests
    return {}


@pytest.fixture
def judging(home: Path, upstream: str, fake: FakeUpstream) -> Path:
    """tests/kits/judging.py's bench, with a member of ``core`` that fails."""
    for alias, text in ANSWERS.items():
        fake.responders[alias] = answering(text)
    seed(home, base_url=upstream, served={**{a: a for a in ANSWERS}, "broken": "broken?fail=500"},
         collections={"core": [*ANSWERS, "broken"], "other": ["gamma"]})
    return home


def badge(html: str) -> str:
    found = re.search(r'<span class="badge" id="badge-judge" data-region>([^<]*)</span>', html)
    assert found, "the sidebar has To judge's badge"
    return found.group(1)


def test_a_page_path_may_have_parameters_each_a_whole_segment() -> None:
    page = Page("/panels/{id}", "Panel", "Bench", 1, "panel.html", _load)
    assert page.match("/panels/p-1.x") == {"id": "p-1.x"} and page.match("/panels") is None
    assert page.match("/panels/a/b") is None and page.match("/other/p-1") is None
    assert not page.in_sidebar and page.shape == Page("/panels/{other}", "P", "Bench", 1, "p.html", _load).shape
    for bad in ("/{id}", "/panels/{id}/{id}", "/panels/x{id}", "/api/{id}", "/bench/{id}", "/panels/"):
        with pytest.raises(ValueError):
            Page(bad, "Thing", "Bench", 1, "thing.html", _load)
    assert routes.is_page("/panels/p-1") and routes.is_page("/conversations/r-1")
    for other in ("/api/panels/p-1", "/bench/panels/p-1", "/static/app.js", "/v1/models/x", "/login/x"):
        assert not routes.is_page(other), other
    paths = {p.path for p in discover()}
    assert {"/panels/{id}", "/conversations/{id}", "/judge"} <= paths


def test_a_panels_page_shows_who_asked_every_answer_as_text_and_the_claims(judging: Path, gateway: str,
                                                                          api: httpx.Client, fake: FakeUpstream) -> None:
    fake.responders["gamma"] = answering(HOSTILE)
    asked = ask(api, gateway, headers={"User-Agent": "OpenAI/Python 9.9.9"})
    calls = {s["alias"]: s["call"] for s in asked["seats"]}
    reply = api.get(f"/panels/{asked['panel']}")
    assert reply.status_code == 200, reply.text[:300]
    html = reply.text
    assert f"<h1>Panel <code>{asked['panel']}</code></h1>" in html
    assert "the gateway (no key) · OpenAI/Python 9.9.9" in html and "Review this change to the cache." in html
    for alias, call in calls.items():
        assert f'data-call="{call}"' in html and f"<code>{call}</code>" in html, alias
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "<img src=x" not in html and "data-markdown>" in html  # written as text, for markdown.js
    broken = html.split(f'data-call="{calls["broken"]}"', 1)[1].split("</section>", 1)[0]
    assert 'value="true"' not in broken and 'value="false"' in broken  # never useful; not useful may be said
    claims = html.split('id="claims-map"', 1)[1]
    assert "2 of 3 seats" in claims and "never expires" in claims  # alpha and beta; gamma answered too
    assert claims.count('data-claim-mark="false"') >= 3 and "Only one seat said (look here first)" in claims

    missing = api.get("/panels/p20000101-000000-0000")
    assert missing.status_code == 404 and "no panel with id" in missing.text
    assert api.get("/conversations/r20000101-000000-0000").status_code == 404

    link = f'href="/panels/{asked["panel"]}"'
    for path in ("/", "/ask", "/logs"):  # At a glance, Ask's recent panels, Logs, and Action needed on each
        shown = api.get(path).text
        assert link in shown, path
        needed = shown.split('<div id="action-needed" data-region>', 1)[1].split('<p class="action-result"', 1)[0]
        assert link in needed and "Owed a verdict" in needed, path


def test_to_judge_lists_the_owed_seats_with_its_filters_keys_and_count(judging: Path, gateway: str,
                                                                      api: httpx.Client) -> None:
    assert badge(api.get("/").text) == ""  # nothing owed: no count
    asked = ask(api, gateway)
    html = api.get("/judge").text
    assert f'data-panel="{asked["panel"]}"' in html
    assert html.count('class="seat judge-seat"') == 3  # alpha, beta, gamma; broken is apart
    errored = html.split('class="errored"', 1)[1].split("</section>", 1)[0]
    assert "broken" in errored and "<button" not in errored
    assert re.findall(r'<kbd data-action="([a-z_]+)">([^<]+)</kbd>', html) == [(k.action, k.key) for k in KEYS]
    assert badge(html) == "3" == str(api.get("/api/inbox/count").json()["owed"])

    def panels(**query: str) -> list[str]:
        reply = api.get("/judge", params=query)
        assert reply.status_code == 200, reply.text[:300]
        return re.findall(r'class="card judge-panel" data-panel="([^"]+)"', reply.text)

    assert panels(collection="core") == [asked["panel"]] == panels(model="alpha") == panels(source="gateway")
    assert panels(collection="other") == [] and panels(source="mcp") == [] and panels(model="broken") == []
    assert api.get("/judge", params={"source": "phone"}).status_code == 400

    for seat in asked["seats"]:
        if seat["alias"] != "broken":
            assert api.post("/api/verdict", json={"call": seat["call"], "useful": True}).status_code == 200
    after = api.get("/judge").text
    assert "judge-panel" not in after and "Nothing to judge" in after and badge(after) == ""
