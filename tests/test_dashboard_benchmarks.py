"""The Benchmarks page and the roster's Suite column, after a real suite run on scripted models:
who to trust (recall against confidently wrong, with intervals) as a plot and its table, the bug
hunt per model as bars and their table, the task x model heat map of the user's own code (a
table whose cells carry their class; ``?matrix=all`` every task), each figure the same as
``GET /api/suite/board`` and ``/api/suite/scores`` give."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.suite.test_runner import pack_tasks
from tests.suite.test_seed import make_repo

MODELS = {"no-fault": "simulated/judge?say=no-fault", "line-one": "simulated/judge?say=line1",
          "brief": "simulated/judge?say=short"}


def ok(reply: httpx.Response, status: int = 200) -> Any:
    assert reply.status_code == status, reply.text
    return reply.json()


def section(html: str, ident: str) -> str:
    return html.split(f'id="{ident}"', 1)[1].split("</section>", 1)[0]


def row(html: str, attr: str, value: str) -> str:
    return html.split(f'<tr {attr}="{value}"', 1)[1].split("</tr>", 1)[0]


@pytest.fixture
def scored(api: httpx.Client, tmp_path: Path) -> dict[str, Any]:
    """Three scripted models asked a seeded pair from the user's repository and a pack pair."""
    ok(api.post("/api/endpoint", json={"name": "sim", "api": "simulated"}), 201)
    for alias, served in MODELS.items():
        ok(api.post("/api/model/register", json={"served": served, "endpoint": "sim", "alias": alias}), 201)
    ok(api.post("/api/suite/repos", json={"name": "app", "path": str(make_repo(tmp_path / "repo"))}))
    created = ok(api.post("/api/suite/seed", json={"repo": "app", "count": 2, "seed": 5}))["created"]
    bug = next(c for c in created if c["kind"] == "bug")
    for task in (bug["id"], bug["pair"]):
        ok(api.post("/api/suite/promote", json={"id": task}))
    pack = pack_tasks()
    tasks = [bug["id"], bug["pair"], pack["bug"], pack["control"]]
    run = ok(api.post("/api/suite/run", json={"models": list(MODELS), "tasks": tasks, "gap": 0, "timeout": 5}))
    deadline = time.monotonic() + 120
    while ok(api.get("/api/suite/run", params={"id": run["run"]["id"]}))["run"]["state"] == "running":
        assert time.monotonic() < deadline, "the suite run did not end"
        time.sleep(0.05)
    return {"bug": bug["id"], "control": bug["pair"], "pack": pack, "board": ok(api.get("/api/suite/board"))}


def test_an_empty_bench_says_how_to_run_the_suite(api: httpx.Client) -> None:
    html = api.get("/benchmarks").text
    assert "No suite answers yet" in html and "bench suite run --next-free" in html
    assert "No tasks from your code yet" in html and "<svg" not in html


def test_who_to_trust_and_the_bug_hunt_match_the_board(api: httpx.Client, scored: dict[str, Any]) -> None:
    html = api.get("/benchmarks").text
    board = scored["board"]
    trust = section(html, "trust")
    assert [m["alias"] for m in board["trust"]] == re.findall(r'<tr data-alias="([^"]+)"', trust)
    one = next(m for m in board["trust"] if m["alias"] == "line-one")
    line = row(trust, "data-alias", "line-one")
    low, high = one["confidently_wrong_interval"]
    assert f"{100 * one['confidently_wrong']:.0f}%" in line and f"{one['wrong']} of {one['opportunities']}" in line
    assert f"{100 * low:.0f}–{100 * high:.0f}%" in line
    assert "0%" in line and f"of {one['recall_n']}" in line  # it names line 1: never the planted line
    # a dot per model with both figures; the brief one never scored, so it is in neither
    plotted = [m for m in board["trust"] if m["recall"] is not None and m["confidently_wrong"] is not None]
    assert trust.count("<circle") == len(plotted) and ">brief</text>" not in trust
    brief = re.findall(r'<td class="num">(\d+)</td>', row(trust, "data-alias", "brief"))
    assert brief == ["0", "4"]  # no task scored; four answers, not one a score
    assert 'aria-hidden="true"' in trust.split("<svg", 1)[1].split(">", 1)[0]  # the table is what is read

    hunt = section(html, "hunt")
    for m in board["bug_hunt"]:
        cells = re.findall(r'<td class="num">(\d+)</td>', row(hunt, "data-alias", m["alias"]))
        assert [int(c) for c in cells] == [m["found"], m["wrong_line"], m["missed"], m["clean"], m["false_alarm"],
                                           m["not_a_score"]]
    nofault = next(m for m in board["bug_hunt"] if m["alias"] == "no-fault")
    assert (nofault["clean"], nofault["missed"]) == (2, 2)
    bars = hunt.split('<text class="label"', 1)[1]
    assert bars.count('class="bar clean"') == 1 and bars.count('class="bar missed"') == 1  # no-fault's
    assert bars.count('class="bar wrong_line"') == 1 and bars.count('class="bar false_alarm"') == 1  # line-one's


def test_the_heat_map_is_the_users_own_code(api: httpx.Client, scored: dict[str, Any]) -> None:
    html = api.get("/benchmarks").text
    heat = section(html, "our-code")
    assert re.findall(r'<tr data-task="([^"]+)"', heat) == sorted((scored["bug"], scored["control"]))
    columns = heat.split("<thead>", 1)[1].split("</thead>", 1)[0]
    assert re.findall(r'<th scope="col">([^<]+)</th>', columns)[1:] == sorted(MODELS)
    control, bug = row(heat, "data-task", scored["control"]), row(heat, "data-task", scored["bug"])
    assert '<td class="heat-4" data-alias="no-fault">1/1<br><span class="latest">clean</span>' in control
    assert '<td class="heat-0" data-alias="no-fault">0/1<br><span class="latest">missed</span>' in bug
    assert '<td class="heat-0" data-alias="line-one">0/1<br><span class="latest">false alarm</span>' in control
    assert re.search(r'<td class="heat-nas" data-alias="brief">no score<br><span class="latest">not a score: [^<]+',
                     bug)
    assert scored["pack"]["bug"] not in heat

    every = section(api.get("/benchmarks", params={"matrix": "all"}).text, "our-code")
    tasks = re.findall(r'<tr data-task="([^"]+)"', every)
    assert tasks == sorted(scored["board"]["tasks"][t]["id"] for t in tasks)
    assert {scored["pack"]["bug"], scored["pack"]["control"], scored["bug"]} <= set(tasks)
    assert '<a href="/benchmarks?matrix=all" aria-current="page">' in every


def test_the_roster_shows_each_models_suite_recall(api: httpx.Client, scored: dict[str, Any]) -> None:
    scores = {m["alias"]: m for m in ok(api.get("/api/suite/scores"))["models"]}
    roster = api.get("/").text.split('id="roster"', 1)[1].split("</table>", 1)[0]
    assert '<th scope="col">Suite</th>' in roster

    def line(alias: str) -> str:
        return roster.split(f'data-alias="{alias}">', 1)[1].split("</tr>", 1)[0]

    for alias in ("no-fault", "line-one"):
        s = scores[alias]
        low, high = s["recall_interval"]
        assert f"{s['found']}/{s['recall_n']}" in line(alias)
        assert f"found {s['found']} of {s['recall_n']} in the suite" in line(alias)
        assert f"{round(100 * s['recall'])}% ({round(100 * low)}–{round(100 * high)}%)" in line(alias)
    assert "no bug found or missed yet" in line("brief")  # answered, never a score
    ok(api.post("/api/model/register", json={"served": "simulated/sage", "endpoint": "sim", "alias": "fresh"}), 201)
    assert "not run" in api.get("/").text.split('data-alias="fresh">', 1)[1].split("</tr>", 1)[0]
