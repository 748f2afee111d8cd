"""Issue 2: `benchwarmers init` and `benchwarmers demo` (the key store: tests/test_upstream_keys.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest

from tests.kits.servers import free_port, server_env, wait_healthy
from tests.kits.waits import ANSWER, START

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent


def test_init_makes_the_data_folder(tmp_path):
    target = tmp_path / "elsewhere"
    done = subprocess.run([str(BIN / "benchwarmers"), "init", str(target)], capture_output=True, text=True,
                          env=server_env(tmp_path / "unused", free_port()), timeout=60)
    assert done.returncode == 0, done.stderr
    assert (target / "benchwarmers.db").exists()


def test_demo_serves_a_simulated_panel(tmp_path):
    port = free_port()
    proc = subprocess.Popen([str(BIN / "benchwarmers"), "demo"], env=server_env(tmp_path / "d", port),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, proc)
        reply = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0).chat.completions.create(
            model="bench/demo", messages=[{"role": "user", "content": "hello"}])
        bench = reply.model_extra["bench"]
        assert len(bench["seats"]) == 5 and all(s["simulated"] for s in bench["seats"])
        assert "(simulated)" in reply.choices[0].message.content
        assert httpx.get(base + "/v1/models", timeout=ANSWER).status_code == 200
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=START)
    assert "curl" in out and "/v1/chat/completions" in out
    folder = out.split("data in ", 1)[1].split(" (removed", 1)[0]
    assert folder and not Path(folder).exists(), "the demo's temporary data folder is removed when it stops"
