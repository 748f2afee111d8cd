"""Real servers on free loopback ports for tests: in a thread (fast) or a subprocess (restarts,
several processes on one data folder, console scripts)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

from tests.kits.ports import free_port
from tests.kits.store import url_for
from tests.kits.waits import ANSWER, START


@contextmanager
def serve_in_thread(app, port: int | None = None) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on 127.0.0.1 in a background thread; yields its base URL."""
    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on",
                            access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=START)


def server_env(home: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWARMERS_", "BENCH_"))}
    env.update({"BENCHWARMERS_HOME": str(home), "BENCHWARMERS_CONFIG": str(home.parent / "config"),
                "BENCH_PORT": str(port), "PYTHONUNBUFFERED": "1"})
    if url_for(home):  # the data folder's store is a PostgreSQL database (tests/kits/store.py)
        env["BENCHWARMERS_DATABASE_URL"] = str(url_for(home))
    env.update(extra)
    return env


@contextmanager
def spawn_server(home: Path, port: int | None = None, *, args: tuple[str, ...] = ("serve",),
                 log: Path | None = None, **env_extra: str) -> Iterator[str]:
    """``python -m benchwarmers_mcp serve`` as a real process; yields its base URL."""
    port = port or free_port()
    log = log or home.parent / f"server-{port}.log"
    home.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "benchwarmers_mcp", *args], env=server_env(home, port, **env_extra),
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=START)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_healthy(base: str, proc: subprocess.Popen | None = None, timeout: float = START) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(base + "/health", timeout=ANSWER).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError("server did not become healthy")
