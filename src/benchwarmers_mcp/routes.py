"""The one route table. Each route is one ``Entry``: path, methods, handler, access class and error
shape. Everything else that needs those facts reads them here:

- the guard's access class for a path (``access_class``): ``open`` takes nothing, ``gateway`` a
  gateway key when keys are required, ``admin`` the login cookie or the admin token;
- the wire shape a path's errors take (``shape_of``; ``gateway/shapes.py`` renders it), so even a
  Host or key refusal reaches a client in its own format;
- the routes a 404 names (``listing``) and the CLI's rule for the admin token (``is_admin_path``);
- the app's Starlette routes (``app.mount``), and the gateway-only server's (``GATEWAY_TABLE``:
  the gateway routes and ``/health``, for ``benchwarmers gateway``).

Plain data: this module imports nothing of the package and no web framework, so the CLI (a thin
HTTP client) and the guard read the table without loading a handler. A handler is a
``"module:attribute"`` string that the app imports on the route's first request, so a dialect or
the MCP server costs nothing at start-up until something calls it.

The dashboard's pages are one entry (``PAGES``, ``/{page:page}``): its ``page`` parameter kind
(``CONVERTORS``, registered with Starlette by ``app.mount``) is the root or a path whose first
segment no other route and no gateway area begins with (``/ask``, ``/panels/<id>``), so it hides
nothing, and the web registry answers whichever pages exist: a new page adds no line here.

A path no route matches is ``admin``: closed by default. Only inside a gateway area (``AREAS``:
``/v1``, ``/v1beta``, ``/bench``, ``/models``) is it a gateway path, so a client's typo is judged by
its gateway key and answered 404 in its own shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# ``metrics``: the admin's credentials, or the metrics token (BENCH_METRICS_TOKEN) as Bearer
AccessClass = Literal["open", "gateway", "admin", "metrics"]
ACCESS_CLASSES: tuple[AccessClass, ...] = ("open", "gateway", "admin", "metrics")

# Which module renders each shape's errors (``render_error``), imported when first needed.
# ``models`` is the family three SDKs share (``/v1/models``): told apart by headers, see shapes.py.
RENDERERS = {
    "openai": "benchwarmers_mcp.inbound",  # the default error body (OpenAI chat's shape)
    "responses": "benchwarmers_mcp.gateway.responses",
    "completions": "benchwarmers_mcp.gateway.completions",
    "anthropic": "benchwarmers_mcp.gateway.anthropic",
    "gemini": "benchwarmers_mcp.gateway.gemini",
    "ollama": "benchwarmers_mcp.gateway.ollama",
    "mcp": "benchwarmers_mcp.mcp.server",
    "page": "benchwarmers_mcp.web.refusal",  # the dashboard's pages: no login, a 303 to /login
}
MODELS = "models"
DEFAULT_SHAPE = "openai"
# Under these prefixes a path no route matches is still a gateway path, with this error shape.
AREAS = {"/v1": "openai", "/v1beta": "gemini", "/bench": "openai", "/models": "openai"}

_PARAM = re.compile(r"\{(\w+)(?::(\w+))?\}")
# Parameter kinds beyond Starlette's own, as regexes (``app.mount`` registers each with Starlette,
# so the router and this table match the same paths). Filled below, once the table's paths are known.
CONVERTORS: dict[str, str] = {}


def normal_path(path: str) -> str:
    """Duplicate and trailing slashes folded, as the router's neighbours see them."""
    if path.startswith("/") and "//" not in path and (path == "/" or not path.endswith("/")):
        return path
    folded = re.sub(r"/{2,}", "/", path or "/")
    return folded.rstrip("/") or "/"


def _pattern(path: str) -> re.Pattern[str]:
    """Starlette's path syntax as a regex: ``{name}`` is one segment, ``{name:path}`` the rest."""
    out, at = "", 0
    for param in _PARAM.finditer(path):
        kind = param.group(2)
        regex = ".*" if kind == "path" else "[^/]+" if kind in (None, "str") else CONVERTORS[kind]
        out += re.escape(path[at:param.start()]) + regex
        at = param.end()
    return re.compile(out + re.escape(path[at:]))


@dataclass(frozen=True)
class Entry:
    path: str
    methods: tuple[str, ...]
    handler: str  # "module:attribute": a request handler or an ASGI app, imported on first use
    access: AccessClass
    shape: str  # a RENDERERS key, or MODELS
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", _pattern(normal_path(self.path)))

    @property
    def literal(self) -> str:
        """The path up to its first parameter."""
        return normal_path(self.path.split("{", 1)[0])


GET, POST, POST_DELETE = ("GET",), ("POST",), ("POST", "DELETE")
GW = "benchwarmers_mcp.gateway."
ADMIN = "benchwarmers_mcp.admin."
MCP = "benchwarmers_mcp.mcp.server:"
WEB = "benchwarmers_mcp.web."
SUITE = "benchwarmers_mcp.admin.suite:"
HEALTH = "benchwarmers_mcp.admin.health:"

_ROUTES: tuple[Entry, ...] = (
    Entry("/health", GET, "benchwarmers_mcp.app:health", "open", "openai"),
    Entry("/metrics", GET, ADMIN + "metrics:get_metrics", "metrics", "openai"),
    Entry("/login", POST, ADMIN + "access:login", "open", "openai"),
    Entry("/login", GET, WEB + "site:login_page", "open", "openai"),
    Entry("/logout", POST, ADMIN + "access:logout", "open", "openai"),
    # OpenAI chat and its shared model list
    Entry("/v1/chat/completions", POST, GW + "openai_chat:chat_completions", "gateway", "openai"),
    Entry("/chat/completions", POST, GW + "openai_chat:chat_completions", "gateway", "openai"),
    Entry("/v1/models", GET, GW + "model_lists:list_models", "gateway", MODELS),
    Entry("/models", GET, GW + "model_lists:list_models", "gateway", MODELS),
    # /v1/models/<name>:<method> is Gemini's; /v1/models/<name> a lookup by any of three SDKs
    Entry("/v1/models/{rest:path}", POST, GW + "gemini:model_method", "gateway", MODELS),
    Entry("/v1/models/{rest:path}", GET, GW + "model_lists:get_model", "gateway", MODELS),
    Entry("/v1beta/models", GET, GW + "model_lists:gemini_list", "gateway", "gemini"),
    Entry("/v1beta/models/{rest:path}", POST, GW + "gemini:model_method", "gateway", "gemini"),
    Entry("/v1beta/models/{rest:path}", GET, GW + "model_lists:gemini_get", "gateway", "gemini"),
    Entry("/v1/messages", POST, GW + "anthropic:messages", "gateway", "anthropic"),
    Entry("/v1/messages/count_tokens", POST, GW + "anthropic:count_tokens", "gateway", "anthropic"),
    Entry("/v1/responses", POST, GW + "responses:create_response", "gateway", "responses"),
    Entry("/responses", POST, GW + "responses:create_response", "gateway", "responses"),
    Entry("/v1/completions", POST, GW + "completions:completions", "gateway", "completions"),
    Entry("/completions", POST, GW + "completions:completions", "gateway", "completions"),
    # Ollama's names under /api (the admin API keeps clear of them)
    Entry("/api/chat", POST, GW + "ollama:chat", "gateway", "ollama"),
    Entry("/api/generate", POST, GW + "ollama:generate", "gateway", "ollama"),
    Entry("/api/show", POST, GW + "ollama:show", "gateway", "ollama"),
    Entry("/api/tags", GET, GW + "model_lists:ollama_tags", "gateway", "ollama"),
    Entry("/api/version", GET, GW + "ollama:version", "gateway", "ollama"),
    Entry("/api/ps", GET, GW + "ollama:running", "gateway", "ollama"),
    # the bench's own
    Entry("/bench/verdict", POST, GW + "bench_routes:post_verdict", "gateway", "openai"),
    Entry("/bench/pending", POST, GW + "bench_routes:post_pending", "gateway", "openai"),
    Entry("/bench/record", GET, GW + "bench_routes:get_record", "gateway", "openai"),
    Entry("/bench/quotas", GET, ADMIN + "limits:get_quotas", "gateway", "openai"),
    Entry("/bench/remind", POST, MCP + "post_remind", "gateway", "openai"),
    Entry("/bench/ratings", GET, ADMIN + "ratings:get_ratings", "gateway", "openai"),
    Entry("/bench/suggestions", GET, ADMIN + "ratings:get_suggestions", "gateway", "openai"),
    # judging every panel: the list and the inbox, one panel, one route conversation, the count owed,
    # a claim marked on every seat that made it (``admin/panels.py``; the dashboard's twins under /api)
    Entry("/bench/panels", GET, ADMIN + "panels:get_panels", "gateway", "openai"),
    Entry("/bench/panels/{id}", GET, ADMIN + "panels:get_panel", "gateway", "openai"),
    Entry("/bench/conversations/{id}", GET, ADMIN + "panels:get_conversation", "gateway", "openai"),
    Entry("/bench/inbox/count", GET, ADMIN + "panels:get_inbox_count", "gateway", "openai"),
    Entry("/bench/claims", POST, ADMIN + "panels:post_claims", "gateway", "openai"),
    Entry("/bench/suggestions", POST, ADMIN + "ratings:review_suggestions", "gateway", "openai"),
    # MCP, both protocol eras; a trailing slash answers too (never a redirect). No GET: the server
    # opens no stream of its own, so no idle stream holds a stopping server open.
    Entry("/mcp", POST_DELETE, MCP + "mcp_endpoint", "gateway", "mcp"),
    Entry("/mcp/", POST_DELETE, MCP + "mcp_endpoint", "gateway", "mcp"),
    Entry("/v1/mcp", POST_DELETE, MCP + "mcp_endpoint", "gateway", "mcp"),
    Entry("/v1/mcp/", POST_DELETE, MCP + "mcp_endpoint", "gateway", "mcp"),
    # the admin API
    Entry("/api/status", GET, ADMIN + "api:status", "admin", "openai"),
    Entry("/api/endpoints", GET, ADMIN + "endpoints:list_endpoints", "admin", "openai"),
    Entry("/api/endpoint", POST, ADMIN + "endpoints:save_endpoint", "admin", "openai"),
    Entry("/api/endpoint/key", POST, ADMIN + "endpoints:set_key", "admin", "openai"),
    Entry("/api/endpoint/test", POST, ADMIN + "endpoints:test_endpoint", "admin", "openai"),
    Entry("/api/endpoint/remove", POST, ADMIN + "endpoints:remove_endpoint", "admin", "openai"),
    Entry("/api/candidates", POST, ADMIN + "endpoints:candidates", "admin", "openai"),
    Entry("/api/models", GET, ADMIN + "models:list_models", "admin", "openai"),
    Entry("/api/model", POST, ADMIN + "models:change", "admin", "openai"),
    Entry("/api/model/register", POST, ADMIN + "models:register", "admin", "openai"),
    Entry("/api/model/retire", POST, ADMIN + "models:retire", "admin", "openai"),
    Entry("/api/model/restore", POST, ADMIN + "models:restore", "admin", "openai"),
    Entry("/api/collections", GET, ADMIN + "collections:list_collections", "admin", "openai"),
    Entry("/api/collection", POST, ADMIN + "collections:save_collection", "admin", "openai"),
    Entry("/api/collection/remove", POST, ADMIN + "collections:remove_collection", "admin", "openai"),
    Entry("/api/gateway-settings", GET, ADMIN + "collections:get_gateway_settings", "admin", "openai"),
    Entry("/api/gateway-settings", POST, ADMIN + "collections:save_gateway_settings", "admin", "openai"),
    Entry("/api/suggestion/accept", POST, ADMIN + "ratings:accept_suggestion", "admin", "openai"),
    Entry("/api/learning-settings", GET, ADMIN + "ratings:get_learning_settings", "admin", "openai"),
    Entry("/api/learning-settings", POST, ADMIN + "ratings:save_learning_settings", "admin", "openai"),
    Entry("/api/gateway-key", POST, ADMIN + "access:create_key", "admin", "openai"),
    Entry("/api/gateway-keys", GET, ADMIN + "access:list_keys", "admin", "openai"),
    Entry("/api/gateway-key/remove", POST, ADMIN + "access:remove_key", "admin", "openai"),
    Entry("/api/security", GET, ADMIN + "access:security_view", "admin", "openai"),
    Entry("/api/limits", GET, ADMIN + "limits:get_limits", "admin", "openai"),
    Entry("/api/limits", POST, ADMIN + "limits:post_limits", "admin", "openai"),
    Entry("/api/limits/resume", POST, ADMIN + "limits:post_resume", "admin", "openai"),
    # health: alerts ("action needed"), each model's health, probes now, one retry, a held
    # connection's "Retire all"; the scheduler; the onboarding queue
    Entry("/api/alerts", GET, HEALTH + "get_alerts", "admin", "openai"),
    Entry("/api/alerts/dismiss", POST, HEALTH + "dismiss_alert", "admin", "openai"),
    Entry("/api/health", GET, HEALTH + "get_health", "admin", "openai"),
    Entry("/api/probe", POST, HEALTH + "post_probe", "admin", "openai"),
    Entry("/api/model/retry", POST, HEALTH + "post_retry", "admin", "openai"),
    Entry("/api/health/retire-all", POST, HEALTH + "post_retire_all", "admin", "openai"),
    Entry("/api/scheduler", GET, ADMIN + "scheduler:get_scheduler", "admin", "openai"),
    Entry("/api/scheduler", POST, ADMIN + "scheduler:post_scheduler", "admin", "openai"),
    Entry("/api/scheduler/run", POST, ADMIN + "scheduler:post_run", "admin", "openai"),
    Entry("/api/onboarding", GET, ADMIN + "onboarding:get_queue", "admin", "openai"),
    Entry("/api/onboarding", POST, ADMIN + "onboarding:post_batch", "admin", "openai"),
    Entry("/api/onboarding/stop", POST, ADMIN + "onboarding:post_stop", "admin", "openai"),
    Entry("/api/onboarding/clear", POST, ADMIN + "onboarding:post_clear", "admin", "openai"),
    # the catalog: its state, a refresh, Discover, one model's facts, dismissing a candidate
    Entry("/api/catalog", GET, ADMIN + "catalog:catalog_status", "admin", "openai"),
    Entry("/api/catalog/refresh", POST, ADMIN + "catalog:catalog_refresh", "admin", "openai"),
    Entry("/api/discover", GET, ADMIN + "catalog:discover_rows", "admin", "openai"),
    Entry("/api/discover/add", POST, ADMIN + "catalog:discover_add", "admin", "openai"),
    Entry("/api/model/facts", GET, ADMIN + "catalog:model_facts", "admin", "openai"),
    Entry("/api/candidates/dismiss", POST, ADMIN + "catalog:dismiss_candidate", "admin", "openai"),
    # the review suite
    Entry("/api/suite/tasks", GET, SUITE + "list_tasks", "admin", "openai"),
    Entry("/api/suite/task", GET, SUITE + "show_task", "admin", "openai"),
    Entry("/api/suite/promote", POST, SUITE + "promote", "admin", "openai"),
    Entry("/api/suite/repos", GET, SUITE + "list_repos", "admin", "openai"),
    Entry("/api/suite/repos", POST, SUITE + "add_repo", "admin", "openai"),
    Entry("/api/suite/repos/remove", POST, SUITE + "remove_repo", "admin", "openai"),
    Entry("/api/suite/seed", POST, SUITE + "seed_repo", "admin", "openai"),
    Entry("/api/suite/mine", POST, SUITE + "mine_call", "admin", "openai"),
    Entry("/api/suite/rebench", POST, SUITE + "rebench_rows", "admin", "openai"),
    Entry("/api/suite/run", POST, SUITE + "start_run", "admin", "openai"),
    Entry("/api/suite/run", GET, SUITE + "show_run", "admin", "openai"),
    Entry("/api/suite/runs", GET, SUITE + "list_runs", "admin", "openai"),
    Entry("/api/suite/run/stop", POST, SUITE + "stop_run", "admin", "openai"),
    Entry("/api/suite/scores", GET, SUITE + "scores", "admin", "openai"),
    Entry("/api/suite/answers", GET, SUITE + "answers", "admin", "openai"),
    Entry("/api/suite/board", GET, SUITE + "board", "admin", "openai"),
    # the admin API the dashboard added (any client of /api may use it)
    Entry("/api/ask", POST, ADMIN + "ask:ask", "admin", "openai"),
    Entry("/api/events", GET, ADMIN + "events:stream", "admin", "openai"),
    Entry("/api/verdict", POST, ADMIN + "verdicts:post_verdict", "admin", "openai"),
    Entry("/api/panels", GET, ADMIN + "panels:get_panels", "admin", "openai"),
    Entry("/api/panels/{id}", GET, ADMIN + "panels:get_panel", "admin", "openai"),
    Entry("/api/conversations/{id}", GET, ADMIN + "panels:get_conversation", "admin", "openai"),
    Entry("/api/inbox/count", GET, ADMIN + "panels:get_inbox_count", "admin", "openai"),
    Entry("/api/claims", POST, ADMIN + "panels:post_dashboard_claims", "admin", "openai"),
    Entry("/api/settings/retention", GET, ADMIN + "retention:get_retention", "admin", "openai"),
    Entry("/api/settings/retention", POST, ADMIN + "retention:post_retention", "admin", "openai"),
    Entry("/api/logs", GET, ADMIN + "logs:get_logs", "admin", "openai"),
    Entry("/api/stats/usage", GET, ADMIN + "stats:usage", "admin", "openai"),
    Entry("/api/stats/helped", GET, ADMIN + "stats:helped", "admin", "openai"),
    Entry("/api/endpoint/try", POST, ADMIN + "trial:try_endpoint", "admin", "openai"),
    Entry("/api/endpoint/default", GET, ADMIN + "trial:get_default", "admin", "openai"),
    Entry("/api/endpoint/default", POST, ADMIN + "trial:set_default", "admin", "openai"),
    # signing in with a provider (upstream/connect): presets, flows, sign-ins; the browser's way back
    # is open (the provider's redirect carries no SameSite=Strict cookie): its state is the credential
    Entry("/api/connect/presets", GET, ADMIN + "connect:get_presets", "admin", "openai"),
    Entry("/api/connect/start", POST, ADMIN + "connect:start", "admin", "openai"),
    Entry("/api/connect/flow", GET, ADMIN + "connect:get_flow", "admin", "openai"),
    Entry("/api/connect/cancel", POST, ADMIN + "connect:cancel", "admin", "openai"),
    Entry("/api/connect/signins", GET, ADMIN + "connect:list_signins", "admin", "openai"),
    Entry("/api/connect/signout", POST, ADMIN + "connect:sign_out", "admin", "openai"),
    Entry("/connect/callback", GET, ADMIN + "connect:callback", "open", "openai"),
    # hubs (upstream/hubs): their upstreams, keeping the bench in step, adding a model through them
    Entry("/api/hub/upstreams", GET, ADMIN + "hubs:get_upstreams", "admin", "openai"),
    Entry("/api/hub/sync", POST, ADMIN + "hubs:post_sync", "admin", "openai"),
    Entry("/api/hub/register", POST, ADMIN + "hubs:post_register", "admin", "openai"),
    # who calls upstreams (the built-in client or llm's), and free models that work only in their own app
    Entry("/api/client", GET, ADMIN + "provider_settings:get_client", "admin", "openai"),
    Entry("/api/client", POST, ADMIN + "provider_settings:post_client", "admin", "openai"),
    Entry("/api/own-app-free", GET, ADMIN + "provider_settings:get_own_app", "admin", "openai"),
    Entry("/api/own-app-free", POST, ADMIN + "provider_settings:post_own_app", "admin", "openai"),
    # the dashboard's files: open, as the login page needs its stylesheet
    Entry("/static/{rest:path}", GET, WEB + "site:static", "open", "page"),
)


def page_segment(table: tuple[Entry, ...]) -> str:
    """The ``page`` parameter: empty (the root) or segments whose first begins no path of ``table``
    and no gateway area (``ask``, ``panels/p-1``: a page's path parameters are the registry's), so
    the one entry for every page hides no route and no area."""
    taken = sorted({e.literal.split("/")[1] for e in table if e.literal != "/"} | {a.strip("/") for a in AREAS})
    return "(?:(?!(?:" + "|".join(map(re.escape, taken)) + ")(?:/|$))[^/]+(?:/[^/]+)*)?"


CONVERTORS["page"] = page_segment(_ROUTES)
# The dashboard: every page of its registry (``web/pages/``) on one entry, so a new page is a module
# and a template and nothing here. Its errors are the ``page`` shape's: without a login, a 303 to
# ``/login`` that comes back after it.
PAGES = Entry("/{page:page}", GET, WEB + "site:page", "admin", "page")
TABLE: tuple[Entry, ...] = (*_ROUTES, PAGES)


def gateway_table(table: tuple[Entry, ...]) -> tuple[Entry, ...]:
    """What a gateway-only server serves (``benchwarmers gateway``): every gateway route (the
    client formats, ``/bench/*``, MCP) and the open routes that are not the dashboard's (``/health``);
    no page, login, static file, sign-in callback (it goes on to the Endpoints page) or admin route."""
    dashboard = (WEB, ADMIN + "access:", ADMIN + "connect:")
    return tuple(e for e in table if e.access == "gateway" or e.access == "open" and not e.handler.startswith(dashboard))


def serves(table: tuple[Entry, ...], path: str) -> bool:
    """Whether any route of ``table`` matches ``path`` (any method)."""
    p = normal_path(path)
    return any(e.pattern.fullmatch(p) for e in table)


def table_problems(table: tuple[Entry, ...]) -> list[str]:
    """What makes a table unusable: an unknown class or shape, a path and method declared twice, one
    path declared with two classes or shapes (the guard judges a path before any method), or a fixed
    path that a path with parameters also matches (fixed paths are looked up first)."""
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    facts: dict[str, tuple[str, str]] = {}
    for e in table:
        if e.access not in ACCESS_CLASSES or (e.shape not in RENDERERS and e.shape != MODELS):
            problems.append(f"{e.path}: unknown access class {e.access!r} or shape {e.shape!r}")
        for method in e.methods:
            if (e.path, method) in seen:
                problems.append(f"{method} {e.path} is declared twice")
            seen.add((e.path, method))
        if facts.setdefault(e.pattern.pattern, (e.access, e.shape)) != (e.access, e.shape):
            problems.append(f"{e.path} is declared with two access classes or shapes")
        if "{" not in e.path:
            problems += [f"{e.path} is hidden by {p.path}" for p in table
                         if "{" in p.path and p.pattern.fullmatch(e.literal)]
    return problems


if table_problems(TABLE):  # a broken table must not load
    raise RuntimeError("; ".join(table_problems(TABLE)))
GATEWAY_TABLE = gateway_table(TABLE)


_FIXED = {e.literal: e for e in reversed(TABLE) if "{" not in e.path}  # the first entry for each path
_WITH_PARAMS = tuple(e for e in TABLE if "{" in e.path)


def find(path: str) -> Entry | None:
    """The first entry whose path matches (any method)."""
    p = normal_path(path)
    return _FIXED.get(p) or next((e for e in _WITH_PARAMS if e.pattern.fullmatch(p)), None)


def _area(path: str) -> str | None:
    return next((a for a in AREAS if path == a or path.startswith(a + "/")), None)


def access_class(path: str) -> AccessClass:
    """``open``, ``gateway`` or ``admin``: the route's, else ``gateway`` in a gateway area, else ``admin``."""
    p = normal_path(path)
    entry = find(p)
    if entry is not None:
        return entry.access
    return "gateway" if _area(p) else "admin"


def shape_of(path: str) -> str:
    """The shape a path's errors take: the route's; for a path no route matches, the shape of the
    nearest route above it, else its area's, else OpenAI's. A Gemini method on the shared
    ``/v1/models/`` path (``<name>:<method>``) is Gemini's; the rest of that family is ``models``."""
    p = normal_path(path)
    entry = find(p)
    if entry is None:
        above = [e for e in TABLE if p.startswith(e.literal + "/")]
        entry = max(above, key=lambda e: len(e.literal), default=None)
    area = _area(p)
    shape = entry.shape if entry else AREAS[area] if area else DEFAULT_SHAPE
    return "gemini" if shape == MODELS and ":" in p else shape


def takes_query_key(path: str) -> bool:
    """Gemini routes, where google-genai may send the key as ``?key=``."""
    return shape_of(path) == "gemini"


def is_admin_path(path: str) -> bool:
    """Whether a path (with or without a query) takes the admin token rather than a gateway key."""
    return access_class(path.split("?", 1)[0]) in ("admin", "metrics")


def is_page(path: str) -> bool:
    """Whether a path is one the dashboard's page entry answers (``web/registry.py`` checks each page)."""
    return find(path) is PAGES


def listing(table: tuple[Entry, ...] = TABLE) -> str:
    """The routes as a 404 names them: every gateway and open path, then the admin areas."""
    shown = dict.fromkeys(_PARAM.sub("...", normal_path(e.path)) for e in table if e.access != "admin")
    admin = dict.fromkeys(f"/{e.literal.split('/')[1]}/..." for e in table if e.access == "admin" and e is not PAGES)
    return f"{', '.join(shown)}" + (f" and {', '.join(admin)} (admin)" if admin else "")


__all__ = ["ACCESS_CLASSES", "AREAS", "CONVERTORS", "GATEWAY_TABLE", "PAGES", "TABLE", "AccessClass", "Entry",
           "access_class", "find", "gateway_table", "is_admin_path", "is_page", "listing", "normal_path", "page_segment",
           "serves", "shape_of", "table_problems", "takes_query_key"]
