"""Who may call: the policy read from Settings, and the start-up refusal.

Authentication is decided by the route, never by what a request carries. The route table
(``routes.py``) gives each path its access class:

- **gateway** routes (``/v1/...``, ``/v1beta/...``, ``/bench/...``, Ollama's ``/api/`` names, ``/mcp``,
  and OpenAI's paths without ``/v1``) take gateway keys when keys are required
  (``BENCHWARMERS_REQUIRE_KEYS`` or an admin token);
- **admin** routes (the admin API, the dashboard, and any path no route matches) take the login
  cookie or the admin token as Bearer when ``BENCHWARMERS_ADMIN_TOKEN`` is set;
- **open** routes (``/health``, ``/login``, ``/logout``, the dashboard's ``/static/`` files) take nothing.

Every request, whatever its class, passes the Host allow-list and, when it writes, the
same-origin JSON checks (guard.py).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from benchwarmers_mcp.settings import Settings, value_problems

MIN_TOKEN = 16


def is_loopback(bind: str) -> bool:
    name = bind.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def has_port(host: str) -> bool:
    """``host:port`` (an IPv6 literal's own colons do not count)."""
    return bool(re.search(r":\d{1,5}$", host)) and not host.endswith("]")


def _names(settings: Settings) -> dict[str, frozenset[str]]:
    """Every Host this server answers to, each with the schemes its pages are served over: ``http``
    for the loopback names (the server's own socket speaks nothing else); the public URL's scheme
    for its host; ``http`` and the public URL's scheme for ``BENCH_ALLOWED_HOSTS`` (a LAN name, or a
    second name behind the same proxy)."""
    port = settings.port
    names: dict[str, set[str]] = {}

    def add(host: str, *schemes: str) -> None:
        names.setdefault(host, set()).update(schemes)

    public = urlsplit(settings.public_url) if settings.public_url else None
    public_scheme = public.scheme.lower() if public else "http"
    for h in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", *(
            ("127.0.0.1", "localhost", "[::1]") if port == 80 else ())):
        add(h, "http")
    for entry in settings.allowed_hosts:
        h = entry.strip().lower()
        for form in ({h} if has_port(h) else {h, f"{h}:{port}"}):
            add(form, "http", public_scheme)
    if public:
        netloc, default = public.netloc.lower(), 443 if public_scheme == "https" else 80
        forms = {netloc}
        if has_port(netloc):
            if netloc.endswith(f":{default}"):
                forms.add(netloc.rsplit(":", 1)[0])
        else:
            forms.add(f"{netloc}:{default}")
        for form in forms:
            names[form] = {public_scheme}  # the public host is served over its scheme only
    return {h: frozenset(schemes) for h, schemes in names.items()}


def origin_of(scheme: str, netloc: str) -> str | None:
    """``scheme://host[:port]`` as a browser writes an Origin (lower case, no default port), or
    None when it is not one (a path, a user, a bad port, a scheme other than http(s))."""
    parts = urlsplit(f"{scheme}://{netloc}".lower())
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def admin_token_of(settings: Settings) -> str | None:
    """The admin token as every check sees it: surrounding whitespace stripped (a client strips what
    it sends), ``None`` when unset. A token of whitespace only is ``""``: set, and refused at start-up
    as too short, never taken for "no token"."""
    return None if settings.admin_token is None else settings.admin_token.strip()


@dataclass(frozen=True)
class Policy:
    """What the guard enforces, computed once from Settings."""

    hosts: frozenset[str]
    origins: frozenset[str]  # this server's own pages' origins (``origin_of``): scheme and host alike
    cors_origins: frozenset[str]
    admin_token: str | None
    keys_required: bool
    max_body: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Policy:
        names = _names(settings)
        return cls(
            hosts=frozenset(names),
            origins=frozenset(o for h, schemes in names.items() for o in (origin_of(s, h) for s in schemes) if o),
            cors_origins=frozenset(o.strip().rstrip("/").lower() for o in settings.allowed_origins),
            admin_token=admin_token_of(settings),
            keys_required=keys_required(settings),
            max_body=settings.max_body,
        )

    def host_allowed(self, host: str) -> bool:
        return host.lower() in self.hosts

    def same_origin(self, origin: str) -> bool:
        """An Origin that is one of this server's own: its scheme and its host (``origins``), so
        ``http://`` of a host served over https is another origin."""
        parts = urlsplit(origin.strip())
        if parts.path or parts.query or parts.fragment:
            return False
        return origin_of(parts.scheme, parts.netloc) in self.origins

    def cors_allowed(self, origin: str) -> bool:
        return origin.strip().rstrip("/").lower() in self.cors_origins


def keys_required(settings: Settings) -> bool:
    """Gateway routes want a key when asked to, and always once an admin token guards the server."""
    return bool(settings.require_keys or settings.admin_token is not None)


def secure_cookie(settings: Settings) -> bool:
    """The login cookie is Secure when the server is reached over https."""
    return bool(settings.public_url and settings.public_url.lower().startswith("https://"))


def startup_problems(settings: Settings) -> list[str]:
    """Why this configuration must not serve (empty when it may). Never quotes a secret."""
    problems = []
    token = admin_token_of(settings)
    if not is_loopback(settings.bind) and token is None:
        problems.append(f"BENCH_BIND={settings.bind} is beyond loopback: set BENCHWARMERS_ADMIN_TOKEN "
                        f"({MIN_TOKEN} or more characters) so the dashboard wants a login and the gateway keys")
    if token is not None and len(token) < MIN_TOKEN:
        problems.append(f"BENCHWARMERS_ADMIN_TOKEN is shorter than {MIN_TOKEN} characters (not counting spaces "
                        "around it); the length is the only defence against guessing, so use a longer one")
    return problems + value_problems(settings)  # the public URL, hosts and origins, as the settings read them


def describe(settings: Settings) -> dict[str, object]:
    """The Settings view: whether each secret is set, never its value."""
    return {
        "admin_token_set": settings.admin_token is not None,
        "require_keys": bool(settings.require_keys),
        "keys_required": keys_required(settings),
        "bind": settings.bind,
        "port": settings.port,
        "allowed_hosts": list(settings.allowed_hosts),
        "allowed_origins": list(settings.allowed_origins),
        "public_url": settings.public_url,
    }
