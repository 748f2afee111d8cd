"""A bench that looks lived in, for the dashboard's layout tests: many simulated models with long
names (some failing, one gone, one resting, one retired), collections in every reply mode, panels
and route conversations with verdicts (false claims too), probes, a gateway key, a limit, a
scheduler run, an onboarding item and a suite run: every page's tables have rows. Everything goes
through the running server's own API (no store shortcuts), so what a page shows is what a user
would see."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.suite.test_seed import make_repo

ENDPOINT = "simulated-on-a-long-endpoint-nam"  # 32 characters, the most a name may have
LONG = "an-unusually-long-served-model-name-that-a-phone-must-not-scroll-for"
PERSONAS = ("sage", "quill", "lark", "mole", "ferret", "otter", "heron", "badger", "wren", "vole", "stoat", "finch",
            "marten", "plover", "shrike", "tern", "kestrel", "linnet")
FAILING = "simulated/broken-" + LONG + "?fail=500"
GONE = "simulated/vanished-" + LONG + "?fail=404"
RESTING = "simulated/throttled-" + LONG + "?fail=429"
EMPTY = "simulated/silent-" + LONG + "?fail=empty"


def _ok(reply: httpx.Response, *codes: int) -> dict:
    assert reply.status_code in (codes or (200, 201, 202)), reply.text
    return reply.json() if reply.content else {}


def _register(api: httpx.Client, served: str, **extra: object) -> str:
    """Registered under a long alias of its own (an alias holds at most 64 characters)."""
    alias = served.split("/", 1)[1].split("?", 1)[0][:64].rstrip("-")
    body = {"served": served, "endpoint": ENDPOINT, "alias": alias, **extra}
    return str(_ok(api.post("/api/model/register", json=body))["model"]["alias"])


def _ask(api: httpx.Client, collection: str, n: int, false_claims: bool = False) -> list[str]:
    calls = []
    for i in range(n):
        reply = _ok(api.post("/v1/chat/completions", json={"model": f"bench/{collection}", "messages": [
            {"role": "user", "content": f"Where can refresh() return a stale value? ({i})"}]}))
        for j, seat in enumerate(reply["bench"]["seats"]):
            if seat["status"] in ("ok", "empty") and (i + j) % 2 == 0:
                verdict = {"call": seat["call"], "useful": j % 3 != 2}
                if false_claims and j == 1:
                    verdict["false"] = ["the SQL injection in a function that runs no SQL"]
                _ok(api.post("/bench/verdict", json=verdict))
            calls.append(seat["call"])
    return calls


def _suite(api: httpx.Client, repo: Path) -> None:
    """Two scripted models asked a planted bug and its control (the Benchmarks page's tables)."""
    for alias, say in (("scripted-no-fault-" + LONG[:30], "no-fault"), ("scripted-line-one-" + LONG[:30], "line1")):
        _register(api, f"simulated/judge?say={say}", alias=alias[:64])
    aliases = [m["alias"] for m in api.get("/api/models").json()["models"] if m["alias"].startswith("scripted-")]
    _ok(api.post("/api/suite/repos", json={"name": "app", "path": str(repo)}))
    created = _ok(api.post("/api/suite/seed", json={"repo": "app", "count": 2, "seed": 5}))["created"]
    bug = next(c for c in created if c["kind"] == "bug")
    for task in (bug["id"], bug["pair"]):
        _ok(api.post("/api/suite/promote", json={"id": task}))
    run = _ok(api.post("/api/suite/run", json={"models": aliases, "tasks": [bug["id"], bug["pair"]], "gap": 0,
                                               "timeout": 5}))["run"]["id"]
    deadline = time.monotonic() + 180
    while api.get("/api/suite/run", params={"id": run}).json()["run"]["state"] == "running":
        assert time.monotonic() < deadline, "the suite run did not end"
        time.sleep(0.1)


def lived_in(base: str, tmp: Path) -> dict[str, str]:
    """Fill the server at ``base``; returns the aliases of the failing (its health check had no
    answer), broken (a 500), gone, resting and retired models."""
    with httpx.Client(base_url=base, timeout=120) as api:
        _ok(api.post("/api/endpoint", json={"name": ENDPOINT, "api": "simulated"}))
        aliases = [_register(api, f"simulated/{p}-{LONG}?latency=0.01", role="code" if i % 4 == 0 else "general")
                   for i, p in enumerate(PERSONAS)]
        failing, gone, resting, silent = (_register(api, s) for s in (FAILING, GONE, RESTING, EMPTY))
        retired = aliases[-1]
        _ok(api.post("/api/collection", json={"name": "core-review-for-long-pull-reques", "members": aliases[:3],
                                              "description": "code review of long pull requests " * 3,
                                              "tags": ["review", "second-opinion"]}))
        _ok(api.post("/api/collection", json={"name": "merged-answers", "members": aliases[3:6], "reply": "merged"}))
        _ok(api.post("/api/collection", json={"name": "routed", "members": [aliases[6], aliases[7]], "reply": "route"}))
        _ok(api.post("/api/collection", json={"name": "shaky", "members": [gone, aliases[8]]}))
        _ask(api, "core-review-for-long-pull-reques", 3, false_claims=True)
        _ask(api, "merged-answers", 1)
        _ask(api, "shaky", 1)  # the gone member's 404: pending retirement, an alert in Action needed
        for n in range(2):
            _ok(api.post("/v1/chat/completions", json={"model": "bench/routed", "messages": [
                {"role": "user", "content": f"route turn {n}"}]}))
        for alias in (aliases[0], aliases[1], silent, failing, resting):
            _ok(api.post("/api/probe", json={"alias": alias}))
        _ok(api.post("/api/probe", json={"alias": aliases[0], "kind": "speed"}))
        _ok(api.post("/api/model/retire", json={"alias": retired, "reason": "confidently wrong on long reviews"}))
        _ok(api.post("/api/gateway-key", json={"name": "phone-app-with-a-long-key-name", "rpm": 60}))
        _ok(api.post("/api/limits", json={"connection": ENDPOINT, "rpm": 120}))
        _ok(api.post("/api/scheduler/run", json={"job": "availability"}))
        _ok(api.post("/api/onboarding", json={"items": [{"served": f"simulated/newcomer-{LONG}", "endpoint": ENDPOINT,
                                                          "mode": "quick"}]}))
        _suite(api, make_repo(tmp / "repo"))
    return {"failing": silent, "broken": failing, "gone": gone, "resting": resting, "retired": retired}
