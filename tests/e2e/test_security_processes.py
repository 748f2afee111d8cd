"""Issue 8 with real processes: the console script refuses an unsafe start; two servers on one
data folder count a key's rpm together and see a revocation at once; the access log and the data
folder hold none of the secrets used (an upstream redirect: tests/test_security_redirect.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest

from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.security import ADMIN_TOKEN, PROMPT, PROMPT_MARK, UPSTREAM_KEY, bearer, seed_fake
from tests.kits.servers import free_port, server_env, spawn_server
from tests.kits.waits import ANSWER

pytestmark = pytest.mark.e2e
SCRIPT = Path(sys.executable).parent / "benchwarmers"


def refuse(home: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), "serve"], env=server_env(home, free_port(), **env), capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_the_console_script_refuses_an_unsafe_start(home: Path) -> None:
    for env in ({"BENCH_BIND": "0.0.0.0"}, {"BENCH_BIND": "::"}):
        run = refuse(home, **env)
        assert run.returncode == 2, run.stderr
        assert "refusing to start" in run.stderr and "BENCHWARMERS_ADMIN_TOKEN" in run.stderr
    short = "short-token-123"
    run = refuse(home, BENCH_BIND="0.0.0.0", BENCHWARMERS_ADMIN_TOKEN=short)
    assert run.returncode == 2 and "shorter than 16" in run.stderr and short not in run.stderr + run.stdout
    run = refuse(home, BENCHWARMERS_PUBLIC_URL="https://bench.example.com/prefix")
    assert run.returncode == 2 and "BENCHWARMERS_PUBLIC_URL" in run.stderr
    run = refuse(home, BENCH_ALLOWED_ORIGINS="*")
    assert run.returncode == 2 and "never allowed" in run.stderr


def test_rpm_and_revocation_are_shared_by_two_processes(home: Path) -> None:
    with spawn_server(home, BENCHWARMERS_REQUIRE_KEYS="1") as a, spawn_server(home, BENCHWARMERS_REQUIRE_KEYS="1") as b:
        key = httpx.post(a + "/api/gateway-key", json={"name": "shared", "rpm": 3}, timeout=ANSWER).json()["key"]
        answers = [httpx.get(base + "/v1/models", headers=bearer(key), timeout=ANSWER) for base in (a, b, a, b, a)]
        assert [r.status_code for r in answers] == [200, 200, 200, 429, 429]
        assert all(1 <= int(r.headers["retry-after"]) <= 60 for r in answers[3:])
        other = httpx.post(b + "/api/gateway-key", json={"name": "brief"}, timeout=ANSWER).json()["key"]
        assert httpx.get(a + "/v1/models", headers=bearer(other), timeout=ANSWER).status_code == 200
        assert httpx.post(b + "/api/gateway-key/remove", json={"name": "brief"}, timeout=ANSWER).status_code == 200
        assert httpx.get(a + "/v1/models", headers=bearer(other), timeout=ANSWER).status_code == 401


def every_byte(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def exercise(base: str, fake: FakeUpstream) -> list[str]:
    """Use every secret the way a client would; returns the secrets handed out on the way."""
    with httpx.Client(base_url=base, timeout=ANSWER) as http:
        return _exercise(http, base, fake)


def _exercise(http: httpx.Client, base: str, fake: FakeUpstream) -> list[str]:
    assert http.post("/login", json={"token": "wrong-guess-of-the-token"}).status_code == 401
    login = http.post("/login", json={"token": ADMIN_TOKEN})
    cookie = login.cookies["bw_session"]
    assert http.get("/api/security").json()["admin_token_set"] is True
    http.cookies.clear()
    made = [http.post("/api/gateway-key", json={"name": n}, headers=bearer(ADMIN_TOKEN)).json()["key"]
            for n in ("app", "other")]
    with openai.OpenAI(base_url=base + "/v1", api_key=made[0], max_retries=0) as sdk:
        assert sdk.chat.completions.create(model="bench/core", messages=PROMPT).choices[0].message.content
    assert fake.calls[-1].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert http.get("/v1/models", headers={"x-api-key": made[1]}).status_code == 200
    assert http.get(f"/v1beta/models?key={made[1]}").status_code != 401
    assert http.get(f"/v1/models/{made[0]}", headers=bearer(made[0])).status_code != 401
    leaky = "sk-live-" + "LeakyProviderKey0042"
    for r in (http.get(f"/v1/models?key={made[0]}&api_key={leaky}&access_token={ADMIN_TOKEN}"),
              http.get("/v1/models", headers=bearer(leaky)),
              http.get("/api/gateway-keys", headers=bearer(made[0]))):
        assert r.status_code == 401 and not any(s in r.text for s in (leaky, made[0], ADMIN_TOKEN))
    assert http.post("/api/gateway-key/remove", json={"name": "other"}, headers=bearer(ADMIN_TOKEN)).status_code == 200
    return [*made, cookie, leaky]


def test_no_secret_reaches_the_access_log_or_the_data_folder(home: Path, fake: FakeUpstream, upstream: str) -> None:
    import anyio

    anyio.run(seed_fake, home, upstream)
    log = home.parent / "access.log"
    with spawn_server(home, log=log, BENCHWARMERS_ADMIN_TOKEN=ADMIN_TOKEN,
                      BENCHWARMERS_KEY_FAKE=UPSTREAM_KEY) as base:
        handed_out = exercise(base, fake)
    text = log.read_text()
    assert " POST /v1/chat/completions 200 key:app " in text and " GET /v1/models 401 - " in text
    assert " POST /login 200 anyone " in text and "GET /v1/models/bwk_*** " in text
    secrets = [ADMIN_TOKEN, UPSTREAM_KEY, "wrong-guess-of-the-token", *handed_out]
    for secret in [*secrets, PROMPT_MARK, "?key=", "api_key", "access_token"]:
        assert secret not in text, secret
    stored = every_byte(home)
    assert b"bwk_" not in stored or all(s.encode() not in stored for s in secrets)
    for secret in secrets:
        assert secret.encode() not in stored, secret
