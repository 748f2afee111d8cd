"""One frozen Settings, read from the environment once and passed down.

Nothing in the package reads ``os.environ`` after start-up except through here (the CLI, a
separate client program, reads its own few variables).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEFAULT_PORT = 8122
FALSE_WORDS = {"", "0", "false", "no", "off"}


class BadSettings(ValueError):
    """The environment holds settings that cannot be used: ``problems`` says each in a sentence
    naming the variable and what it takes (the CLI prints them as one line and exits)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def default_home(env: Mapping[str, str] = os.environ) -> Path:
    """The OS per-user data folder for Benchwarmers."""
    if sys.platform == "win32":
        base = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "benchwarmers"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "benchwarmers"
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "benchwarmers"


def default_config_dir(env: Mapping[str, str] = os.environ) -> Path:
    """The OS per-user config folder: where the keys file lives (never the data folder)."""
    if sys.platform == "win32":
        base = env.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
        return Path(base) / "benchwarmers"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Preferences" / "benchwarmers"
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "benchwarmers"


def flag(value: str | None) -> bool:
    """A boolean switch that fails closed: any value but the usual 'off' words is on."""
    return (value or "").strip().lower() not in FALSE_WORDS


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


class _Reader:
    """Numbers from the environment, each problem noted instead of raised, so every bad variable is
    named at once and none ends in a traceback."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[str] = []

    def port(self, name: str, default: int) -> int:
        raw = (self.env.get(name) or "").strip()
        if not raw:
            return default
        if not raw.isdigit() or not 1 <= int(raw) <= 65535:
            self.problems.append(f"{name} must be a port number from 1 to 65535, not {raw[:40]!r}")
            return default
        return int(raw)

    def seconds(self, name: str, default: float) -> float:
        raw = (self.env.get(name) or "").strip()
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            self.problems.append(f"{name} must be a number of seconds above 0, not {raw[:40]!r}")
            return default
        return value


def _token(value: str | None) -> str | None:
    """A secret from the environment, surrounding whitespace stripped; unset or empty is None, but
    whitespace only is "" (set, so the start-up check refuses it as too short)."""
    return None if not value else value.strip()


@dataclass(frozen=True)
class Settings:
    home: Path
    config_dir: Path
    bind: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    admin_token: str | None = None
    public_url: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    require_keys: bool = False
    seat_timeout: float = 420.0
    seat_wait: float = 5.0  # the longest a panel seat (or a route member with another after it) waits for a rate window
    stream_grace: float = 1.0
    keepalive: float = 10.0
    max_body: int = 20_000_000
    upstream_connect_timeout: float = 10.0
    route_first_token: float = 90.0  # route mode: no first token in this long fails over
    route_stream_wait: float = 15.0  # route mode: a streamed turn's 200 waits this long for a first piece
    route_turn_timeout: float = 600.0  # route mode: the whole turn
    # the connection: idle between requests, a request head, a request body (each a deadline, not
    # a gap between bytes, so a client that trickles gains nothing), and the head's size and count
    keep_alive_timeout: float = 5.0
    head_timeout: float = 10.0
    body_timeout: float = 120.0
    max_head_bytes: int = 32 * 1024
    max_headers: int = 100
    catalog_models_dev_url: str = "https://models.dev/api.json"  # catalog refresh feeds ('' leaves one out)
    catalog_openrouter_url: str = "https://openrouter.ai/api/v1/models"
    catalog_freellmapi_url: str = ""  # FreeLLMAPI publishes no feed of its own: set one to use it
    catalog_timeout: float = 60.0
    scheduler_tick: float = 30.0  # how often the scheduler looks at its setting and the clock
    # the shared store: a postgresql:// URL (BENCHWARMERS_DATABASE_URL); None is SQLite in the data
    # folder. Never in repr: it may carry a password (show ``store.db.describe_target`` instead)
    database_url: str | None = field(default=None, repr=False)
    env_keys: Mapping[str, str] = field(default_factory=dict, repr=False)
    # HTTP(S)_PROXY or ALL_PROXY is set: outbound calls keep httpx's own transport, which reads them
    upstream_proxy: bool = False
    # BENCH_CONNECT_<PRESET>_<FIELD>: a sign-in preset's addresses or client id (upstream/connect/presets.py)
    connect_env: Mapping[str, str] = field(default_factory=dict)
    client: str = "builtin"  # BENCH_CLIENT: who calls upstreams unless Settings chose (builtin or llm)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, **overrides: Any) -> Settings:
        """The settings the environment gives; ``BadSettings`` naming every variable that cannot be used."""
        home = Path(env.get("BENCHWARMERS_HOME") or default_home(env)).expanduser()
        config_dir = Path(env.get("BENCHWARMERS_CONFIG") or default_config_dir(env)).expanduser()
        keys = {k[len("BENCHWARMERS_KEY_"):]: v for k, v in env.items() if k.startswith("BENCHWARMERS_KEY_") and v}
        read = _Reader(env)
        settings = cls(
            home=home,
            config_dir=config_dir,
            bind=(env.get("BENCH_BIND") or "").strip() or "127.0.0.1",
            port=read.port("BENCH_PORT", DEFAULT_PORT),
            admin_token=_token(env.get("BENCHWARMERS_ADMIN_TOKEN")),
            public_url=env.get("BENCHWARMERS_PUBLIC_URL") or None,
            allowed_hosts=_csv(env.get("BENCH_ALLOWED_HOSTS")),
            allowed_origins=_csv(env.get("BENCH_ALLOWED_ORIGINS")),
            require_keys=flag(env.get("BENCHWARMERS_REQUIRE_KEYS")),
            seat_timeout=read.seconds("BENCH_SEAT_TIMEOUT", 420.0),
            seat_wait=read.seconds("BENCH_SEAT_WAIT", 5.0),
            route_first_token=read.seconds("BENCH_ROUTE_FIRST_TOKEN", 90.0),
            route_turn_timeout=read.seconds("BENCH_ROUTE_TURN_TIMEOUT", 600.0),
            keep_alive_timeout=read.seconds("BENCH_KEEP_ALIVE_TIMEOUT", 5.0),
            head_timeout=read.seconds("BENCH_HEAD_TIMEOUT", 10.0),
            body_timeout=read.seconds("BENCH_BODY_TIMEOUT", 120.0),
            catalog_models_dev_url=env.get("BENCH_CATALOG_MODELS_DEV_URL", "https://models.dev/api.json").strip(),
            catalog_openrouter_url=env.get("BENCH_CATALOG_OPENROUTER_URL",
                                           "https://openrouter.ai/api/v1/models").strip(),
            catalog_freellmapi_url=env.get("BENCH_CATALOG_FREELLMAPI_URL", "").strip(),
            scheduler_tick=max(0.1, float(env.get("BENCH_SCHEDULER_TICK") or 30.0)),
            database_url=(env.get("BENCHWARMERS_DATABASE_URL") or "").strip() or None,
            env_keys=keys,
            upstream_proxy=any((env.get(name) or env.get(name.upper()) or "").strip()
                               for name in ("http_proxy", "https_proxy", "all_proxy")),
            connect_env={k: v for k, v in env.items() if k.startswith("BENCH_CONNECT_")},
            client=(env.get("BENCH_CLIENT") or "builtin").strip().lower(),
        )
        if settings.client not in ("builtin", "llm"):
            read.problems.append(f"BENCH_CLIENT must be builtin or llm, not {settings.client[:40]!r}")
        if read.problems:
            raise BadSettings(read.problems)
        return replace(settings, **overrides) if overrides else settings

    @property
    def db_path(self) -> Path:
        """The SQLite file in the data folder (the store when no database URL is set)."""
        return self.home / "benchwarmers.db"

    @property
    def store_target(self) -> Path | str:
        """What ``store.Database`` opens: the database URL when set, else the SQLite file."""
        return self.database_url or self.db_path
