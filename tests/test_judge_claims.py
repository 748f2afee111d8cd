"""Verdicts that mean what they say and claims judged once (issue 30), over ``/bench`` on both
backends: a new verdict replaces the last one whole (so a verdict changed from not useful to useful
keeps no old false claims) and the change is kept as history; a claim two seats made, marked false
once, is recorded on both seats in their own words and moves both models' ratings; claim marks ride
on a verdict too; an errored seat cannot be judged useful; the panel page's data (one panel, with
its claims and their judgements), and its 404 and 403."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.context import Access
from benchwarmers_mcp.engine import judging
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, calls, events, migrations, panels, verdicts
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.verdicts import Mark, Verdict
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.gateway import serve_gateway
from tests.kits.judging import (
    ANSWERS,
    PROMPT,
    ask,
    lines_of,
    panel_evidence,
    seat_calls,
    seed_judging,
    shared_group,
    wrong_counts,
)
from tests.kits.loopback import Loopback
from tests.kits.store import store_of

pytestmark = pytest.mark.backends


@pytest.fixture
def bench(home: Path, upstream: str, fake: FakeUpstream) -> Path:
    seed_judging(home, upstream, fake, broken="broken?fail=500")
    return home


def panel_of(http: httpx.Client, base: str, panel: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return http.get(f"{base}/bench/panels/{panel}", headers=headers or {})


def test_a_new_verdict_replaces_the_last_one_whole(bench: Path, gateway: str, http: httpx.Client) -> None:
    call = seat_calls(ask(http, gateway))["alpha"]
    first = {"call": call, "useful": False, "note": "wrong file", "real": ["the cache is stale"],
             "false": ["the SQL is injectable"]}
    assert http.post(gateway + "/bench/verdict", json=first).json()["written"] is True
    changed = http.post(gateway + "/bench/verdict", json={"call": call, "useful": True})
    assert changed.status_code == 200 and changed.json()["written"] is True
    assert changed.json()["recorded"]["false"] == [] and changed.json()["recorded"]["note"] == ""
    lines = lines_of(bench, call)
    assert [(v.verdict.useful, v.verdict.note, v.verdict.real, v.verdict.false) for v in lines] == [
        (False, "wrong file", ("the cache is stale",), ("the SQL is injectable",)), (True, "", (), ())]
    # the same verdict again writes nothing; the panel shows the latest and the whole history
    assert http.post(gateway + "/bench/verdict", json={"call": call, "useful": True}).json()["written"] is False
    seat = next(s for s in panel_of(http, gateway, call.split(".")[0]).json()["seats"] if s["call"] == call)
    assert (seat["verdict"]["useful"], seat["verdict"]["false"], seat["owed"]) == (True, [], False)
    assert [line["useful"] for line in seat["history"]] == [False, True]
    assert seat["history"][0]["false"] == ["the SQL is injectable"]


def test_a_claim_two_seats_made_marked_false_once_is_recorded_on_both(bench: Path, gateway: str,
                                                                       http: httpx.Client) -> None:
    bench_field = ask(http, gateway)
    calls, panel = seat_calls(bench_field), bench_field["panel"]
    useful = {"call": calls["alpha"], "useful": True, "note": "read it", "real": ["checked by hand"]}
    assert http.post(gateway + "/bench/verdict", json=useful).json()["written"] is True
    assert wrong_counts(http, gateway) == {"alpha": 0, "beta": 0, "gamma": 0, "broken": 0}

    group = shared_group(panel_of(http, gateway, panel).json())
    assert set(group["seats"]) == {"member1", "member2"} and group["judgement"] is None
    marked = http.post(gateway + "/bench/claims", json={"panel": panel, "claim": group["id"], "judgement": "false"})
    assert marked.status_code == 200, marked.text
    assert sorted(marked.json()["written"]) == sorted([calls["alpha"], calls["beta"]])
    assert marked.json()["claim"]["judgement"] == "false"

    wording = {c["call"]: c["text"] for c in group["claims"]}
    alpha, beta = lines_of(bench, calls["alpha"])[-1].verdict, lines_of(bench, calls["beta"])[-1].verdict
    # each seat's own words; alpha keeps its useful, note and real claim, beta (never judged) no useful
    assert (alpha.useful, alpha.note, alpha.real, alpha.false) == (True, "read it", ("checked by hand",),
                                                                  (wording[calls["alpha"]],))
    assert (beta.useful, beta.false) == (None, (wording[calls["beta"]],))
    assert wording[calls["alpha"]] != wording[calls["beta"]]
    assert lines_of(bench, calls["gamma"]) == []
    assert wrong_counts(http, gateway) == {"alpha": 1, "beta": 1, "gamma": 0, "broken": 0}
    evidence = panel_evidence(http, gateway)  # a mark alone says nothing of useful: neither good nor bad
    assert (evidence["alpha"]["good"], evidence["alpha"]["bad"]) == (1, 0)
    assert (evidence["beta"]["good"], evidence["beta"]["bad"], evidence["beta"]["wrong"]) == (0, 0, 1)

    after = panel_of(http, gateway, panel).json()
    assert shared_group(after)["judgement"] == "false"
    owed = {s["alias"]: s["owed"] for s in after["seats"]}
    assert owed == {"alpha": False, "beta": True, "gamma": True, "broken": False}  # marks alone are no verdict

    # marked again the same way: nothing written; marked none: off both lists, on both seats
    again = http.post(gateway + "/bench/claims", json={"panel": panel, "claim": group["id"], "judgement": "false"})
    assert again.json()["written"] == []
    cleared = http.post(gateway + "/bench/claims", json={"panel": panel, "claim": group["id"], "judgement": "none"})
    assert sorted(cleared.json()["written"]) == sorted([calls["alpha"], calls["beta"]])
    assert lines_of(bench, calls["beta"])[-1].verdict.false == ()
    assert wrong_counts(http, gateway) == {"alpha": 0, "beta": 0, "gamma": 0, "broken": 0}


def test_a_verdict_marks_claims_on_every_seat_that_made_them(bench: Path, gateway: str, http: httpx.Client) -> None:
    bench_field = ask(http, gateway)
    calls, panel = seat_calls(bench_field), bench_field["panel"]
    group = shared_group(panel_of(http, gateway, panel).json())
    sent = http.post(gateway + "/bench/verdict", json={"call": calls["beta"], "useful": True,
                                                        "claims": [{"id": group["id"], "judgement": "real"}]})
    assert sent.status_code == 200, sent.text
    wording = {c["call"]: c["text"] for c in group["claims"]}
    assert sent.json()["recorded"]["real"] == [wording[calls["beta"]]]
    alpha = lines_of(bench, calls["alpha"])[-1].verdict
    assert (alpha.useful, alpha.real) == (None, (wording[calls["alpha"]],))
    assert shared_group(panel_of(http, gateway, panel).json())["judgement"] == "real"
    # the lone claims: one seat each, still unmarked, and alpha's mark does not reach gamma
    lone = [g for g in panel_of(http, gateway, panel).json()["claims"] if len(g["seats"]) == 1]
    assert len(lone) == 3 and {g["judgement"] for g in lone} == {None}

    unknown = http.post(gateway + "/bench/verdict", json={"call": calls["beta"], "useful": True,
                                                           "claims": [{"id": "nosuchclaim", "judgement": "real"}]})
    assert unknown.status_code == 400 and "no claim 'nosuchclaim'" in unknown.json()["error"]["message"]
    wrong = http.post(gateway + "/bench/claims", json={"panel": panel, "claim": group["id"], "judgement": "maybe"})
    assert wrong.status_code == 400


def test_an_errored_seat_cannot_be_judged_useful(bench: Path, gateway: str, http: httpx.Client) -> None:
    body = http.post(gateway + "/api/collection", json={"name": "mixed", "members": ["alpha", "broken"]})
    assert body.status_code == 201, body.text
    calls = seat_calls(ask(http, gateway, "mixed"))
    refused = http.post(gateway + "/bench/verdict", json={"call": calls["broken"], "useful": True})
    assert refused.status_code == 400
    assert "cannot be judged useful" in refused.json()["error"]["message"]
    assert lines_of(bench, calls["broken"]) == []
    assert http.post(gateway + "/bench/verdict", json={"call": calls["broken"], "useful": False}).status_code == 200
    listed = http.get(gateway + "/bench/panels", params={"collection": "mixed"}).json()["panels"][0]
    owed = {s["alias"]: s["owed"] for s in listed["seats"]}
    assert (owed["alpha"], owed["broken"]) == (True, False)


def test_one_panel_with_its_texts_and_claims(bench: Path, gateway: str, http: httpx.Client) -> None:
    bench_field = ask(http, gateway)
    panel = panel_of(http, gateway, bench_field["panel"])
    assert panel.status_code == 200
    body = panel.json()
    assert body["panel"]["prompt"] == PROMPT and body["panel"]["collection"] == "bench/core"
    assert body["panel"]["source"] == "gateway" and body["panel"]["owed"] == 3
    assert {s["alias"]: s["answer"] for s in body["seats"]} == {**ANSWERS, "broken": ""}
    assert next(s for s in body["seats"] if s["alias"] == "broken")["status"] == "error"
    assert sum(len(g["claims"]) for g in body["claims"]) == 5 and body["merged"] is None
    # the same answers give the same groups, ids included
    assert panel_of(http, gateway, bench_field["panel"]).json()["claims"] == body["claims"]
    assert panel_of(http, gateway, "p20000101-000000-abcd").status_code == 404


def test_a_scoped_key_reads_and_marks_only_its_own_panels(home: Path, upstream: str, fake: FakeUpstream,
                                                          settings: Settings, net: Loopback, http: httpx.Client) -> None:
    seed_judging(home, upstream, fake)

    async def make() -> dict[str, str]:
        async with Database(settings.store_target) as db:
            return {name: (await gateway_keys.create(db, f"{name}-key", scope))[1]
                    for name, scope in (("core", ["core"]), ("other", ["other"]))}

    keys = anyio.run(make)
    base = serve_gateway(net, settings, require_keys=True)
    core = {"Authorization": f"Bearer {keys['core']}"}
    other = {"Authorization": f"Bearer {keys['other']}"}
    panel = ask(http, base, "core", core)["panel"]
    refused = panel_of(http, base, panel, other)
    assert refused.status_code == 403
    assert "other-key" in refused.json()["error"]["message"] and "bench/core" not in refused.json()["error"]["message"]
    marked = http.post(base + "/bench/claims", headers=other, json={"panel": panel, "claim": "x", "judgement": "real"})
    assert marked.status_code == 403
    assert panel_of(http, base, panel, core).status_code == 200
    assert http.get(base + "/bench/panels/" + panel, headers={}).status_code == 401


@pytest.mark.anyio
async def test_a_store_from_before_claim_marks_keeps_its_verdicts_and_knows_who_is_owed(home: Path) -> None:
    """The migration that lets a line leave ``useful`` out (a table rebuilt on SQLite) keeps every
    line, its id and the id sequence, fills in which seats are judged, and the live feed still hears
    verdicts."""
    everyone = Access.unscoped()
    with pytest.MonkeyPatch.context() as before:
        before.setattr(migrations, "MIGRATIONS",
                       [m for m in migrations.MIGRATIONS if m[0] != "judge_002_claim_marks_and_owed"])
        async with store_of(home) as db:
            await calls.create_panel(db, PanelRecord("p20260101-000000-aaaa", 1.0, "bench/core", "general", "x",
                                                     "all", "local", None, "prompt", []))
            for n, status in ((1, "ok"), (2, "ok"), (3, "ok"), (4, "error")):
                await calls.record_seat(db, SeatRecord(f"p20260101-000000-aaaa.member{n}", "p20260101-000000-aaaa",
                                                       f"member{n}", f"member {n}", "alpha", status, 1.0, "an answer"))
            first = "p20260101-000000-aaaa.member1"
            await verdicts.record(db, Verdict(first, True, "fine"), access=everyone)
            await verdicts.record(db, Verdict(first, False, "not fine", false=("x",)), access=everyone)
            await verdicts.record(db, Verdict("p20260101-000000-aaaa.member2", True), access=everyone)
            lines = await verdicts.log(db)
            seen = await events.head(db)
    async with store_of(home) as db:
        assert await verdicts.log(db) == lines
        calls_ = [f"p20260101-000000-aaaa.member{n}" for n in range(1, 5)]
        assert await verdicts.pending(db, calls_, access=everyone) == [calls_[2]]
        marked = await verdicts.mark(db, [Mark(calls_[2], ("an answer",), "false")], access=everyone)
        assert marked[calls_[2]][0].useful is None and marked[calls_[2]][1] is True
        assert await verdicts.pending(db, calls_, access=everyone) == [calls_[2]]  # a mark alone is no verdict
        assert [line.verdict.call for line in (await verdicts.log(db))[len(lines):]] == [calls_[2]]
        assert [e.subject for e in await events.after(db, seen) if e.kind == "verdict"] == [calls_[2]]
        await verdicts.record(db, Verdict(calls_[2], False), access=everyone)
        assert await verdicts.pending(db, calls_, access=everyone) == []


@pytest.mark.anyio
async def test_a_panels_texts_come_back_exactly_whatever_they_hold(home: Path) -> None:
    """A NUL or PostgreSQL's text mark (U+FDD0) in a prompt, an answer, an error or a note is read
    back as it was written, on the panel's page and in the list's preview (both backends)."""
    odd = "keep \x00 this \ufdd0 and \ufdd01 too"
    everyone = Access.unscoped()
    async with store_of(home) as db:
        await calls.create_panel(db, PanelRecord("p20260101-000000-beef", 1.0, "bench/core", "general", "x", "all",
                                                 "local", "system " + odd, "prompt " + odd, [], note="note " + odd))
        await calls.record_seat(db, SeatRecord("p20260101-000000-beef.member1", "p20260101-000000-beef", "member1",
                                               "member", "alpha", "ok", 1.0, "- `db.py:3` " + odd))
        await calls.record_seat(db, SeatRecord("p20260101-000000-beef.member2", "p20260101-000000-beef", "member2",
                                               "member", "beta", "error", 1.0, "", error="failed " + odd))
        view = await judging.panel_view(db, "p20260101-000000-beef", access=everyone)
        listed = await panels.listing(db, panels.PanelFilter(), access=everyone)
    assert (view["panel"]["prompt"], view["panel"]["system"], view["panel"]["note"]) == (
        "prompt " + odd, "system " + odd, "note " + odd)
    assert [(s["answer"], s["error"]) for s in view["seats"]] == [("- `db.py:3` " + odd, ""), ("", "failed " + odd)]
    assert odd in view["claims"][0]["text"]
    assert listed["panels"][0]["prompt_preview"] == panels.preview("prompt " + odd)


def test_the_dashboards_twins_serve_every_collection_and_mark_as_the_dashboard(
        home: Path, upstream: str, fake: FakeUpstream, settings: Settings, net: Loopback, http: httpx.Client) -> None:
    """``/api/panels``, ``/api/panels/{id}``, ``/api/inbox/count``, ``/api/claims`` and ``/api/verdict``
    with claims: the admin's (every collection, whatever keys exist), the same bodies as ``/bench``,
    the marks written under ``dashboard``; the gateway's routes want a gateway key there."""
    seed_judging(home, upstream, fake)
    token = "admin-token-for-the-judging-tests-42"

    async def make() -> str:
        async with Database(settings.store_target) as db:
            return (await gateway_keys.create(db, "core-key", ["core"]))[1]

    key = anyio.run(make)
    base = serve_gateway(net, settings, require_keys=True, admin_token=token)
    admin, scoped = {"Authorization": f"Bearer {token}"}, {"Authorization": f"Bearer {key}"}
    calls = seat_calls(ask(http, base, "core", scoped))
    listed = http.get(base + "/api/panels", headers=admin).json()
    assert listed == http.get(base + "/bench/panels", headers=scoped).json()  # core is all there is yet
    assert http.get(base + "/bench/panels", headers=admin).status_code == 401  # not a gateway key
    panel = listed["panels"][0]["id"]
    page = http.get(base + f"/api/panels/{panel}", headers=admin).json()
    assert page == http.get(base + f"/bench/panels/{panel}", headers=scoped).json()
    assert http.get(base + "/api/inbox/count", headers=admin).json() == {"owed": 3}

    group = shared_group(page)
    marked = http.post(base + "/api/claims", headers=admin, json={"panel": panel, "claim": group["id"],
                                                                   "judgement": "real"})
    assert marked.status_code == 200 and sorted(marked.json()["written"]) == sorted([calls["alpha"], calls["beta"]])
    sent = http.post(base + "/api/verdict", headers=admin, json={
        "call": calls["gamma"], "useful": True, "claims": [{"id": group["id"], "judgement": "false"}]})
    assert sent.status_code == 200, sent.text
    lines = {alias: lines_of(home, call) for alias, call in calls.items()}
    assert {line.key_name for ls in lines.values() for line in ls} == {"dashboard"}
    assert [len(lines[a]) for a in ("alpha", "beta", "gamma")] == [2, 2, 1]
    assert lines["alpha"][-1].verdict.false and not lines["alpha"][-1].verdict.real
    assert http.get(base + "/api/inbox/count", headers=admin).json() == {"owed": 2}
