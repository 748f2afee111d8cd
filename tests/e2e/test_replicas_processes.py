"""Three server processes on one store (issue 19): a hand-set upstream rpm holds across all three,
and a verdict written through one replica is in the record read through another. Runs on SQLite
(one data folder) and on PostgreSQL (the shared store replicas use)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from tests.kits.replicas import limit_fake, panels
from tests.kits.seed import seed
from tests.kits.servers import spawn_server

pytestmark = [pytest.mark.e2e, pytest.mark.backends]

RPM = 4


def test_three_replicas_share_one_rpm_and_one_record(home: Path, upstream: str, fake, store_backend: str) -> None:
    seed(home, base_url=upstream, served=["m1", "m2", "m3"], collections={"trio": ["m1", "m2", "m3"]})
    anyio.run(limit_fake, home, RPM)
    env = {"BENCH_SEAT_TIMEOUT": "5"}
    with spawn_server(home, **env) as one, spawn_server(home, **env) as two, spawn_server(home, **env) as three:
        assert len({one, two, three}) == 3
        seats = anyio.run(panels, [one, two, three], 2)
        assert len(seats) == 18
        assert fake.count() == RPM, f"together the three servers sent exactly the per-minute limit ({store_backend})"
        answered = [s for s in seats if s["status"] == "ok"]
        assert len(answered) == RPM

        judged = {s["call"]: i % 2 == 0 for i, s in enumerate(answered)}
        for call, useful in judged.items():  # each verdict through the first replica
            r = httpx.post(one + "/bench/verdict", json={"call": call, "useful": useful}, timeout=30)
            assert r.status_code == 200 and r.json()["written"] is True, r.text
        call, useful = next(iter(judged.items()))
        again = httpx.post(two + "/bench/verdict", json={"call": call, "useful": useful}, timeout=30)
        assert again.status_code == 200 and again.json()["written"] is False  # the second replica sees it
        record = httpx.get(three + "/bench/record", params={"collection": "bench/trio"}, timeout=30)
        assert record.status_code == 200, record.text
        counts = record.json()["aliases"]
        assert sum(a["useful"] for a in counts.values()) == sum(judged.values())
        assert sum(a["judged"] for a in counts.values()) == RPM  # read through the third replica
