"""The cold start loads only what the first answer needs (issue 13), checked by what a fresh
interpreter has imported, never by a clock.

A subprocess starts the app as ``serve`` does (``create_app`` and its lifespan, uvicorn's config
loaded by ``cli.listen.server_for``) on a seeded data folder, then asks one route turn on OpenAI
chat, one MCP ``initialize`` and one onboarding item, and reports ``sys.modules`` after each step.
Each module made lazy must be absent until the step that first uses it, and present after it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.kits.seed import seed

UPSTREAM = "http://upstream.test/v1"  # answered in the subprocess by an httpx.MockTransport

# Imported only when first used; each is named by the step that first needs it.
NOT_AT_START = {
    "mcp": "mcp",  # the MCP SDK: the first /mcp request (app.McpStarter)
    "benchwarmers_mcp.mcp": "mcp",  # the MCP face
    "pydantic": "mcp",  # a face that validates a body (admin, MCP); the gateway dialects do not
    "benchwarmers_mcp.health.probes": "onboard",  # the onboarding worker's first probe
    "benchwarmers_mcp.upstream.listing": "onboard",  # ... and its first endpoint listing
    "benchwarmers_mcp.health.rules": "onboard",
    "difflib": "onboard",  # the listing step's "did you mean"
    "benchwarmers_mcp.admin": "onboard",  # the admin face: an admin route's handler, on its first request
    "benchwarmers_mcp.catalog.registration": "onboard",  # the catalog's register step
    "benchwarmers_mcp.gateway.openai_chat": "turn",  # a dialect, on its route's first request
    "benchwarmers_mcp.engine.route": "turn",
    "benchwarmers_mcp.catalog": "onboard",  # the register step; pacing reads learned facts only from a failure
}
NEVER = (  # nothing in these steps needs them
    "websockets", "wsproto",  # uvicorn with ws="none": no route takes a WebSocket
    "benchwarmers_mcp.suite.runner",  # loaded at start only when a suite run is left to resume
    "benchwarmers_mcp.web", "jinja2",  # the dashboard
    "benchwarmers_mcp.gateway.anthropic", "benchwarmers_mcp.gateway.gemini", "benchwarmers_mcp.gateway.responses",
    "benchwarmers_mcp.gateway.ollama", "benchwarmers_mcp.gateway.completions",
)

SCRIPT = r'''
import json, sys
from pathlib import Path
from typing import Any

import anyio
import httpx

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.cli.listen import server_for
from benchwarmers_mcp.settings import Settings

ANSWER = {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
SERVED = ["m1", "m2", "fresh"]
seen = {}


def snap(step):
    seen[step] = sorted(sys.modules)


def upstream(request):
    if request.url.path.endswith("/models"):
        return httpx.Response(200, json={"object": "list", "data": [{"id": m, "object": "model"} for m in SERVED]})
    if not json.loads(request.content).get("stream"):
        return httpx.Response(200, json=ANSWER)
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "fine"}, "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": ANSWER["usage"]}]
    events = "".join(f"data: {json.dumps({'id': 'c1', 'object': 'chat.completion.chunk', **c})}\n\n" for c in chunks)
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=events + "data: [DONE]\n\n")


async def main(home):
    settings = Settings.from_env({}, home=home, config_dir=home.parent / "config")
    app = create_app(settings, upstream_transport=httpx.MockTransport(upstream))
    uvicorn_config = server_for(app, settings).config
    uvicorn_config.load()
    assert uvicorn_config.ws_protocol_class is None
    started, stop, messages = anyio.Event(), anyio.Event(), ["lifespan.startup"]

    async def receive():
        if messages:
            return {"type": messages.pop()}
        await stop.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message):
        if message["type"] == "lifespan.startup.complete":
            started.set()
        elif message["type"] == "lifespan.startup.failed":
            raise RuntimeError(message.get("message"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(app, {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
        with anyio.fail_after(60):
            await started.wait()
        snap("start")
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8122",
                                   timeout=30)
        async with client:
            turn = await client.post("/v1/chat/completions", json={
                "model": "bench/trio:route", "messages": [{"role": "user", "content": "hello"}]})
            assert turn.status_code == 200, turn.text
            assert turn.json()["choices"][0]["message"]["content"] == "fine", turn.text
            snap("turn")
            init = await client.post("/mcp", headers={"Accept": "application/json, text/event-stream"}, json={
                "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "cold-start", "version": "0"}}})
            assert init.status_code == 200, init.text
            assert '"serverInfo"' in init.text, init.text
            snap("mcp")
            queued = await client.post("/api/onboarding", json={"items": [
                {"served": "fresh", "endpoint": "fake", "mode": "quick"}]})
            assert queued.status_code == 202, queued.text
            with anyio.fail_after(60):
                while True:
                    items = (await client.get("/api/onboarding")).json()["items"]
                    if items and items[0]["state"] not in ("queued", "running"):
                        break
                    await anyio.sleep(0.05)
            snap("onboard")
            seen["onboarded"] = items[0]
        stop.set()
    print(json.dumps(seen))


anyio.run(main, Path(sys.argv[1]))
'''


def loaded(home: Path) -> dict[str, Any]:
    """``sys.modules`` of a fresh interpreter after each step (start, turn, mcp, onboard)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWARMERS_", "BENCH_"))}
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(home)], env=env, capture_output=True, text=True,
                         timeout=180, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("cold") / "data"
    home.mkdir()
    seed(home, base_url=UPSTREAM, served=["m1", "m2"], collections={"trio": ["m1", "m2"]})
    return loaded(home)


def under(modules: list[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_the_start_leaves_out_what_the_first_answer_does_not_need(steps: dict[str, Any]) -> None:
    early = [m for m in NOT_AT_START if under(steps["start"], m)]
    assert early == [], f"imported at start-up, before their first use: {early}"


@pytest.mark.parametrize("step", ["turn", "mcp", "onboard"])
def test_each_lazy_module_loads_at_its_first_use_and_not_before(steps: dict[str, Any], step: str) -> None:
    order = ["start", "turn", "mcp", "onboard"]
    before = order[order.index(step) - 1]
    mine = [m for m, first in NOT_AT_START.items() if first == step]
    assert [m for m in mine if under(steps[before], m)] == [], f"loaded before the {step} step"
    assert [m for m in mine if not under(steps[step], m)] == [], f"not loaded by the {step} step"


def test_modules_no_step_needs_are_never_loaded(steps: dict[str, Any]) -> None:
    assert [m for m in NEVER if under(steps["onboard"], m)] == []


def test_the_onboarded_item_ran_its_steps(steps: dict[str, Any]) -> None:
    item = steps["onboarded"]
    assert isinstance(item, dict) and item["state"] == "done", item  # the lazy imports worked, not only loaded
