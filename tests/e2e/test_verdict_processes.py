"""The same verdict sent at once through two server processes on one data folder writes one line."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.store import Database, verdicts
from tests.kits.mcp import seed_bench
from tests.kits.servers import spawn_server

ASK = {"model": "bench/core", "messages": [{"role": "user", "content": "Where can this go stale?"}]}


async def log_of(home: Path) -> list[verdicts.VerdictLine]:
    async with Database(home / "benchwarmers.db") as db:
        return await verdicts.log(db)


@pytest.mark.e2e
def test_concurrent_identical_verdicts_through_two_processes_write_one_line(home: Path) -> None:
    seed_bench(home)
    with spawn_server(home) as a, spawn_server(home) as b:
        call = httpx.post(a + "/v1/chat/completions", json=ASK, timeout=60).json()["bench"]["seats"][0]["call"]
        verdict = {"call": call, "useful": False, "note": "wrong about the lock"}

        def send(base: str) -> bool:
            with httpx.Client(base_url=base, timeout=60) as http:
                return [http.post("/bench/verdict", json=verdict).json()["written"] for _ in range(10)].count(True)

        with ThreadPoolExecutor(8) as pool:
            written = sum(pool.map(send, [a, b] * 4))
    assert written == 1
    lines = anyio.run(log_of, home)
    assert [(line.verdict.call, line.verdict.note) for line in lines] == [(call, "wrong about the lock")]


