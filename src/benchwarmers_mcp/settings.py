"""One frozen Settings, read from the environment once and passed down.

Nothing in the package reads ``os.environ`` after start-up except through here (the CLI, a
separate client program, reads its own few variables). Every variable is read by one parser,
``VARIABLES``: each names its ``Settings`` field and its ``Kind``, which reads the text or refuses
it in one sentence naming the variable, the value (masked when it may hold a secret) and what is
accepted. ``Settings.from_env`` reads them all and raises ``BadSettings`` with every refusal; the
CLI prints each on one line and exits 2. What only makes sense of several settings at once (a bind
beyond loopback wants an admin token) is checked at start-up (``access.policy.startup_problems``).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchwarmers_mcp.store.db import URL_FORM, mask_url, target_problem

DEFAULT_PORT = 8122
ON_WORDS = {"1", "true", "yes", "on"}
OFF_WORDS = {"0", "false", "no", "off"}


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


# -- the kinds of setting: each reads a value's text or refuses it (ValueError, with a reason or none) --

@dataclass(frozen=True)
class Kind:
    """How one kind of setting is read. ``read`` takes the text (surrounding spaces stripped) and
    gives the value, or raises ``ValueError`` (its message, if any, is said after the refusal).
    ``empty`` is what a variable set to nothing means and ``blank`` one set to spaces only (None:
    as if unset); ``show`` quotes a refused value (masked for one that may hold a password)."""

    accepts: str
    read: Callable[[str], Any]
    empty: Any = None
    blank: Any = None
    show: Callable[[str], str] = lambda text: text
    # how a value is written back as text, so that a Settings made in code is checked alike
    # (``value_problems``); None: a value of this kind is not checked again
    text_of: Callable[[Any], str] | None = None

    def refusal(self, name: str, text: str, reason: str = "") -> str:
        shown = self.show(text)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return f"{name} must be {self.accepts}, not {shown!r}" + (f": {reason}" if reason else "")


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError
    return int(text)


def _seconds(least: float) -> Callable[[str], float]:
    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < least or value <= 0:
            raise ValueError
        return value
    return read


def _switch(text: str) -> bool:
    word = text.lower()
    if word not in ON_WORDS | OFF_WORDS:
        raise ValueError
    return word in ON_WORDS


def _feed(text: str) -> str:
    """A feed's URL: http(s) with a host."""
    try:
        parts = urlsplit(text)
    except ValueError:
        raise ValueError from None
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in text):
        raise ValueError
    return text


def _store(text: str) -> str:
    problem = target_problem(text)
    if problem:
        raise ValueError(problem)
    return text


def _items(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


HOST_RE = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]*[a-z0-9])?)(:\d{1,5})?$")


def _public_url(text: str) -> str:
    """The address people and apps use: ``http(s)://host[:port]``, nothing after it."""
    try:
        parts = urlsplit(text)
        _ = parts.port  # raises on a bad port
    except ValueError:
        raise ValueError("it does not read as one (a bad port, a stray '[' or ']'?)") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError("the server cannot live under a path prefix")
    return text


def _hosts(text: str) -> tuple[str, ...]:
    entries = _items(text)
    for entry in entries:
        if not HOST_RE.match(entry.lower()):
            raise ValueError(f"{entry[:60]!r} is not a host name")
    return entries


def _origins(text: str) -> tuple[str, ...]:
    entries = _items(text)
    for entry in entries:
        if entry == "*":
            raise ValueError("'*' is never allowed: list the origins one by one")
        try:
            parts = urlsplit(entry)
            _ = parts.port
        except ValueError:
            raise ValueError(f"{entry[:60]!r} is not an origin") from None
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
            raise ValueError(f"{entry[:60]!r} is not an origin")
    return entries


PORT = Kind("a port number from 1 to 65535", _port)
SECONDS = Kind("a number of seconds above 0", _seconds(0.0))
TICK = Kind("a number of seconds from 0.1 up", _seconds(0.1))
SWITCH = Kind("on or off (1, true, yes or on; 0, false, no or off)", _switch)
TEXT = Kind("text", str)
PUBLIC_URL = Kind("http(s)://host[:port] with no path, query or user", _public_url, text_of=str)
HOSTS = Kind("host names, each with an optional :port, separated by commas", _hosts, text_of=",".join)
ORIGINS = Kind("origins like https://app.example.com, separated by commas", _origins, text_of=",".join)
FOLDER = Kind("a folder's path", lambda text: Path(text).expanduser())
SECRET = Kind("a secret", str, blank="")  # spaces only: set, so the start-up check refuses it as too short
FEED = Kind("an http(s):// URL (empty leaves that feed out)", _feed, empty="", blank="")
STORE = Kind(f"a PostgreSQL URL ({URL_FORM}) or the path of a SQLite file", _store, show=mask_url)


@dataclass(frozen=True)
class Variable:
    """One environment variable: the ``Settings`` field it sets and its kind."""

    name: str
    field: str
    kind: Kind


# Every setting the environment gives (a provider's key, ``BENCHWARMERS_KEY_<NAME>``, is any text;
# the proxy variables are httpx's own, only their presence read here).
VARIABLES = (
    Variable("BENCHWARMERS_HOME", "home", FOLDER),
    Variable("BENCHWARMERS_CONFIG", "config_dir", FOLDER),
    Variable("BENCH_BIND", "bind", TEXT),
    Variable("BENCH_PORT", "port", PORT),
    Variable("BENCHWARMERS_ADMIN_TOKEN", "admin_token", SECRET),
    Variable("BENCHWARMERS_PUBLIC_URL", "public_url", PUBLIC_URL),
    Variable("BENCH_ALLOWED_HOSTS", "allowed_hosts", HOSTS),
    Variable("BENCH_ALLOWED_ORIGINS", "allowed_origins", ORIGINS),
    Variable("BENCHWARMERS_REQUIRE_KEYS", "require_keys", SWITCH),
    Variable("BENCH_SEAT_TIMEOUT", "seat_timeout", SECONDS),
    Variable("BENCH_SEAT_WAIT", "seat_wait", SECONDS),
    Variable("BENCH_ROUTE_FIRST_TOKEN", "route_first_token", SECONDS),
    Variable("BENCH_ROUTE_TURN_TIMEOUT", "route_turn_timeout", SECONDS),
    Variable("BENCH_KEEP_ALIVE_TIMEOUT", "keep_alive_timeout", SECONDS),
    Variable("BENCH_HEAD_TIMEOUT", "head_timeout", SECONDS),
    Variable("BENCH_BODY_TIMEOUT", "body_timeout", SECONDS),
    Variable("BENCH_CATALOG_MODELS_DEV_URL", "catalog_models_dev_url", FEED),
    Variable("BENCH_CATALOG_OPENROUTER_URL", "catalog_openrouter_url", FEED),
    Variable("BENCH_CATALOG_FREELLMAPI_URL", "catalog_freellmapi_url", FEED),
    Variable("BENCH_SCHEDULER_TICK", "scheduler_tick", TICK),
    Variable("BENCHWARMERS_DATABASE_URL", "database_url", STORE),
)
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def read_variables(env: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The fields the environment sets (``VARIABLES``), and a refusal for each it cannot use."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for variable in VARIABLES:
        raw, kind = env.get(variable.name), variable.kind
        if raw is None:
            continue
        text = raw.strip()
        if not text:
            meaning = kind.empty if raw == "" else kind.blank
            if meaning is not None:
                values[variable.field] = meaning
            continue
        try:
            values[variable.field] = kind.read(text)
        except ValueError as e:
            problems.append(kind.refusal(variable.name, text, str(e)))
    return values, problems


def value_problems(settings: Settings) -> list[str]:
    """The refusals ``from_env`` gives, for the values ``settings`` holds of the variables whose kind
    can check a value again (``Kind.text_of``): a Settings made in code is refused alike."""
    problems = []
    for variable in VARIABLES:
        value, kind = getattr(settings, variable.field), variable.kind
        if kind.text_of is None or not value:
            continue
        text = kind.text_of(value)
        try:
            kind.read(text)
        except ValueError as e:
            problems.append(kind.refusal(variable.name, text, str(e)))
    return problems


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
    # the store: a postgresql:// URL or a SQLite file's path (BENCHWARMERS_DATABASE_URL); None is
    # SQLite in the data folder. Never in repr: it may carry a password (show ``store.db.describe_target``)
    database_url: str | None = field(default=None, repr=False)
    env_keys: Mapping[str, str] = field(default_factory=dict, repr=False)
    # HTTP(S)_PROXY or ALL_PROXY is set: outbound calls keep httpx's own transport, which reads them
    upstream_proxy: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, **overrides: Any) -> Settings:
        """The settings the environment gives; ``BadSettings`` naming every variable that cannot be used."""
        values, problems = read_variables(env)
        if problems:
            raise BadSettings(problems)
        values.setdefault("home", default_home(env))
        values.setdefault("config_dir", default_config_dir(env))
        keys = {k[len("BENCHWARMERS_KEY_"):]: v for k, v in env.items() if k.startswith("BENCHWARMERS_KEY_") and v}
        proxy = any((env.get(name) or env.get(name.upper()) or "").strip() for name in PROXY_VARIABLES)
        settings = cls(**values, env_keys=keys, upstream_proxy=proxy)
        return replace(settings, **overrides) if overrides else settings

    @property
    def db_path(self) -> Path:
        """The SQLite file in the data folder (the store when no database URL is set)."""
        return self.home / "benchwarmers.db"

    @property
    def store_target(self) -> Path | str:
        """What ``store.Database`` opens: the database URL when set, else the SQLite file."""
        return self.database_url or self.db_path
