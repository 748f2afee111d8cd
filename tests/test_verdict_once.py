"""The same verdict twice writes nothing, even when sent at once: many identical verdicts through the
HTTP API leave exactly one line in the verdict log (two processes: ``e2e/test_verdict_processes.py``). And an
admin token of whitespace is refused like a short one, while spaces around a good one are ignored."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.access.policy import startup_problems
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, verdicts
from tests.kits.mcp import seed_bench_async
from tests.kits.security import ADMIN_TOKEN, app_client, bearer

ASK = {"model": "bench/core", "messages": [{"role": "user", "content": "Where can this go stale?"}]}


async def log_of(home: Path) -> list[verdicts.VerdictLine]:
    async with Database(home / "benchwarmers.db") as db:
        return await verdicts.log(db)


@pytest.mark.anyio
async def test_concurrent_identical_verdicts_write_one_line(home: Path, settings: Settings) -> None:
    await seed_bench_async(home)
    async with app_client(settings) as client:
        panel = await client.post("/v1/chat/completions", json=ASK)
        call = panel.json()["bench"]["seats"][0]["call"]
        verdict = {"call": call, "useful": True, "note": "checked the cache", "real": ["refreshed late"]}
        answers: list[httpx.Response] = []

        async def send(body: dict[str, object]) -> None:
            answers.append(await client.post("/bench/verdict", json=body))

        async with anyio.create_task_group() as tg:
            for _ in range(40):
                tg.start_soon(send, verdict)
        # a changed verdict still writes, and then it too only once
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(send, {**verdict, "useful": False})

    assert {a.status_code for a in answers} == {200}
    assert sum(a.json()["written"] for a in answers) == 2
    lines = await log_of(home)
    assert [(line.verdict.call, line.verdict.useful) for line in lines] == [(call, True), (call, False)]


def test_an_admin_token_of_whitespace_is_refused_like_a_short_one(settings: Settings) -> None:
    for blank in (" " * 20, "\t" * 16 + "\n", " " * 8 + "short" + " " * 8):
        env_settings = Settings.from_env({"BENCHWARMERS_ADMIN_TOKEN": blank}, home=settings.home,
                                         config_dir=settings.config_dir)
        problems = startup_problems(env_settings)
        assert len(problems) == 1 and "shorter than 16" in problems[0], (blank, problems)
        for bind in ("127.0.0.1", "0.0.0.0"):
            direct = Settings(settings.home, settings.config_dir, bind=bind, admin_token=blank)
            assert any("shorter than 16" in p for p in startup_problems(direct)), (blank, bind)
    padded = Settings.from_env({"BENCHWARMERS_ADMIN_TOKEN": f"  {ADMIN_TOKEN}\n"}, home=settings.home,
                               config_dir=settings.config_dir)
    assert startup_problems(padded) == [] and padded.admin_token == ADMIN_TOKEN


@pytest.mark.anyio
async def test_spaces_around_the_admin_token_are_not_part_of_it(settings: Settings) -> None:
    async with app_client(settings, admin_token=f" {ADMIN_TOKEN}  ") as client:
        assert (await client.get("/api/status", headers=bearer(ADMIN_TOKEN))).status_code == 200
        assert (await client.get("/api/status", headers=bearer("wrong" + ADMIN_TOKEN))).status_code == 401
        login = await client.post("/login", json={"token": ADMIN_TOKEN})
        assert login.status_code == 200 and "bw_session" in login.cookies
