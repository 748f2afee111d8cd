"""Issue 33 item 4 with a real LiteLLM proxy (``litellm[proxy]`` from PyPI, in the test extras):
started as a process on a free loopback port, offline (``LITELLM_LOCAL_MODEL_COST_MAP``, and any
other address refused through a dead proxy), in front of the house's fake OpenAI upstream with two
deployments that come through two different upstream hosts. Its models are listed with their
upstream connections, a sync puts each on the endpoint of its own upstream, and a panel asked of a
collection of both is answered through the proxy. Adding a model through its admin API needs the
proxy's database, which this one has not: that refusal reaches the user as LiteLLM said it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import openai
import pytest

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.servers import free_port, serve_in_thread

pytestmark = pytest.mark.e2e
LITELLM = shutil.which("litellm", path=str(Path(sys.executable).parent))
MASTER = "sk-master-litellm-0123456789"


@pytest.fixture
def proxy(tmp_path: Path, fake: FakeUpstream) -> Iterator[str]:
    if LITELLM is None:
        pytest.fail("the litellm proxy is not installed: pip install -e '.[test]' installs litellm[proxy]")
    with serve_in_thread(fake.app()) as upstream:
        port = upstream.rsplit(":", 1)[1]
        config = tmp_path / "litellm.yaml"
        config.write_text(f"""model_list:
  - model_name: fast/alpha
    litellm_params:
      model: openai/alpha
      api_base: http://127.0.0.1:{port}/v1
      api_key: sk-upstream-one-0123456789
  - model_name: deep/beta
    litellm_params:
      model: openai/beta
      api_base: http://localhost:{port}/v1
      api_key: sk-upstream-two-0123456789
general_settings:
  master_key: {MASTER}
""")
        listen = free_port()
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("BENCH", "LITELLM"))},
               "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR", "DISABLE_ADMIN_UI": "True",
               # anything but loopback goes to a proxy that is not there: nothing reaches the network
               "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        log = open(tmp_path / "litellm.log", "wb")
        proc = subprocess.Popen([LITELLM, "--config", str(config), "--host", "127.0.0.1", "--port", str(listen)],
                                cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{listen}"
        try:
            deadline = time.monotonic() + 240  # the proxy imports a great deal before it listens
            while True:
                if proc.poll() is not None:
                    raise AssertionError(f"litellm exited: {(tmp_path / 'litellm.log').read_text()[-2000:]}")
                try:
                    if httpx.get(base + "/health/liveliness", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError("litellm did not start")
                time.sleep(0.2)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


@pytest.fixture
def bench(settings: Settings) -> Iterator[str]:
    port = free_port()
    with serve_in_thread(create_app(replace(settings, port=port)), port) as base:
        yield base


def test_litellm_models_come_with_their_upstreams_and_a_panel_is_answered_through_it(
        proxy: str, bench: str, fake: FakeUpstream) -> None:
    with httpx.Client(base_url=bench, timeout=120) as api:
        assert api.post("/api/endpoint", json={"name": "lite", "base": proxy + "/v1", "key": MASTER, "hub": "litellm",
                                               "admin_key": MASTER}).status_code == 201
        listed = api.get("/api/hub/upstreams", params={"endpoint": "lite"}).json()["upstreams"]
        assert {(u["served"], u["upstream_model"]) for u in listed} == {("fast/alpha", "alpha"), ("deep/beta", "beta")}
        connections = {u["served"]: u["connection"] for u in listed}
        fake_port = next(iter(connections.values())).rsplit("-", 1)[1]
        assert connections == {"fast/alpha": f"127.0.0.1-{fake_port}", "deep/beta": f"localhost-{fake_port}"}
        for served in ("fast/alpha", "deep/beta"):
            assert api.post("/api/model/register", json={"served": served, "endpoint": "lite"}).status_code == 201
        report = api.post("/api/hub/sync", json={"endpoint": "lite"}).json()
        assert report["placed"] == {"alpha": f"lite-127-0-0-1-{fake_port}", "beta": f"lite-localhost-{fake_port}"}
        assert api.post("/api/collection", json={"name": "duo", "members": ["alpha", "beta"]}).status_code == 201
        assert api.post("/api/gateway-settings", json={"max_explorers": 0}).status_code == 200

        client = openai.OpenAI(base_url=bench + "/v1", api_key="local", max_retries=0, timeout=120)
        reply = client.chat.completions.create(model="bench/duo", messages=[{"role": "user", "content": "review"}])
        seats = reply.model_extra["bench"]["seats"]
        assert {s["alias"]: s["status"] for s in seats} == {"alpha": "ok", "beta": "ok"}
        assert sorted(c.model for c in fake.calls) == ["alpha", "beta"]  # each went to the fake through the proxy
        assert {c.headers["authorization"] for c in fake.calls} == {"Bearer sk-upstream-one-0123456789",
                                                                    "Bearer sk-upstream-two-0123456789"}
        month = {c["connection"]: c["month"]["calls"] for c in api.get("/bench/quotas").json()["connections"]}
        assert month[f"lite-127-0-0-1-{fake_port}"] == 1 and month[f"lite-localhost-{fake_port}"] == 1  # per upstream
        assert month["lite"] == 0

        refused = api.post("/api/hub/register", json={"endpoint": "lite", "upstream_model": "gamma", "base_url":
                                                      f"http://127.0.0.1:{fake_port}/v1", "connection": "third"})
        assert refused.status_code == 502
        message = refused.json()["error"]["message"]
        assert message.startswith("lite (POST /model/new): upstream 500") and "No DB Connected" in message
        assert MASTER not in refused.text
