"""Replicas: two Benchwarmers apps on one store (on PostgreSQL, what two replicas behind a load
balancer are; on SQLite, two processes on one data folder) share everything that matters. A
gateway key's rpm admits exactly N across both, a revocation through one refuses at once through
the other, a hand-set upstream rpm is never exceeded in the fake upstream's own count, and a
verdict recorded through one is read through the other."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store import ledger
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.cli import run_in_process
from tests.kits.gateway import gateway_serving, serve_gateway
from tests.kits.loopback import Loopback
from tests.kits.seed import seed
from tests.kits.store import store_of

PROMPT = [{"role": "user", "content": "check this"}]


def _no_explorers(home: Path) -> None:
    async def run() -> None:
        async with store_of(home) as db:
            await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=5, max_explorers=0))

    anyio.run(run)


def test_a_key_admits_exactly_its_rpm_across_two_replicas(settings: Settings, home: Path, net: Loopback) -> None:
    seed(home, base_url=None, api="simulated", endpoint="simulated", served={"alpha": "simulated/alpha"},
         collections={"core": ["alpha"]})
    one, two = serve_gateway(net, settings, require_keys=True), serve_gateway(net, settings, require_keys=True)
    with net.client() as http:
        made = http.post(one + "/api/gateway-key", json={"name": "team", "rpm": 5})
        assert made.status_code == 200, made.text
        key = made.json()["key"]

    async def ask_all() -> list[int]:
        codes: list[int] = []

        async def one_request(base: str) -> None:
            async with net.aclient() as client:
                r = await client.get(base + "/v1/models", headers={"authorization": f"Bearer {key}"})
                codes.append(r.status_code)

        async with anyio.create_task_group() as tg:
            for n in range(16):
                tg.start_soon(one_request, (one, two)[n % 2])
        return codes

    codes = anyio.run(ask_all)
    assert sorted(codes) == [200] * 5 + [429] * 11, "five in the minute, whichever replica took each"
    with net.client() as http:
        assert http.post(two + "/api/gateway-key/remove", json={"name": "team"}).json()["removed"] == "team"
        refused = http.get(one + "/v1/models", headers={"authorization": f"Bearer {key}"})
    assert refused.status_code == 401 and "unknown" in refused.text  # revoked through two, refused by one


def test_a_hand_set_upstream_rpm_holds_across_two_replicas(settings: Settings, home: Path, upstream: str,
                                                           fake: FakeUpstream, net: Loopback) -> None:
    rpm = 4
    seed(home, base_url=upstream, served=["m1", "m2", "m3"], collections={"trio": ["m1", "m2", "m3"]})
    _no_explorers(home)
    one, two = serve_gateway(net, settings, seat_timeout=5.0), serve_gateway(net, settings, seat_timeout=5.0)
    with net.client() as http:
        assert http.post(one + "/api/limits", json={"connection": "fake", "rpm": rpm}).status_code == 200

    async def panels() -> list[dict]:
        seats: list[dict] = []

        async def panel(base: str) -> None:
            async with net.aclient(timeout=60) as client:
                r = await client.post(base + "/v1/chat/completions", json={"model": "bench/trio", "messages": PROMPT})
                r.raise_for_status()
                seats.extend(r.json()["bench"]["seats"])

        async with anyio.create_task_group() as tg:
            for n in range(6):
                tg.start_soon(panel, (one, two)[n % 2])
        return seats

    seats = anyio.run(panels)
    assert len(seats) == 18
    assert fake.count() == rpm, "together the two replicas sent exactly the per-minute limit, no more"
    assert sorted(s["status"] for s in seats) == ["ok"] * rpm + ["rate_limited"] * (18 - rpm)

    async def usage() -> list[ledger.UsageRow]:
        async with store_of(home) as db:
            return await ledger.rows(db)

    assert sorted(r.status for r in anyio.run(usage)) == ["ok"] * rpm + ["refused"] * (18 - rpm)


def test_a_verdict_through_one_replica_is_read_through_the_other(settings: Settings, home: Path,
                                                                 net: Loopback) -> None:
    seed(home, base_url=None, api="simulated", endpoint="simulated", served={"alpha": "simulated/alpha"},
         collections={"core": ["alpha"]})
    one, two = serve_gateway(net, settings), serve_gateway(net, settings)
    with net.client() as http:
        asked = http.post(one + "/v1/chat/completions", json={"model": "bench/core", "messages": PROMPT})
        assert asked.status_code == 200, asked.text
        call = asked.json()["bench"]["seats"][0]["call"]
        said = http.post(two + "/bench/verdict", json={"call": call, "useful": False, "note": "wrong file"})
        assert said.status_code == 200, said.text
        record = http.get(one + "/bench/record", params={"collection": "bench/core"}).json()["aliases"]
    assert list(record) == ["alpha"]
    counts = record["alpha"]
    assert (counts["useful"], counts["notUseful"], counts["judged"]) == (0, 1, 1)


def test_status_names_the_store_and_counts_the_servers_on_it(settings: Settings, home: Path, net: Loopback,
                                                           store_backend: str) -> None:
    secret = "Sh0uld-never-show"
    if store_backend == "postgresql":  # the test cluster trusts loopback: a password is accepted and unused
        assert settings.database_url is not None
        settings = replace(settings, database_url=settings.database_url.replace("postgres@", f"postgres:{secret}@"))
    one = serve_gateway(net, settings)
    with net.client() as http:
        with gateway_serving(net, settings) as two:
            both = http.get(two + "/api/status")
            assert both.status_code == 200 and secret not in both.text
            status = both.json()
            assert len(status["replicas"]["recent"]) == 2
            assert status["replicas"]["this"] in {r["id"] for r in status["replicas"]["recent"]}
            printed = run_in_process(net, one, "status")
            assert printed.returncode == 0 and secret not in printed.stdout + printed.stderr
            assert "2 server(s) seen" in printed.stdout
        alone = http.get(one + "/api/status").json()  # the second stopped: its row left with it
    assert len(alone["replicas"]["recent"]) == 1
    store = status["store"]
    assert store["backend"] == store_backend
    if store_backend == "postgresql":
        assert store["url"].startswith("postgresql://postgres:***@127.0.0.1:") and store["version"].startswith("PostgreSQL")
        assert "PostgreSQL" in printed.stdout and "postgres:***@" in printed.stdout
    else:
        assert store["path"] == str(home / "benchwarmers.db") and store["version"].startswith("SQLite")
