"""The Docker image, built and run (issue 19): the server runs as a plain user, refuses to listen
beyond loopback without an admin token (one line, exit 2), reaches ``healthy`` through its own
HEALTHCHECK, and keeps what it saved in the /data volume for the next container.

The image comes from ``.ci/docker.sh up`` (a private dockerd with no network, a debootstrapped
Debian base, the project as wheels): ``.ci/run`` starts it and sets ``BENCHWARMERS_DOCKER_IMAGE``;
without it, this module runs the script itself, so a run without Docker fails, never skips.
Containers run with ``--network none``: the tests talk to the server from inside, with
``docker exec`` and Python's urllib.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# xdist_group wheel: without BENCHWARMERS_DOCKER_IMAGE the engine fixture runs .ci/docker.sh up, which
# wheels the checkout (setuptools builds in its build/ folder) as tests/e2e/test_suite_wheel.py does:
# one worker runs both, one at a time, and the module's one dockerd serves all its tests
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("wheel")]
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "admin-" + uuid.uuid4().hex  # 38 characters
PROVIDER_KEY = "sk-docker-" + uuid.uuid4().hex
USER_ID = "10001"

# Runs inside the container: one request to the server on its own loopback, the answer as JSON.
REQUEST = """
import json, sys, urllib.error, urllib.request
method, path, token, body = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
headers = {"Content-Type": "application/json"}
if token:
    headers["Authorization"] = "Bearer " + token
req = urllib.request.Request("http://127.0.0.1:8122" + path, method=method, headers=headers,
                             data=body.encode() if body else None)
try:
    with urllib.request.urlopen(req, timeout=20) as r:
        status, text = r.status, r.read().decode()
except urllib.error.HTTPError as e:
    status, text = e.code, e.read().decode()
print(json.dumps({"status": status, "body": json.loads(text) if text else None}))
"""

# Runs inside the container: does any file under /data hold this text?
GREP_DATA = """
import pathlib, sys
needle = sys.argv[1].encode()
print(sum(needle in p.read_bytes() for p in pathlib.Path("/data").rglob("*") if p.is_file()))
"""


@dataclass
class Engine:
    docker: str
    env: dict[str, str]
    image: str

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.docker, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def ok(self, *args: str, timeout: float = 120) -> str:
        done = self.run(*args, timeout=timeout)
        assert done.returncode == 0, f"docker {shlex.join(args)}: {done.stderr}"
        return done.stdout.strip()

    def inspect(self, what: str, fmt: str) -> object:
        return json.loads(self.ok("inspect", "--format", "{{json " + fmt + "}}", what))


def _env_from(exports: str) -> dict[str, str]:
    line = exports.strip().splitlines()[-1]
    words = shlex.split(line)
    assert words[0] == "export", exports
    return dict(word.split("=", 1) for word in words[1:])


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    env = dict(os.environ)
    started = None
    if not env.get("BENCHWARMERS_DOCKER_IMAGE"):
        up = subprocess.run(["bash", str(ROOT / ".ci" / "docker.sh"), "up"], cwd=ROOT, capture_output=True,
                            text=True, timeout=1800, env={**env, "PYTHON": sys.executable},
                            stdin=subprocess.DEVNULL)
        assert up.returncode == 0, f".ci/docker.sh up failed:\n{up.stderr[-4000:]}"
        started = _env_from(up.stdout)
        env.update(started)
    try:
        yield Engine(env.get("BENCHWARMERS_DOCKER", "docker"), env, env["BENCHWARMERS_DOCKER_IMAGE"])
    finally:
        if started:
            subprocess.run(["bash", str(ROOT / ".ci" / "docker.sh"), "down"], cwd=ROOT, env=env,
                           timeout=300, stdin=subprocess.DEVNULL, check=False)


@pytest.fixture
def volume(engine: Engine) -> Iterator[str]:
    name = "bw-data-" + uuid.uuid4().hex[:10]
    engine.ok("volume", "create", name)
    yield name
    engine.run("volume", "rm", "-f", name)


class Container:
    def __init__(self, engine: Engine, volume: str, *env: str, user: str | None = None) -> None:
        self.engine = engine
        args = ["run", "-d", "--network", "none", "--health-interval", "1s", "-v", f"{volume}:/data"]
        if user is not None:
            args += ["--user", user]
        for pair in ("BENCHWARMERS_ADMIN_TOKEN=" + TOKEN, *env):
            args += ["-e", pair]
        self.id = engine.ok(*args, engine.image)

    def wait_healthy(self, within: float = 90) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            state = self.engine.inspect(self.id, ".State")
            assert isinstance(state, dict)
            assert state["Running"], f"the container stopped: {self.logs()}"
            health = state.get("Health", {}).get("Status")
            if health == "healthy":
                return
            assert health != "unhealthy", f"unhealthy: {self.engine.inspect(self.id, '.State.Health')}"
            time.sleep(0.5)
        raise AssertionError(f"not healthy in {within}s: {self.engine.inspect(self.id, '.State.Health')}\n{self.logs()}")

    def call(self, method: str, path: str, body: dict[str, object] | None = None, *, token: str = TOKEN) -> tuple[int, object]:
        out = self.engine.ok("exec", self.id, "python", "-c", REQUEST, method, path, token,
                             json.dumps(body) if body is not None else "")
        answer = json.loads(out)
        return answer["status"], answer["body"]

    def exec(self, *command: str) -> str:
        return self.engine.ok("exec", self.id, *command)

    def logs(self) -> str:
        done = self.engine.run("logs", self.id)
        return done.stdout + done.stderr

    def stop(self) -> None:
        self.engine.ok("stop", "--time", "20", self.id)
        self.engine.ok("rm", self.id)


@pytest.fixture
def containers(engine: Engine) -> Iterator[list[Container]]:
    made: list[Container] = []
    yield made
    for c in made:
        engine.run("rm", "-f", c.id)


def test_the_image_runs_a_plain_user_on_a_data_volume_with_no_secret_inside(engine: Engine) -> None:
    config = engine.inspect(engine.image, ".Config")
    assert isinstance(config, dict)
    assert config["User"] == f"{USER_ID}:{USER_ID}"
    assert "/data" in config["Volumes"]
    env = dict(pair.split("=", 1) for pair in config["Env"])
    assert env["BENCHWARMERS_HOME"] == "/data" and env["BENCH_BIND"] == "0.0.0.0" and env["BENCH_PORT"] == "8122"
    assert not [k for k in env if k == "BENCHWARMERS_ADMIN_TOKEN" or k.startswith("BENCHWARMERS_KEY_")]
    assert config["Entrypoint"] == ["/usr/local/bin/benchwarmers-entrypoint"]
    assert config["Cmd"] == ["benchwarmers", "serve"]
    health = config["Healthcheck"]["Test"]
    assert health[0] == "CMD" and health[1] == "python" and "/health" in health[-1]
    assert "curl" not in json.dumps(health)


def test_it_refuses_to_listen_beyond_loopback_without_the_admin_token(engine: Engine) -> None:
    run = engine.run("run", "--rm", "--network", "none", engine.image)
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("benchwarmers: refusing to start: BENCH_BIND=0.0.0.0 is beyond loopback")
    assert "BENCHWARMERS_ADMIN_TOKEN" in lines[0]
    short = "short-" + uuid.uuid4().hex[:6]
    run = engine.run("run", "--rm", "--network", "none", "-e", "BENCHWARMERS_ADMIN_TOKEN=" + short, engine.image)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "shorter than 16" in run.stderr and short not in run.stdout + run.stderr


def test_healthy_as_a_plain_user_and_what_it_saved_is_in_the_next_container(
        engine: Engine, volume: str, containers: list[Container]) -> None:
    first = Container(engine, volume, "BENCHWARMERS_KEY_LOCALAI=" + PROVIDER_KEY)
    containers.append(first)
    first.wait_healthy()
    assert "Benchwarmers on http://0.0.0.0:8122 (data: /data; store: sqlite /data/benchwarmers.db)" in first.logs()
    assert first.exec("id", "-u") == USER_ID
    assert first.exec("stat", "-c", "%u", "/data/benchwarmers.db") == USER_ID
    assert first.call("GET", "/api/collections", token="")[0] == 401  # the token guards the admin API
    key = first.exec("bench", "key", "create", "in-docker")  # the CLI inside finds the server and token
    assert key.startswith("bwk_")
    assert first.call("GET", "/v1/models", token="")[0] == 401  # with a token, the gateway wants keys
    assert first.call("GET", "/v1/models", token=key)[0] == 200

    assert first.call("POST", "/api/endpoint", {"name": "localai", "base": "http://127.0.0.1:9/v1",
                                                "key_name": "localai"})[0] == 201
    status, body = first.call("POST", "/api/model/register", {"served": "qwen-docker", "endpoint": "localai",
                                                              "alias": "qwen-docker"})
    assert status == 201, body
    status, body = first.call("POST", "/api/collection", {"name": "shipped", "members": ["qwen-docker"],
                                                          "description": "saved in the first container"})
    assert status == 201, body
    status, body = first.call("GET", "/api/endpoints")
    assert status == 200 and isinstance(body, dict)
    assert [e["key_source"] for e in body["endpoints"] if e["name"] == "localai"] == ["environment"]
    first.stop()
    containers.remove(first)

    second = Container(engine, volume)
    containers.append(second)
    second.wait_healthy()
    status, body = second.call("GET", "/api/collections")
    assert status == 200 and isinstance(body, dict)
    [shipped] = [c for c in body["collections"] if c["name"] == "shipped"]
    assert shipped["members"] == ["qwen-docker"] and shipped["description"] == "saved in the first container"
    status, body = second.call("GET", "/api/endpoints")
    assert status == 200 and isinstance(body, dict)
    assert [e["key_source"] for e in body["endpoints"] if e["name"] == "localai"] == [None]  # never stored
    assert second.exec("python", "-c", GREP_DATA, PROVIDER_KEY) == "0"
    assert second.exec("python", "-c", GREP_DATA, TOKEN) == "0"


def test_a_root_owned_data_folder_is_refused_as_the_plain_user_and_handed_over_when_started_as_root(
        engine: Engine, tmp_path: Path, containers: list[Container]) -> None:
    folder = tmp_path / "root-owned"  # as a host's volume mounts: a folder owned by root
    folder.mkdir(mode=0o755)
    os.chown(folder, 0, 0)
    run = engine.run("run", "--rm", "--network", "none", "-e", "BENCHWARMERS_ADMIN_TOKEN=" + TOKEN,
                     "-v", f"{folder}:/data", engine.image)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.strip().splitlines() == [
        f"benchwarmers: refusing to start: the data folder /data is not writable by uid {USER_ID}: chown it to "
        f"{USER_ID}, or start the container as root (--user 0) once and it hands the folder over"]
    assert not list(folder.iterdir())

    started_as_root = Container(engine, str(folder), user="0")
    containers.append(started_as_root)
    started_as_root.wait_healthy()
    status = started_as_root.exec("cat", "/proc/1/status")
    uids = [line.split()[1:] for line in status.splitlines() if line.startswith(("Uid:", "Gid:"))]
    assert uids == [[USER_ID] * 4, [USER_ID] * 4]  # the server runs as the plain user, not root
    assert str(folder.stat().st_uid) == USER_ID and str((folder / "benchwarmers.db").stat().st_uid) == USER_ID
    written = started_as_root.call("POST", "/api/endpoint", {"name": "written", "base": "http://127.0.0.1:9/v1"})
    assert written[0] == 201, written
