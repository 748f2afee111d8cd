"""The server side of the program: serve, demo, init."""

from __future__ import annotations

import copy
import logging
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from uvicorn.config import LOGGING_CONFIG

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database

# Seconds a stopping server gives the requests still open (a panel's streamed answers) before it
# cancels them: enough for the seats of a panel under way to land, short of systemd's 90 s before
# it kills (Docker's default is 10 s: a container that should let answers land wants a longer
# stop timeout).
SHUTDOWN_GRACE = 30


def serve(settings: Settings) -> int:
    from benchwarmers_mcp.access.access_log import to_stderr
    from benchwarmers_mcp.access.policy import startup_problems

    problems = startup_problems(settings)
    if problems:
        # One whole line per reason: a container log or a host's log viewer shows each line alone.
        print("\n".join(f"benchwarmers: refusing to start: {p}" for p in problems), file=sys.stderr)
        return 2
    from benchwarmers_mcp.app import closing, create_app  # after the checks: a refusal never loads the app

    to_stderr()
    logs = log_config(settings)
    settings.home.mkdir(parents=True, exist_ok=True)
    print(f"Benchwarmers on http://{_host(settings.bind)}:{settings.port} (data: {settings.home})", file=sys.stderr)
    app = create_app(settings)
    config = uvicorn.Config(app, host=settings.bind, port=settings.port, log_level="warning", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=SHUTDOWN_GRACE,
                            log_config=logs)
    server = Server(config, on_stop=lambda: closing(app))
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0 if server.started else 3  # uvicorn's own code for a server that never started


class Server(uvicorn.Server):
    """uvicorn's server, which tells the app it is stopping before it waits for open requests: the
    dashboard's event streams end at once (``app.closing``), so an open browser tab never holds a
    stopping server. What is still in flight then (a panel's answers) gets ``SHUTDOWN_GRACE``."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_stop = on_stop

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.on_stop()
        await super().shutdown(sockets)


def log_config(settings: Settings) -> dict[str, Any]:
    """uvicorn's logging, plus a handler for everything else, every handler masking every provider
    key the key store knows, and the admin token (``KeyMaskFilter``): no record, traceback
    included, prints one."""
    from benchwarmers_mcp.access.access_log import LOGGER
    from benchwarmers_mcp.upstream.keys import KeyStore
    from benchwarmers_mcp.upstream.masking import KeyMaskFilter

    store = KeyStore(settings.config_dir, settings.env_keys)
    keys = KeyMaskFilter(lambda: [*store.values(), *([settings.admin_token] if settings.admin_token else [])])
    for handler in logging.getLogger(LOGGER).handlers:  # the access log, sent to stderr already
        handler.addFilter(keys)
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"keys": {"()": lambda: keys}}
    config["formatters"]["plain"] = {"format": "%(message)s"}
    config["handlers"]["plain"] = {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                                   "formatter": "plain"}
    for handler in config["handlers"].values():
        handler["filters"] = ["keys"]
    config["root"] = {"handlers": ["plain"], "level": "WARNING"}
    return config


def _host(bind: str) -> str:
    return f"[{bind}]" if ":" in bind else bind


def init(folder: str | None, settings: Settings) -> int:
    home = Path(folder).expanduser() if folder else settings.home

    async def make() -> None:
        async with Database(home / "benchwarmers.db"):
            pass

    home.mkdir(parents=True, exist_ok=True)
    anyio.run(make)
    print(f"data folder ready: {home}")
    return 0


def demo(settings: Settings) -> int:
    """Serve five simulated models from a temporary data folder, removed when the server stops."""
    from benchwarmers_mcp.cli.demo import seed_demo

    with tempfile.TemporaryDirectory(prefix="benchwarmers-demo-") as tmp:
        home = Path(tmp)
        settings = replace(settings, home=home)

        async def seed() -> None:
            async with Database(settings.db_path) as db:
                await seed_demo(db)

        anyio.run(seed)
        base = f"http://{_host(settings.bind)}:{settings.port}"
        print(
            f"Demo: five simulated models, collection 'demo', data in {home} (removed when you stop it).\nTry:\n"
            f"  curl {base}/v1/chat/completions -H 'Content-Type: application/json' \\\n"
            f"    -d '{{\"model\": \"bench/demo\", \"messages\": [{{\"role\": \"user\", \"content\": "
            f"\"Where can this function return a stale value?\"}}]}}'\n",
            file=sys.stderr, flush=True)
        # uvicorn re-raises SIGTERM/SIGINT once it has shut down; raised as exceptions here, they
        # unwind through this block so the temporary folder is removed.
        signal.signal(signal.SIGTERM, _stop)
        try:
            return serve(settings)
        except (KeyboardInterrupt, SystemExit):
            return 0


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)
