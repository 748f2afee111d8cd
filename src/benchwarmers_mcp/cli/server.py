"""The server side of the program: serve, gateway, demo, init.

Every start-up mistake is one line on stderr and a non-zero exit (2 for a setting, 1 for a port
or a folder that cannot be used), and nothing is made before it is found: the settings and the
data folder are checked, then the socket is bound, and only then is the data folder made and the
database opened.
"""

from __future__ import annotations

import copy
import gc
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from uvicorn.config import LOGGING_CONFIG

from benchwarmers_mcp.cli.listen import ListenError, bind_problem, bind_socket, server_for
from benchwarmers_mcp.client import local_url
from benchwarmers_mcp.routes import GATEWAY_TABLE, TABLE, Entry
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, integrity
from benchwarmers_mcp.store.db import StoreUnavailable, describe_target, is_postgres_url, passwords_of

Prepare = Callable[[Database], Awaitable[object]]


class StartError(Exception):
    """Why the server cannot start, in one line; ``code`` is the exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def refuse(message: str, code: int = 1) -> int:
    """One line on stderr (what is wrong and what to do); the exit code."""
    print(f"benchwarmers: {' '.join(message.split())}", file=sys.stderr, flush=True)
    return code


def folder_problem(folder: Path, what: str = "the data folder", variable: str = "BENCHWARMERS_HOME", *,
                   writable: bool = True) -> str | None:
    """Why ``folder`` cannot be made or (``writable``) written, checked without making anything, or
    None; ``variable`` is the setting that moves it."""
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir():
            return f"{what} {folder} is a file (or a broken link), not a folder; move it or set {variable}"
        if writable and not os.access(folder, os.W_OK | os.X_OK):
            return f"{what} {folder} is not writable by this user; fix its permissions or set {variable}"
        database = folder / "benchwarmers.db"
        if database.exists() and not (database.is_file() and os.access(database, os.R_OK | os.W_OK)):
            return f"the database {database} cannot be read and written; fix its permissions"
        return None
    parent = folder.parent
    while not parent.exists() and not parent.is_symlink() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{what} {folder} cannot be made: {parent} is a file, not a folder; set {variable}"
    if writable and not os.access(parent, os.W_OK | os.X_OK):
        return f"{what} {folder} cannot be made: {parent} is not writable; set {variable}"
    return None


def _settings_problems(settings: Settings) -> list[str]:
    from benchwarmers_mcp.access.policy import startup_problems

    problem = bind_problem(settings.bind)
    return [problem] if problem else startup_problems(settings)


def make_folder(home: Path) -> None:
    """Make the data folder and prove a file can be written in it; ``StartError`` saying why not."""
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StartError(f"cannot make the data folder {home}: {e.strerror or e}") from None
    try:
        with tempfile.TemporaryFile(dir=home):
            pass
    except OSError as e:
        raise StartError(f"the data folder {home} is not writable: {e.strerror or e}; fix its permissions or "
                         "set BENCHWARMERS_HOME") from None


async def _open_store(settings: Settings, prepare: Prepare | None) -> None:
    try:
        async with Database(settings.store_target) as db:
            if prepare is not None:
                await prepare(db)
    except StoreUnavailable as e:  # its message names the store with any password masked
        raise StartError(e.message) from None
    except Exception as e:  # a database that is not one, a disk that is full: one line, no traceback
        raise StartError(f"cannot open the database {store_label(settings)}: {_masked(settings, e)}") from None


def start(settings: Settings, prepare: Prepare | None = None, *, announce: str = "",
          table: tuple[Entry, ...] = TABLE) -> int:
    """Check everything, bind, make the data folder and the store, then serve ``table``'s routes
    until stopped."""
    from benchwarmers_mcp.access.access_log import to_stderr

    problems = _settings_problems(settings)
    if problems:
        # One whole line per reason: a container log or a host's log viewer shows each line alone.
        for reason in problems:
            refuse(f"refusing to start: {reason}")
        return 2
    # the config folder may be read-only (keys from the environment, or a keys file mounted so)
    problem = folder_problem(settings.home) or folder_problem(settings.config_dir, "the config folder",
                                                               "BENCHWARMERS_CONFIG", writable=False) or (
        settings.backup_dir and folder_problem(settings.backup_dir, "the backup folder", "BENCH_BACKUP_DIR"))
    if problem:
        return refuse(problem)
    try:
        sock = bind_socket(settings)
    except ListenError as e:
        return refuse(str(e))
    from benchwarmers_mcp.app import closing, create_app  # after the checks: a refusal never loads the app

    try:
        make_folder(settings.home)
        anyio.run(_open_store, settings, prepare)
        to_stderr(settings.log_format)
        logs = log_config(settings)
        print(announce or f"Benchwarmers on http://{_host(settings.bind)}:{settings.port} (data: {settings.home};"
                          f" store: {store_label(settings)})", file=sys.stderr, flush=True)
        app = create_app(settings, table=table)
        server = server_for(app, settings, on_stop=lambda: closing(app), on_stopped=lambda: left_clean(settings),
                            log_config=logs)
        settle_collector()
        server.run(sockets=[sock])
    except StartError as e:
        return refuse(e.message, e.code)
    except KeyboardInterrupt:
        return 0
    finally:
        sock.close()
    return 0 if server.started else 3  # uvicorn's own code for a server that never started


GC_THRESHOLDS = (10_000, 20, 20)  # Python's defaults are (700, 10, 10)


def settle_collector() -> None:
    """The cyclic collector for a long-running server: what start-up made (modules, classes, the
    app) is frozen out of every later collection, and the youngest generation is collected after
    10,000 allocations instead of 700. Measured (a route turn at c=20, 2,000 turns): the default
    collector took 0.13 ms per turn, most of it in three full collections that walked every object
    start-up had made, each a pause of the event loop; with these settings, 3 young collections
    and 0.005 ms per turn. A request frees its objects by reference counting, not by the collector
    (145 objects per turn outlive it and wait for a collection), so memory is not held longer."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()  # off through start-up (``cli.main.run_server_command``)


def serve(settings: Settings) -> int:
    return start(settings)


GATEWAY_PORT = 8123  # beside serve's 8122, so both can run on one data folder


def gateway(settings: Settings, port: int | None, bind: str | None) -> int:
    """Only the gateway (every client format, ``/bench/*``, MCP) and ``/health``, on a port of its
    own: for a server exposed to apps, beside a ``serve`` kept on loopback for the dashboard and the
    admin API (the same data folder)."""
    settings = replace(settings, port=port or GATEWAY_PORT, bind=bind or settings.bind)
    announce = (f"Benchwarmers gateway on {local_url(settings.bind, settings.port)} (listening on"
                f" {_host(settings.bind)}:{settings.port}; no dashboard or admin API; data: {settings.home};"
                f" store: {store_label(settings)})")
    return start(settings, announce=announce, table=GATEWAY_TABLE)


def log_config(settings: Settings) -> dict[str, Any]:
    """uvicorn's logging, plus a handler for everything else, every handler masking every provider
    key the key store knows, and the admin token (``KeyMaskFilter``): no record, traceback
    included, prints one."""
    from benchwarmers_mcp.access.access_log import LOGGER
    from benchwarmers_mcp.access.policy import admin_token_of
    from benchwarmers_mcp.logformat import use_json
    from benchwarmers_mcp.upstream.keys import KeyStore
    from benchwarmers_mcp.upstream.masking import KeyMaskFilter

    store = KeyStore(settings.config_dir, settings.env_keys)
    token = admin_token_of(settings)  # as every check sees it: spaces around it are not part of it
    metrics = (settings.metrics_token or "").strip()
    keys = KeyMaskFilter(lambda: [*store.values(), *([token] if token else []), *([metrics] if metrics else [])])
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
    return use_json(config) if settings.log_format == "json" else config


def left_clean(settings: Settings) -> None:
    """A clean stop marks a SQLite store's file as it was left, so the next start need not read all
    of it to check it (``store.integrity``)."""
    if not is_postgres_url(settings.store_target):
        integrity.mark_clean(Path(settings.store_target))


def store_label(settings: Settings) -> str:
    """The store in one phrase, password masked: ``sqlite <path>`` or ``postgresql <masked url>``."""
    where = describe_target(settings.store_target)
    return f"sqlite {where['path']}" if where["backend"] == "sqlite" else f"{where['backend']} {where['url']}"


def _masked(settings: Settings, e: BaseException) -> str:
    """An error's text with the store's password masked, as written in the URL and decoded."""
    text = str(e)
    for password in sorted(passwords_of(settings.store_target), key=len, reverse=True):
        text = text.replace(password, "***")
    return text


def _host(bind: str) -> str:
    return f"[{bind}]" if ":" in bind else bind


def init(folder: str | None, settings: Settings) -> int:
    home = Path(folder).expanduser() if folder else settings.home
    problem = folder_problem(home)
    if problem:
        return refuse(problem)
    # a folder named here is a SQLite store of its own; otherwise the configured store (a database URL)
    settings = replace(settings, home=home, database_url=None) if folder else settings
    try:
        make_folder(home)
        anyio.run(_open_store, settings, None)
    except StartError as e:
        return refuse(e.message, e.code)
    print(f"data folder ready: {home}" + (f" (store: {store_label(settings)})" if settings.database_url else ""))
    return 0


def demo(settings: Settings) -> int:
    """Serve five simulated models from a temporary folder that holds the demo's data and its keys
    (never the user's config folder); the folder is removed when the server stops."""
    from benchwarmers_mcp.cli.demo import seed_demo

    with tempfile.TemporaryDirectory(prefix="benchwarmers-demo-") as tmp:
        settings = replace(settings, home=Path(tmp) / "data", config_dir=Path(tmp) / "config",
                           database_url=None)  # never a shared store
        base = local_url(settings.bind, settings.port)  # where `bench` on this machine finds it too
        announce = (
            f"Demo: five simulated models, collection 'demo', data in {tmp} (removed when you stop it).\nTry:\n"
            f"  curl {base}/v1/chat/completions -H 'Content-Type: application/json' \\\n"
            f"    -d '{{\"model\": \"bench/demo\", \"messages\": [{{\"role\": \"user\", \"content\": "
            f"\"Where can this function return a stale value?\"}}]}}'\n")
        # uvicorn re-raises SIGTERM/SIGINT once it has shut down; raised as exceptions here, they
        # unwind through this block so the temporary folder is removed.
        signal.signal(signal.SIGTERM, _stop)
        try:
            return start(settings, seed_demo, announce=announce)
        except (KeyboardInterrupt, SystemExit):
            return 0


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)
