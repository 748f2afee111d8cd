"""Live pages: a browser on one server process sees panels, verdicts and changes made through
another process on the same data folder, pushed by server-sent events, and the page makes no
request at all while nothing happens (no polling); a stopping server ends its event streams
first, so an open tab never holds it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.kits.browser import Watch, shot
from tests.kits.servers import free_port, server_env, spawn_server, wait_healthy

pytestmark = pytest.mark.e2e

MEMBERS = ["simulated/sage?latency=0.1", "simulated/quill?latency=0.2"]


def seed(client: httpx.Client) -> None:
    assert client.post("/api/endpoint", json={"name": "sim", "api": "simulated"}).status_code == 201
    aliases = [client.post("/api/model/register", json={"served": s, "endpoint": "sim"}).json()["model"]["alias"]
               for s in MEMBERS]
    assert client.post("/api/collection", json={"name": "live", "members": aliases}).status_code == 201


def test_a_page_on_one_process_hears_what_another_did(browser: Browser, home: Path) -> None:
    with spawn_server(home) as writer_base, spawn_server(home) as reader_base, \
            httpx.Client(base_url=writer_base, timeout=60) as writer:
        seed(writer)
        context = browser.new_context(base_url=reader_base)
        page = context.new_page()
        watch = Watch(page)
        page.goto("/logs")
        expect(page.get_by_role("status").filter(has_text="Live")).to_have_text("Live")
        watch.reset()
        page.wait_for_timeout(1500)  # a quiet spell: nothing happens, so nothing is asked
        assert watch.requests == []

        reply = writer.post("/v1/chat/completions", json={"model": "bench/live", "messages": [
            {"role": "user", "content": "is it live?"}]})
        assert reply.status_code == 200, reply.text
        panel = reply.json()["bench"]["panel"]
        first = reply.json()["bench"]["seats"][0]
        row = page.get_by_role("row").filter(has_text=panel)
        expect(row).to_be_visible()
        expect(row).to_contain_text("ok")

        assert writer.post("/bench/verdict", json={"call": first["call"], "useful": True}).status_code == 200
        expect(row).to_contain_text(f"{first['alias']} · ok · useful")
        assert writer.post("/api/collection", json={"name": "live", "description": "now described"}).status_code == 200
        expect(page.locator("#change-log")).to_contain_text("description: now described")  # in words
        shot(page, "live-logs")

        # what the page asked for meanwhile: the event stream and its own refreshes, nothing else
        asked = {re.sub(r"\?.*", "", u.removeprefix(reader_base)) for u in watch.requests}
        assert asked <= {"/api/events", "/logs"}, asked
        assert watch.errors == []
        context.close()


def test_a_stopping_server_ends_its_event_streams_at_once(home: Path) -> None:
    """SIGTERM with a dashboard listening: the stream ends with ``closing`` (the app is told before
    the server waits for open requests; a stream that merely ran out its 15 s would end without
    it), and the server stops cleanly."""
    port = free_port()
    with open(home.parent / "stopping.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "benchwarmers_mcp", "serve"], env=server_env(home, port),
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc)
        with httpx.Client(base_url=base, timeout=60) as client, client.stream("GET", "/api/events") as r:
            lines = r.iter_lines()
            opening = [next(lines) for _ in range(5)]  # retry, id, event, data, and the blank line
            assert opening[2] == "event: ready", opening
            proc.terminate()
            rest = list(lines)
        assert "event: closing" in rest, rest
        # uvicorn re-raises the signal once it has shut down: the conventional end of a stopped server
        assert proc.wait(timeout=60) in (0, -signal.SIGTERM)
        assert "Traceback" not in (home.parent / "stopping.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
