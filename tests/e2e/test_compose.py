"""compose.yaml as Docker Compose v2 reads it (issue 31.10): ``up`` refuses an empty admin token
before any container is made, the shared profile refuses an empty ``POSTGRES_PASSWORD`` while the
single profile never asks for it, and the single profile comes up healthy on the image CI builds
offline, on the port ``.env`` names, with ``--wait`` failing for a token the server refuses.

Compose is Docker's v2 binary (``.ci/docker.sh compose`` installs it into the CI cache; CI's run
exports ``BENCHWARMERS_COMPOSE``); the image and the private dockerd are test_docker.py's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_docker import REQUEST as ON_8122
from tests.e2e.test_docker import Engine, engine  # noqa: F401  (the module's dockerd and image)
from tests.kits.ports import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("wheel")]
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "compose-" + uuid.uuid4().hex  # 40 characters
# test_docker's one request from inside the container, to the port the server listens on there
REQUEST = ON_8122.replace('"http://127.0.0.1:8122"', '"http://127.0.0.1:" + __import__("os").environ["BENCH_PORT"]')
assert REQUEST != ON_8122
PROJECT_FILES = ("compose.yaml", "deploy/compose-shared.env", "deploy/compose-shared.Caddyfile")


@pytest.fixture(scope="module")
def compose_bin() -> str:
    found = os.environ.get("BENCHWARMERS_COMPOSE")
    if not found:
        done = subprocess.run(["bash", str(ROOT / ".ci" / "docker.sh"), "compose"], cwd=ROOT, capture_output=True,
                              text=True, timeout=600, env={**os.environ, "PYTHON": sys.executable},
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f".ci/docker.sh compose failed:\n{done.stderr[-3000:]}"
        found = done.stdout.strip().splitlines()[-1]
    version = subprocess.run([found, "version", "--short"], capture_output=True, text=True, timeout=60)
    assert version.stdout.strip().split(".")[0].lstrip("v") == "2", version.stdout
    return found


class Project:
    """A copy of the compose files in a folder of its own, with a ``.env`` made from .env.example."""

    def __init__(self, folder: Path, compose: str, docker_env: dict[str, str] | None = None, **env: str) -> None:
        self.folder, self.compose, self.name = folder, compose, "bw-compose-" + uuid.uuid4().hex[:8]
        for name in PROJECT_FILES:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, folder / name)
        example = (ROOT / ".env.example").read_text()
        for key, value in env.items():
            line = f"{key}={value}"
            example, n = re.subn(rf"^#? ?{key}=.*$", line, example, flags=re.M)
            if not n:
                example += f"\n{line}\n"
        (folder / ".env").write_text(example)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("BENCHWARMERS_", "BENCH_", "POSTGRES_", "COMPOSE_", "DOCKER_"))}
        self.env.update(docker_env or {})

    def run(self, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.compose, "-p", self.name, *args], cwd=self.folder, capture_output=True, text=True,
                              timeout=timeout, env={**self.env, **env}, stdin=subprocess.DEVNULL)

    def config(self, **env: str) -> dict:
        done = self.run("config", "--format", "json", **env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def env_of(service: dict) -> dict[str, str]:
    return {k: str(v) for k, v in (service.get("environment") or {}).items()}


# ---- what compose reads ------------------------------------------------------------------------------

def test_an_empty_admin_token_is_refused_with_what_to_do(compose_bin: str, tmp_path: Path) -> None:
    project = Project(tmp_path, compose_bin)  # .env.example as it ships: the token empty
    for args in (("config",), ("up", "-d", "--no-build")):
        done = project.run(*args)
        assert done.returncode != 0, done.stdout
        assert "required variable BENCHWARMERS_ADMIN_TOKEN is missing a value" in done.stderr
        assert "set BENCHWARMERS_ADMIN_TOKEN in .env, 16 or more characters" in done.stderr
        assert "secrets.token_urlsafe(32)" in done.stderr


def test_the_single_profile_needs_no_database_password(compose_bin: str, tmp_path: Path) -> None:
    port = str(free_port())
    config = Project(tmp_path, compose_bin, BENCHWARMERS_ADMIN_TOKEN=TOKEN, BENCH_PORT=port).config()
    assert set(config["services"]) == {"bench"}
    bench = config["services"]["bench"]
    env = env_of(bench)
    assert env["BENCHWARMERS_ADMIN_TOKEN"] == TOKEN and env["BENCH_PORT"] == port
    assert "BENCHWARMERS_DATABASE_URL" not in env and "POSTGRES_PASSWORD" not in env
    [published] = bench["ports"]
    assert (published["host_ip"], published["published"], str(published["target"])) == ("127.0.0.1", port, port)
    assert bench["restart"] == "unless-stopped"


def test_the_shared_profile_refuses_an_empty_password_and_builds_the_url_from_one(compose_bin: str,
                                                                                   tmp_path: Path) -> None:
    project = Project(tmp_path, compose_bin, BENCHWARMERS_ADMIN_TOKEN=TOKEN, COMPOSE_PROFILES="shared")
    for env in ({}, {"POSTGRES_PASSWORD": ""}):
        done = project.run("config", **env)
        assert done.returncode != 0, done.stdout
        assert "required variable POSTGRES_PASSWORD is missing a value" in done.stderr
        assert "set POSTGRES_PASSWORD in .env for the shared profile" in done.stderr
    password = uuid.uuid4().hex
    services = project.config(POSTGRES_PASSWORD=password)["services"]
    assert set(services) == {"postgres", "replica", "proxy"}
    assert env_of(services["postgres"])["POSTGRES_PASSWORD"] == password
    replica = env_of(services["replica"])
    assert replica["BENCHWARMERS_DATABASE_URL"] == f"postgresql://bench:{password}@postgres:5432/benchwarmers"
    assert replica["BENCHWARMERS_ADMIN_TOKEN"] == TOKEN
    assert services["replica"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert [p["host_ip"] for p in services["proxy"]["ports"]] == ["127.0.0.1"]


def test_no_page_says_the_postgresql_backend_is_unreleased() -> None:
    for name in ("compose.yaml", ".env.example", "docs/HOSTING.md", "deploy/fly.toml"):
        text = " ".join((ROOT / name).read_text().split())
        assert not re.search(r"(?i)(once|until|not yet)[^.]{0,80}(release you run|in your release|released)", text), name


# ---- what comes up -----------------------------------------------------------------------------------

@pytest.fixture
def up(compose_bin: str, engine: Engine, tmp_path: Path) -> Iterator[tuple[Project, int]]:  # noqa: F811
    port = free_port()
    project = Project(tmp_path, compose_bin, {"DOCKER_HOST": engine.env["DOCKER_HOST"]},
                      BENCHWARMERS_ADMIN_TOKEN=TOKEN, BENCH_PORT=str(port), BENCHWARMERS_IMAGE=engine.image)
    try:
        yield project, port
    finally:
        project.run("down", "-v", "--timeout", "10")


def test_the_single_profile_comes_up_healthy_on_its_port(up: tuple[Project, int]) -> None:
    project, port = up
    started = project.run("up", "-d", "--no-build", "--wait", "--wait-timeout", "120", timeout=240)
    assert started.returncode == 0, started.stdout + started.stderr
    logs = project.run("logs", "bench").stdout
    assert f"Benchwarmers on http://0.0.0.0:{port} (data: /data; store: sqlite /data/benchwarmers.db)" in logs
    deadline = time.monotonic() + 60
    while True:  # the published port, from this machine, as a browser would reach it
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the published port never answered"
            time.sleep(0.5)
    assert health.status_code == 200 and health.json()["ok"] is True
    denied = project.run("exec", "-T", "bench", "python", "-c", REQUEST, "GET", "/api/status", "", "")
    assert json.loads(denied.stdout)["status"] == 401  # the admin API wants the token
    key = project.run("exec", "-T", "bench", "bench", "key", "create", "from-compose")  # the CLI finds BENCH_PORT
    assert key.returncode == 0 and key.stdout.strip().startswith("bwk_"), key.stderr


def test_up_wait_fails_for_a_token_the_server_refuses(up: tuple[Project, int]) -> None:
    project, _ = up
    started = project.run("up", "-d", "--no-build", "--wait", "--wait-timeout", "120", timeout=240,
                          BENCHWARMERS_ADMIN_TOKEN="short-token")
    assert started.returncode != 0, started.stdout + started.stderr
    logs = project.run("logs", "bench").stdout
    assert "refusing to start: BENCHWARMERS_ADMIN_TOKEN is shorter than 16 characters" in logs
