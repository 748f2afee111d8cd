"""``benchwarmers gateway`` as a real process beside ``benchwarmers serve`` on one data folder
(issue 31.12): the gateway answers asks on its own port and has no admin API and no pages; what
the full server saves, the gateway serves."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.kits.ports import free_port
from tests.kits.servers import spawn_server

pytestmark = pytest.mark.e2e


def test_serve_and_gateway_on_one_data_folder(tmp_path: Path) -> None:
    home, gw = tmp_path / "data", free_port()
    log = tmp_path / "gateway.log"
    with spawn_server(home) as full, spawn_server(home, gw, args=("gateway", "--port", str(gw)), log=log) as only:
        assert only == f"http://127.0.0.1:{gw}"
        saved = httpx.post(full + "/api/endpoint", json={"name": "simulated", "base": "simulated://local",
                                                         "api": "simulated", "kind": "simulated"}, timeout=60)
        assert saved.status_code == 201, saved.text
        registered = httpx.post(full + "/api/model/register", timeout=60, json={
            "served": "simulated/mercury", "endpoint": "simulated", "alias": "mercury"})
        assert registered.status_code == 201, registered.text
        made = httpx.post(full + "/api/collection", json={"name": "core", "members": ["mercury"]}, timeout=60)
        assert made.status_code == 201, made.text

        asked = httpx.post(only + "/v1/chat/completions", timeout=120, json={
            "model": "bench/core", "messages": [{"role": "user", "content": "hello"}]})
        assert asked.status_code == 200, asked.text
        assert [s["alias"] for s in asked.json()["bench"]["seats"]][0] == "mercury"
        for path in ("/api/status", "/api/collections", "/", "/login", "/registered"):
            answer = httpx.get(only + path, timeout=30)
            assert answer.status_code == 404, (path, answer.text[:200])
        assert httpx.get(full + "/api/status", timeout=30).status_code == 200
    assert f"Benchwarmers gateway on http://127.0.0.1:{gw} (listening on 127.0.0.1:{gw}; no dashboard or admin API" \
        in log.read_text()
