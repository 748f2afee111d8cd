"""What ``benchwarmers serve --help`` and ``demo --help`` say about the environment: every variable
the server reads, generated from ``Settings`` itself so the list cannot drift from it.

Which variables there are is read off ``Settings.from_env`` (every name it looks up); each one's
default comes from the ``Settings`` field it sets. The words (what a variable does, and an example)
are written here, in ``ABOUT``, keyed by the variable; a test holds ``ABOUT`` to exactly the
variables ``Settings`` reads and checks each example against the real parser, so a variable added
to the settings without words here fails the suite (and is still listed, with its default).
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from benchwarmers_mcp.settings import Settings

PREFIXES = ("BENCH_", "BENCHWARMERS_")


@dataclass(frozen=True)
class About:
    field: str  # the Settings field the variable sets
    does: str
    example: str  # a value the server accepts (the help shows ``NAME=example benchwarmers serve``)
    shown: str | None = None  # the example as written in the help, when the value is not the point


ABOUT: dict[str, About] = {
    "BENCHWARMERS_HOME": About("home", "the data folder: the SQLite store, the access log", "/srv/bench"),
    "BENCHWARMERS_CONFIG": About("config_dir", "the config folder: the keys file (mode 0600), never the data folder",
                                 "/etc/benchwarmers"),
    "BENCH_BIND": About("bind", "the address to listen on; anything beyond loopback needs BENCHWARMERS_ADMIN_TOKEN",
                        "0.0.0.0"),
    "BENCH_PORT": About("port", "the port to listen on (the CLI on this machine looks there too)", "8133"),
    "BENCHWARMERS_ADMIN_TOKEN": About(
        "admin_token", "16+ characters: the dashboard's login and the admin API's Bearer token; with it every gateway"
        " route wants a gateway key", "x" * 32,
        shown="\"$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')\""),
    "BENCHWARMERS_PUBLIC_URL": About("public_url", "the address people and apps use behind a proxy (its host is"
                                     " allowed, the login cookie Secure on https)", "https://bench.example.com"),
    "BENCH_ALLOWED_HOSTS": About("allowed_hosts", "other Host names the server answers to, comma-separated",
                                 "bench.internal,healthcheck.railway.app"),
    "BENCH_ALLOWED_ORIGINS": About("allowed_origins", "browser origins that may call the gateway routes (never '*')",
                                   "https://app.example.com"),
    "BENCHWARMERS_REQUIRE_KEYS": About("require_keys", "every gateway route wants a gateway key, even on loopback",
                                       "on"),
    "BENCH_SEAT_TIMEOUT": About("seat_timeout", "seconds one seat (one upstream call) may take", "120"),
    "BENCH_SEAT_WAIT": About("seat_wait", "seconds a panel seat (or a route member with another after it) may"
                               " wait for a rate window", "15"),
    "BENCH_METRICS_TOKEN": About("metrics_token", "16+ characters: a Bearer token that opens GET /metrics alone (the"
                                 " admin login or token opens it too)", "m" * 32,
                                 shown="\"$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')\""),
    "BENCH_LOG_FORMAT": About("log_format", "text, or json: one event a line (access lines included), keys masked",
                              "json"),
    "BENCH_BACKUP_DIR": About("backup_dir", "where the scheduler's backup job (and benchwarmers backup with no"
                              " path) puts its copies", "/tmp/bench-backups"),
    "BENCH_BACKUP_KEEP": About("backup_keep", "how many of the backup job's copies to keep (0: the job takes none)",
                               "14"),
    "BENCH_CLIENT": About("client", "who calls upstreams: builtin, or llm (the llm package and its plugins; no"
                          " pacing from answers' rate-limit headers)", "llm"),
    "BENCH_ROUTE_FIRST_TOKEN": About("route_first_token", "route mode: seconds to the first token before failing"
                                     " over to the next member", "45"),
    "BENCH_ROUTE_TURN_TIMEOUT": About("route_turn_timeout", "route mode: seconds a whole turn may take", "900"),
    "BENCH_KEEP_ALIVE_TIMEOUT": About("keep_alive_timeout", "seconds an idle client connection is kept open", "30"),
    "BENCH_HEAD_TIMEOUT": About("head_timeout", "seconds a request's head has to arrive whole", "20"),
    "BENCH_BODY_TIMEOUT": About("body_timeout", "seconds a request's body has to arrive whole", "300"),
    "BENCH_CATALOG_MODELS_DEV_URL": About("catalog_models_dev_url", "the models.dev feed a catalog refresh reads"
                                          " (empty leaves it out)", "https://mirror.example.com/api.json"),
    "BENCH_CATALOG_OPENROUTER_URL": About("catalog_openrouter_url", "the OpenRouter model list a catalog refresh"
                                          " reads (empty leaves it out)", "https://mirror.example.com/models"),
    "BENCH_CATALOG_FREELLMAPI_URL": About("catalog_freellmapi_url", "a FreeLLMAPI feed of free-tier limits, read by a"
                                          " catalog refresh", "https://freellm.example.com/feed.json"),
    "BENCH_SCHEDULER_TICK": About("scheduler_tick", "seconds between the scheduler's looks at its setting and the"
                                  " clock", "5"),
    "BENCHWARMERS_DATABASE_URL": About("database_url", "a shared PostgreSQL store instead of SQLite in the data"
                                       " folder (the password is never printed)",
                                       "postgresql://bench:secret@db.example.com:5432/benchwarmers",
                                       shown="postgresql://bench:<password>@db.example.com:5432/benchwarmers"),
}
# what each command leaves out: the demo runs from a temporary folder; the gateway takes --port
LEFT_OUT = {"demo": ("BENCHWARMERS_HOME", "BENCHWARMERS_CONFIG", "BENCHWARMERS_DATABASE_URL"),
            "gateway": ("BENCH_PORT",), "serve": ()}
NOT_IN_DEMO = LEFT_OUT["demo"]


class _Recording(dict[str, str]):
    """An empty environment that writes down every name it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self.asked:
            self.asked.append(key)
        return default


def variables() -> list[str]:
    """Every variable ``Settings.from_env`` reads, in the order it reads them (its own, not the OS's
    folders or the proxies: those are httpx's and the platform's)."""
    env = _Recording()
    Settings.from_env(env)
    return [name for name in env.asked if name.startswith(PREFIXES)]


def _defaults(env: Mapping[str, str]) -> Settings:
    """The settings with none of the server's variables set, the OS's folders as this machine has them."""
    return Settings.from_env({k: v for k, v in env.items() if not k.startswith(PREFIXES)})


def _default_text(name: str, defaults: Settings) -> str:
    about = ABOUT.get(name)
    if about is None or about.field not in {f.name for f in fields(Settings)}:
        return ""
    value = getattr(defaults, about.field)
    if isinstance(value, bool):
        return "on" if value else "off"
    if value in (None, "", ()):
        return "unset"
    return str(value)


def lines(command: str, env: Mapping[str, str] = os.environ) -> Iterator[str]:
    """The help's environment section for ``serve`` or ``demo``: each variable, what it does, its
    default and an example."""
    defaults = _defaults(env)
    for name in variables():
        if name in LEFT_OUT[command]:
            continue
        about = ABOUT.get(name)
        does = about.does if about else "(not described yet)"
        yield f"  {name}"
        yield from (f"      {text}" for text in textwrap.wrap(does, 90))
        yield f"      default: {_default_text(name, defaults) or '-'}"
        if about:
            yield f"      e.g. {name}={about.shown or about.example} benchwarmers {command}"
    yield "  BENCHWARMERS_KEY_<NAME>"
    yield "      the key of endpoint (or key name) <name>, upper case, '-' written '_'; kept in the environment"
    yield f"      e.g. BENCHWARMERS_KEY_OPENROUTER=\"$(pass show openrouter)\" benchwarmers {command}"
    yield "  HTTPS_PROXY, HTTP_PROXY, ALL_PROXY"
    yield "      outbound calls go through the proxy they name (httpx reads them)"


def epilog(command: str, env: Mapping[str, str] = os.environ) -> str:
    if command == "demo":
        head = ("The demo serves five simulated models and a 'demo' collection from a temporary folder (its data"
                " and its keys), removed when it stops; it never touches your data or config folder, so it ignores "
                + ", ".join(NOT_IN_DEMO) + ".")
        examples = ["benchwarmers demo", "BENCH_PORT=8133 benchwarmers demo",
                    "BENCH_BIND=0.0.0.0 BENCHWARMERS_ADMIN_TOKEN=\"$(python3 -c 'import secrets; "
                    "print(secrets.token_urlsafe(32))')\" benchwarmers demo"]
    elif command == "gateway":
        head = ("Serves only the gateway: every client format, /bench/*, MCP and /health, on a port of its own "
                "(--port, default 8123; BENCH_PORT stays serve's). No dashboard page, login or admin route: each "
                "answers 404. For a server apps reach from elsewhere: run `benchwarmers serve` on loopback for "
                "yourself and `benchwarmers gateway` on the exposed port, on the same data folder.")
        examples = ["benchwarmers gateway", "benchwarmers gateway --port 9000",
                    "BENCHWARMERS_ADMIN_TOKEN=... benchwarmers gateway --bind 0.0.0.0   # gateway keys required",
                    "benchwarmers serve & benchwarmers gateway   # dashboard on 8122, gateway on 8123"]
    else:
        head = ("Serves the gateway, the admin API, the dashboard and MCP on one port, from the data folder. Every "
                "setting is an environment variable, read once at start; one that cannot be used is refused in one "
                "line, before anything is made.")
        examples = ["benchwarmers serve", "BENCH_PORT=8133 benchwarmers serve   # then: BENCH_PORT=8133 bench status",
                    "BENCHWARMERS_HOME=~/bench-data benchwarmers serve",
                    "BENCH_BIND=0.0.0.0 BENCHWARMERS_ADMIN_TOKEN=... BENCHWARMERS_PUBLIC_URL=https://bench.example.com "
                    "benchwarmers serve"]
    return "\n".join([*textwrap.wrap(head, 96), "", "environment:", *lines(command, env), "",
                      "examples:", *(f"  {e}" for e in examples)])
