"""Issue 33 item 3, across processes: two ``serve`` processes on one store and one config folder
both see a signed-in endpoint's token about to expire, and exactly one of them renews it (the
store's lease). The fake authorization server holds the first refresh open for a few seconds, or
until a second refresh arrives: a second renewer would show itself then, and would find the
rotated refresh token already spent. Both servers then call upstream with the one new token."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from tests.fakes.auth_server import FakeAuthServer
from tests.kits.servers import serve_in_thread, spawn_server

pytestmark = [pytest.mark.e2e, pytest.mark.backends]


def wait_for(what: str, check, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_token_is_renewed_by_exactly_one_of_two_servers(home: Path) -> None:
    auth = FakeAuthServer(client_id="hf-app", expires_in=60, renewed_expires_in=3600, hold_refresh=3.0)
    with serve_in_thread(auth.app()) as auth_base:
        env = {**auth.env(auth_base, "huggingface"), "BENCH_SCHEDULER_TICK": "0.2"}
        with spawn_server(home, **env) as one, spawn_server(home, **env) as two:
            started = httpx.post(one + "/api/connect/start", json={"preset": "huggingface", "client_id": "hf-app"},
                                 timeout=30).json()
            page = httpx.get(started["authorize_url"], follow_redirects=True, timeout=30)
            assert page.url.path == "/connect/callback" and "url=/endpoints?signin=" in page.text
            # 60 s left is inside the five minutes before expiry: both servers find it due at once
            renewed = wait_for("the renewal", lambda: next(
                (s for s in httpx.get(two + "/api/connect/signins", timeout=30).json()["signins"]
                 if s["renewed_at"]), None))
            assert renewed["expires_at"] > renewed["renewed_at"] + 3000 and not renewed["ended"]
            for base in (one, two):  # both read the same state: renewed, no alert
                alerts = httpx.get(base + "/api/alerts", timeout=30).json()["alerts"]
                assert [a for a in alerts if a["kind"] == "signin"] == []
            keys = json.loads((home.parent / "config" / "keys.json").read_text())
    assert auth.calls["token:refresh_token"] == 1
    assert keys["huggingface"] == auth.issued[-1] and len(auth.issued) == 2
