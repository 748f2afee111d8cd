"""The dashboard's ratings (issue 18.6) over HTTP: the Ratings page draws each model's rating as a
mean and an interval (SVG bars, hidden from screen readers, beside the table that holds the same
figures), filtered by collection and shape; the Collections roster shows each member's rating;
a suggestion appears in "Action needed" with its evidence and Accept, and pressing Accept as the
browser would changes the collection and clears the suggestion; suggestions are live events."""

from __future__ import annotations

import re

import httpx

from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.engine.ratings import beta_interval
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import events as event_store
from benchwarmers_mcp.store import ratings as rating_store
from tests.kits.store import in_store
from tests.ratings.kit import bench as make_bench
from tests.ratings.kit import judge
from tests.test_dashboard_health import banner, forms, press


async def known_verdicts(db: Database) -> None:
    """core = a (weak) and b (strong); x a strong explorer; y never judged."""
    await make_bench(db, ["a", "b", "x", "y"], {"core": ["a", "b"]})
    await judge(db, "a", 2, 8, label="member")  # Beta(2+2, 2+8): mean 4/14
    await judge(db, "b", 9, 1, label="member")  # Beta(11, 3): mean 11/14
    await judge(db, "x", 8, 1)  # Beta(10, 3)


def table_rows(page: str) -> list[tuple[str, list[str]]]:
    """The ratings table: per row its alias and the text of its cells."""
    body = re.search(r'<table id="ratings-table">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, "the page has the ratings table"
    out = []
    for alias, inner in re.findall(r'<tr data-alias="([^"]+)">(.*?)</tr>', body.group(1), re.S):
        cells = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", c)).strip()
                 for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", inner, re.S)]
        out.append((alias, cells))
    return out


def bars(page: str) -> dict[str, tuple[float, float, float]]:
    """The chart: per alias its interval bar's left and right ends and the mean's dot, in SVG units."""
    svg = re.search(r'<svg [^>]*class="rating-chart">(.*?)</svg>', page, re.S)
    assert svg, "the page draws the chart"
    out = {}
    for alias, inner in re.findall(r'<g class="rating[^"]*" data-alias="([^"]+)">(.*?)</g>', svg.group(1), re.S):
        rect = re.search(r'<rect class="interval" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', inner)
        dot = re.search(r'<circle class="mean" cx="([\d.]+)"', inner)
        assert rect and dot
        out[alias] = (float(rect.group(1)), float(rect.group(1)) + float(rect.group(2)), float(dot.group(1)))
    return out


def near(text: str, pair: tuple[float, float]) -> bool:
    """An interval as shown (``59–93%``) within a point of ``pair`` (verdicts made now weigh just
    under 1: evidence is aged by the half day)."""
    low, high = (int(v) for v in re.findall(r"\d+", text))
    return abs(low - 100 * pair[0]) <= 1 and abs(high - 100 * pair[1]) <= 1


def test_the_ratings_page_draws_mean_and_interval_from_known_verdicts(api: httpx.Client, settings: Settings) -> None:
    in_store(settings, known_verdicts)
    page = api.get("/ratings", params={"collection": "core"})
    assert page.status_code == 200
    rows = table_rows(page.text)
    assert [a for a, _ in rows] == ["b", "a", "x", "y"], "members first, then the rest, best first"
    by = dict(rows)
    assert by["b"][1] == "member" and by["x"][1] == "—"
    assert by["b"][2] == "79%" and by["a"][2] == "29%" and by["x"][2] == "77%"
    assert by["y"][2] == "—" and by["y"][3] == "—", "no verdict: no figure, never the prior shown as one"
    assert near(by["b"][3], beta_interval(11, 3)) and near(by["a"][3], beta_interval(4, 10))
    assert by["b"][4].startswith("10 judged answers") and "panel 9/10" in by["b"][4] and by["y"][4] == "—"
    # no false claim: "0 of 10" beside its interval, never the prior as "N% confidently wrong"
    assert by["b"][5].startswith("0 of 10 false claims (") and by["y"][5] == "—"
    assert by["y"][6] == "—", "no call: nothing answered, not a prior of 50%"
    assert by["y"][-1] == "unrated" and by["b"][-1] in ("rated", "learning")

    drawn = bars(page.text)
    assert set(drawn) == {"a", "b", "x", "y"}
    a_low, a_high, a_mean = drawn["a"]
    b_low, b_high, b_mean = drawn["b"]
    assert a_low < a_mean < a_high and b_low < b_mean < b_high
    assert a_high < b_low, "a's interval lies wholly below b's, as the verdicts say"
    assert drawn["y"][1] - drawn["y"][0] > b_high - b_low, "never judged: the widest bar"
    assert re.search(r'<svg [^>]*aria-hidden="true"[^>]*class="rating-chart"', page.text), "the table is the text"

    # the shape filter: judged on general, so on review each verdict counts half and the bars widen
    review = bars(api.get("/ratings", params={"collection": "core", "shape": "review"}).text)
    assert review["b"][1] - review["b"][0] > b_high - b_low
    everywhere = table_rows(api.get("/ratings").text)
    assert {a for a, _ in everywhere} == {"a", "b", "x", "y"} and all(c[1] == "—" for _, c in everywhere)
    unknown = api.get("/ratings", params={"collection": "nope"}).text
    assert "No collection named nope" in unknown

    # the Collections roster: each member's rating with its interval
    roster = api.get("/collections").text
    core = re.search(r'<section class="card" aria-labelledby="c-core-h">(.*?)</section>', roster, re.S)
    assert core
    cells = {alias: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell)).strip() for alias, cell in re.findall(
        r'<th scope="row">(\w+)</th>.*?<td class="rating-cell">(.*?)</td>', core.group(1), re.S)}
    assert cells["b"].startswith(f"79% ({by['b'][3]}, 10 judged answers)")
    assert cells["a"].startswith(f"29% ({by['a'][3]}, 10 judged answers)"), "the interval beside its evidence"
    assert 'href="/ratings?collection=core"' in core.group(1)

    # At a glance: each model's rating over every collection and shape in the roster
    glance = api.get("/").text
    shown = {alias: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell)).strip() for alias, cell in re.findall(
        r'<tr [^>]*data-alias="(\w+)">.*?<td class="rating-cell">(.*?)</td>', glance, re.S)}
    assert shown["b"].startswith("79% (") and shown["x"].startswith("77% (") and shown["y"] == "—"


def test_a_suggestion_is_in_action_needed_and_accept_changes_the_collection(api: httpx.Client,
                                                                           settings: Settings) -> None:
    in_store(settings, known_verdicts)
    assert "Suggestions" not in banner(api.get("/").text), "no review yet: nothing suggested"

    async def review(db: Database) -> list[rating_store.SuggestionRow]:
        return (await learning.review(db, await collection_store.get(db, "core"))).open
    [s] = in_store(settings, review)
    assert (s.kind, s.alias, s.replaces) == ("promote", "x", "a")

    for path in ("/", "/collections", "/ratings"):
        shown = banner(api.get(path).text)
        assert "Suggestions" in shown and "<strong>x</strong>" in shown, path
    item = re.search(r'<ul class="attention-list" data-source="suggestions".*?</ul>', shown, re.S)
    assert item
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", item.group(0)))
    assert "promote into bench/core in place of a" in text
    assert "probably better (P = 1.00)" in text
    assert re.search(r"x 77% useful \(5\d–9\d%, 9 verdicts\); a 29% useful \(1\d–5\d%, 10 verdicts\)", text), text
    assert [f["body"] for f in forms(item.group(0)) if f["label"] == "Accept"] == [{"id": s.id}]

    done = press(api, item.group(0), "Accept")
    assert done.status_code == 200 and done.json()["members"] == ["x", "b"]
    assert in_store(settings, lambda db: collection_store.get(db, "core")).members == ("x", "b")
    assert "Suggestions" not in banner(api.get("/").text), "accepted: the suggestion is gone"
    [change] = in_store(settings, lambda db: rating_store.member_changes(db, "core"))
    assert change["suggestion"] == s.id and change["by"] == "user"
    roster = api.get("/ratings", params={"collection": "core"}).text
    assert [a for a, c in table_rows(roster) if c[1] == "member"] == ["b", "x"]


def test_a_suggestion_raised_or_decided_is_a_live_event(api: httpx.Client, settings: Settings) -> None:
    in_store(settings, known_verdicts)
    last = in_store(settings, lambda db: event_store.after(db, 0, 100_000))[-1].id

    async def review(db: Database) -> None:
        await learning.review(db, await collection_store.get(db, "core"))
    in_store(settings, review)
    raised = [e for e in in_store(settings, lambda db: event_store.after(db, last)) if e.kind == "suggestion"]
    assert [(e.subject, e.ref) for e in raised] == [("core", "open")]
    [s] = in_store(settings, lambda db: rating_store.suggestions(db))
    press(api, banner(api.get("/").text), "Accept")
    decided = [e for e in in_store(settings, lambda db: event_store.after(db, raised[-1].id)) if e.kind == "suggestion"]
    assert [(e.subject, e.ref) for e in decided] == [("core", "accepted")]
    assert s.state == "open"
    live = re.search(r'data-live="([^"]*)"', api.get("/collections").text)
    assert live and "suggestion" in live.group(1).split(), "every page listens for suggestions"


def test_a_confidently_wrong_member_is_offered_for_the_bench(api: httpx.Client, settings: Settings) -> None:
    async def wrong(db: Database) -> list[rating_store.SuggestionRow]:
        await make_bench(db, ["a", "b"], {"core": ["a", "b"]})
        await judge(db, "a", 1, 9, wrong=8, label="member")
        await judge(db, "b", 5, 5, label="member")
        return (await learning.review(db, await collection_store.get(db, "core"))).open
    [s] = in_store(settings, wrong)
    shown = banner(api.get("/collections").text)
    item = re.search(r'<li data-subject="a">(.*?)</li>', shown, re.S)
    assert item
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", item.group(1)))
    assert "bench it from bench/core: confidently wrong" in text and "Its rating: 22% useful (7–41%, 10 verdicts)" in text, text
    assert press(api, item.group(1), "Accept").json()["members"] == ["b"]
    assert in_store(settings, lambda db: collection_store.get(db, "core")).members == ("b",)
    assert s.kind == "bench" and "<li data-subject" not in banner(api.get("/").text)
