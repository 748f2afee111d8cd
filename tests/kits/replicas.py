"""Several server processes on one store: a connection limit set by hand, panels sent to each
server at once (``tests/e2e/test_limits_processes.py``, ``test_replicas_processes.py``), and for
the three-replica tests: the three servers, one ask through each client SDK, the scheduler made
due now, and a reader of the dashboard's event stream."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anthropic
import anyio
import httpx
import ollama
import openai
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from benchwarmers_mcp import scheduler as sched
from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store import limits as store
from benchwarmers_mcp.store import scheduler as sched_store
from tests.kits.servers import free_port, server_env, wait_healthy
from tests.kits.store import store_of
from tests.kits.waits import START


async def limit_fake(home: Path, rpm: int) -> None:
    """Panels of up to five members, no explorers, and ``rpm`` on the ``fake`` connection."""
    async with store_of(home) as db:
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=5, max_explorers=0))
        await store.set_limit(db, "connection", "fake", "rpm", rpm)


async def panels(bases: list[str], per_server: int, collection: str = "bench/trio") -> list[dict]:
    """``per_server`` panels of ``collection`` sent to every server at once; every seat they report."""
    seats: list[dict] = []

    async def one(base: str) -> None:
        async with httpx.AsyncClient(timeout=60) as http:
            reply = await http.post(base + "/v1/chat/completions", json={
                "model": collection, "messages": [{"role": "user", "content": "check this"}]})
            reply.raise_for_status()
            seats.extend(reply.json()["bench"]["seats"])

    async with anyio.create_task_group() as tg:
        for _ in range(per_server):
            for base in bases:
                tg.start_soon(one, base)
    return seats


@contextmanager
def three_servers(home: Path, **env: str) -> Iterator[list[str]]:
    """Three ``serve`` processes on ``home``'s store (its data folder or its PostgreSQL database),
    started side by side (``spawn_server`` starts one and waits for it), stopped on exit."""
    ports: list[int] = []
    while len(ports) < 3:
        port = free_port()
        ports += [] if port in ports else [port]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            with open(home.parent / f"server-{port}.log", "ab") as out:
                procs.append(subprocess.Popen([sys.executable, "-m", "benchwarmers_mcp", "serve"],
                                              env=server_env(home, port, **env), stdout=out,
                                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        for base, proc in zip(bases, procs, strict=True):
            wait_healthy(base, proc)
        yield bases
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=START)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- one ask through each client SDK (the gateway-key tests) --

@dataclass(frozen=True)
class Reply:
    """What one SDK made of one ask: the answer (``status`` 200), or the refusal as the SDK read it
    from the gateway's body in its own wire shape (``message`` and ``kind`` come out of that body:
    a body in another shape leaves them empty or wrong)."""

    dialect: str
    base: str
    status: int
    message: str
    kind: str = ""


QUESTION = "Where is the stale read in this cache?"
# how each SDK names a rate-limit refusal it read in its own wire shape
RATE_LIMITED = {"openai": "RateLimitError", "anthropic": "rate_limit_error", "gemini": "RESOURCE_EXHAUSTED",
                "ollama": "ResponseError"}
DIALECTS = tuple(RATE_LIMITED)


async def _openai(base: str, key: str, collection: str) -> Reply:
    async with openai.AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=60) as client:
        try:
            done = await client.chat.completions.create(
                model=collection, messages=[{"role": "user", "content": QUESTION}])
        except openai.APIStatusError as e:
            body = e.body if isinstance(e.body, dict) else {}
            return Reply("openai", base, e.status_code, str(body.get("message", "")), type(e).__name__)
    return Reply("openai", base, 200, done.choices[0].message.content or "")


async def _anthropic(base: str, key: str, collection: str) -> Reply:
    async with anthropic.AsyncAnthropic(base_url=base, api_key=key, max_retries=0, timeout=60) as client:
        try:
            done = await client.messages.create(model=collection, max_tokens=200,
                                                messages=[{"role": "user", "content": QUESTION}])
        except anthropic.APIStatusError as e:
            body = e.body if isinstance(e.body, dict) else {}
            error = body.get("error") if body.get("type") == "error" else None
            error = error if isinstance(error, dict) else {}
            return Reply("anthropic", base, e.status_code, str(error.get("message", "")), str(error.get("type", "")))
    return Reply("anthropic", base, 200, "".join(getattr(b, "text", "") for b in done.content))


async def _gemini(base: str, key: str, collection: str) -> Reply:
    options = genai_types.HttpOptions(base_url=base, timeout=60_000,
                                      retry_options=genai_types.HttpRetryOptions(attempts=1))
    async with genai.Client(api_key=key, http_options=options).aio as client:
        try:
            done = await client.models.generate_content(model=collection, contents=QUESTION)
        except genai_errors.APIError as e:
            return Reply("gemini", base, e.code, e.message or "", e.status or "")
    return Reply("gemini", base, 200, done.text or "")


async def _ollama(base: str, key: str, collection: str) -> Reply:
    async with ollama.AsyncClient(host=base, headers={"authorization": f"Bearer {key}"}, timeout=60) as client:
        try:
            done = await client.chat(model=collection, messages=[{"role": "user", "content": QUESTION}],
                                     stream=False)
        except ollama.ResponseError as e:
            message = e.error if isinstance(e.error, str) else ""  # a body in another shape is not a str here
            return Reply("ollama", base, e.status_code, message, type(e).__name__)
    return Reply("ollama", base, 200, done.message.content or "")


ASKERS = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini, "ollama": _ollama}


async def ask_everywhere(bases: list[str], key: str, collection: str, count: int) -> list[Reply]:
    """``count`` asks at once, ask ``i`` through ``DIALECTS[i % 4]``'s SDK to ``bases[i % 3]`` (so each
    server takes every dialect); each ask is the SDK's reply or its refusal."""
    replies: list[Reply] = []

    async def one(i: int) -> None:
        dialect = DIALECTS[i % len(DIALECTS)]
        replies.append(await ASKERS[dialect](bases[i % len(bases)], key, collection))

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(one, i)
    return replies


# -- the scheduler, made due now --

async def due_now(home: Path, job: str) -> None:
    """Switch the scheduler on with ``job`` alone, at the local minute a minute ago, as if switched on
    two minutes ago: on its next tick each process finds that slot due (a real server's clock)."""
    now = time.time()
    slot = datetime.fromtimestamp(now - 60)  # the machine's local time, as the servers read slots
    off = [name for name in sched.JOBS if name != job]
    async with store_of(home) as db:
        await sched_store.save_settings(db, sched.Config("run", tuple(off), {job: f"{slot:%H:%M}"},
                                                         since=now - 120).as_dict())


async def runs_once_finished(home: Path, job: str, timeout: float = 30) -> list[sched_store.Run]:
    """Every run of ``job`` logged, once one has finished (failing after ``timeout`` seconds)."""
    async with store_of(home) as db:
        with anyio.fail_after(timeout):
            while True:
                runs = await sched_store.runs(db, job=job, limit=100)
                if any(r.finished is not None for r in runs):
                    return runs
                await anyio.sleep(0.1)


async def lease_renewed_for(home: Path, seconds: float, timeout: float = 30) -> dict[str, Any]:
    """The scheduler's lease once its holder has renewed it ``seconds`` past where it is now: the
    holder has ticked for that long since, and so (at the same tick) has every other process."""
    async with store_of(home) as db:
        with anyio.fail_after(timeout):
            first = await sched_store.lease(db, "scheduler")
            assert first is not None, "no process holds the scheduler's lease"
            while True:
                lease = await sched_store.lease(db, "scheduler")
                if lease is not None and lease["expires"] >= first["expires"] + seconds:
                    return lease
                await anyio.sleep(0.1)


async def job_runs(home: Path, job: str) -> list[sched_store.Run]:
    async with store_of(home) as db:
        return await sched_store.runs(db, job=job, limit=100)


# -- the dashboard's event stream --

def frames(response: httpx.Response) -> Iterator[dict[str, str]]:
    """The server-sent events of a streamed response, each as its fields (``id``, ``event``, ``data``),
    until the stream ends (the server ends each after 15 s: the deadline of a reader that waits)."""
    frame: dict[str, str] = {}
    for line in response.iter_lines():
        if line == "":
            if frame:
                yield frame
            frame = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            frame[name] = value.removeprefix(" ")
