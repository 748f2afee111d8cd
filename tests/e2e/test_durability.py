"""Issue 2: a restart, or a crash, keeps every panel, seat and verdict that was acknowledged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import anyio
import httpx
import openai
import pytest

from benchwarmers_mcp.store import summary, verdicts
from tests.kits.seed import seed
from tests.kits.servers import free_port, server_env, spawn_server, wait_healthy
from tests.kits.store import store_of
from tests.kits.waits import ANSWER

pytestmark = pytest.mark.e2e


async def _counts(home):
    async with store_of(home) as db:
        counts = await summary.counts(db)
        return counts["panels"], counts["calls"], len(await verdicts.log(db))


def test_restart_and_crash_keep_every_record(home, upstream):
    seed(home, base_url=upstream, served=["one", "two"], collections={"core": ["one", "two"]})
    with spawn_server(home) as base:
        sdk = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0)
        first = sdk.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "a"}])
        calls = [s["call"] for s in first.model_extra["bench"]["seats"]]
        assert httpx.post(base + "/bench/verdict", json={"call": calls[0], "useful": True}, timeout=ANSWER).status_code == 200

    # a graceful restart
    with spawn_server(home) as base:
        assert httpx.post(base + "/bench/pending", json={"calls": calls}, timeout=ANSWER).json() == {"pending": calls[1:]}
        record = httpx.get(base + "/bench/record", params={"collection": "bench/core"}, timeout=ANSWER).json()
        assert record["aliases"]["one"]["useful"] == 1

    # a crash: SIGKILL right after an acknowledged verdict
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchwarmers_mcp", "serve"], env=server_env(home, port),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, proc)
        sdk = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0)
        second = sdk.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "b"}])
        call = second.model_extra["bench"]["seats"][1]["call"]
        assert httpx.post(base + "/bench/verdict", json={"call": call, "useful": False}, timeout=ANSWER).status_code == 200
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert anyio.run(_counts, home) == (2, 4, 2)
