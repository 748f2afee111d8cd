"""Issue 11, the one route table: the app has no route the table does not declare, every route
reaches its face through the table's access check, and the guard's classes, the error shapes, the
404 listing and the CLI's admin rule all come from the table."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Match, Route

from benchwarmers_mcp import app as app_module
from benchwarmers_mcp import routes
from benchwarmers_mcp.app import Endpoint, create_app, mount
from benchwarmers_mcp.cli import remote
from benchwarmers_mcp.gateway.shapes import renderer
from benchwarmers_mcp.routes import TABLE, Entry, access_class, is_admin_path, shape_of, table_problems
from benchwarmers_mcp.settings import Settings
from tests.kits.security import app_client

pytestmark = pytest.mark.anyio
PACKAGE = Path(routes.__file__).parent


def sample(entry: Entry) -> str:
    """A concrete path the entry's route answers (a Gemini method where the path takes one)."""
    return entry.path.replace("{rest:path}", "core:generateContent" if "POST" in entry.methods else "core")


def strays(app: Starlette) -> list[str]:
    """Routes not mounted from a table entry (a face that added its own beside the table)."""
    return [getattr(r, "path", repr(r)) for r in app.routes
            if not (isinstance(r, Route) and isinstance(r.endpoint, Endpoint) and r.endpoint.entry in TABLE)]


def test_the_app_has_exactly_the_routes_the_table_declares(settings: Settings) -> None:
    mounted = create_app(settings).routes
    assert strays(create_app(settings)) == []
    assert len(mounted) == len(TABLE)
    for route, entry in zip(mounted, TABLE, strict=True):
        assert isinstance(route, Route) and isinstance(route.endpoint, Endpoint), route
        assert route.endpoint.entry is entry, "every route is mounted from its own table entry"
        assert route.path == entry.path and set(entry.methods) <= (route.methods or set())


def test_a_route_declared_outside_the_table_is_caught(settings: Settings) -> None:
    """What the test above would see if a face added its own route beside the table."""
    app = create_app(settings)
    app.router.routes.append(Route("/v1/side-door", app_module.health, methods=["GET"]))
    app.router.routes.append(Route("/v1/sneaky", Endpoint(Entry("/v1/sneaky", ("GET",), "m:f", "open", "openai"))))
    assert strays(app) == ["/v1/side-door", "/v1/sneaky"]


def test_every_handler_resolves_to_a_request_handler_or_an_asgi_app() -> None:
    for route in mount():
        assert isinstance(route, Route) and isinstance(route.endpoint, Endpoint)
        loaded = route.endpoint.load()
        module, _, name = route.endpoint.entry.handler.partition(":")
        assert callable(loaded) and name and module.startswith("benchwarmers_mcp."), route.path
        assert inspect.iscoroutinefunction(loaded) or inspect.iscoroutinefunction(type(loaded).__call__)


def test_the_guard_and_the_router_agree_on_every_route() -> None:
    """Each route's sample path is routed to that route, and the guard judges it by its declared class
    and renders its refusals in its declared shape."""
    router = Starlette(routes=mount()).router
    for entry in TABLE:
        path, method = sample(entry), entry.methods[0]
        scope = {"type": "http", "path": path, "method": method}
        first = next(r for r in router.routes if r.matches(scope)[0] is Match.FULL)
        assert isinstance(first, Route) and isinstance(first.endpoint, Endpoint)
        assert first.endpoint.entry is entry, (method, path)
        assert access_class(path) == entry.access, path
        shape = shape_of(path)
        assert shape == entry.shape or (entry.shape == routes.MODELS and shape == "gemini" and ":" in path)


def test_every_shape_has_a_renderer() -> None:
    for shape in {e.shape for e in TABLE if e.shape != routes.MODELS} | {"openai", "anthropic", "gemini"}:
        module = routes.RENDERERS[shape]
        assert renderer(shape).__module__ == module, shape


def test_a_broken_table_is_refused() -> None:
    good = Entry("/v1/x", ("POST",), "m:f", "gateway", "openai")
    assert table_problems((good,)) == []
    twice = table_problems((good, Entry("/v1/x", ("POST",), "m:g", "gateway", "openai")))
    assert twice == ["POST /v1/x is declared twice"]
    split = table_problems((good, Entry("/v1/x/", ("GET",), "m:g", "admin", "openai")))
    assert split == ["/v1/x/ is declared with two access classes or shapes"]
    hidden = table_problems((Entry("/v1/{name}", ("GET",), "m:g", "gateway", "openai"), good))
    assert hidden == ["/v1/x is hidden by /v1/{name}"]
    assert table_problems((Entry("/y", ("GET",), "m:f", "secret", "openai"),))  # type: ignore[arg-type]
    assert table_problems(TABLE) == []


def test_a_path_no_route_matches_is_admin_outside_the_gateway_areas() -> None:
    for path in ("/", "/ui/", "/api/chatter", "/apichat", "/api/nothing", "/health/x", "/login/x", "/mcpx"):
        assert access_class(path) == "admin", path
    for path in ("/v1", "/v1/nothing-here", "/v1beta/x", "/bench", "/bench/later", "/models/x"):
        assert access_class(path) == "gateway", path
    for entry in TABLE:  # an area never contradicts the routes in it
        if any(entry.literal == a or entry.literal.startswith(a + "/") for a in routes.AREAS):
            assert entry.access == "gateway", entry.path


def test_unknown_paths_take_the_shape_of_the_route_above_them() -> None:
    assert shape_of("/v1/messages/batches") == "anthropic"
    assert shape_of("/v1beta/tunedModels") == "gemini"
    assert shape_of("/api/chat/x") == "ollama"
    assert shape_of("/v1/nothing") == shape_of("/api/nothing") == "openai"
    assert shape_of("/v1/models/core:streamGenerateContent") == "gemini"
    assert shape_of("/v1/models/core") == shape_of("//v1//models/") == routes.MODELS


async def test_the_404_names_the_tables_routes(settings: Settings) -> None:
    async with app_client(settings) as client:
        r = await client.get("/v1/nothing-here")
    message = r.json()["error"]["message"]
    assert r.status_code == 404 and message.startswith("no route GET /v1/nothing-here; routes: ")
    for entry in TABLE:
        if entry.access != "admin":
            assert re.sub(r"\{[^}]+\}", "...", routes.normal_path(entry.path)) in message, entry.path
    assert message.endswith("and /api/... (admin)")


def test_the_clis_admin_rule_is_the_tables() -> None:
    assert remote.is_admin_path is is_admin_path
    for entry in TABLE:
        assert is_admin_path(sample(entry) + "?x=1") == (entry.access in ("admin", "metrics")), entry.path
    assert is_admin_path("/api/tags?name=x") is False and is_admin_path("/api/nothing") is True


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return found | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}


def test_the_table_is_plain_data_the_cli_reads_without_the_engine() -> None:
    assert _imports(PACKAGE / "routes.py") <= {"__future__", "re", "dataclasses", "typing"}
    ours = {m for m in _imports(PACKAGE / "cli" / "remote.py") if m.startswith("benchwarmers_mcp")}
    # the table's data and the one client of a running server, which itself imports nothing of ours
    # but the settings, to find the server where `benchwarmers serve` listens (issue 31.7)
    assert ours == {"benchwarmers_mcp", "benchwarmers_mcp.routes", "benchwarmers_mcp.client"}
    assert {m for m in _imports(PACKAGE / "client.py") if m.startswith("benchwarmers_mcp")} == {
        "benchwarmers_mcp.settings"}


async def test_handlers_load_on_first_use(settings: Settings) -> None:
    app = create_app(settings)
    endpoints = [r.endpoint for r in app.routes if isinstance(r, Route) and isinstance(r.endpoint, Endpoint)]
    assert all(e._app is None for e in endpoints), "nothing is imported for a route before it is asked"
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://127.0.0.1:{settings.port}") as c:
            assert (await c.get("/health")).status_code == 200
    assert [e.entry.path for e in endpoints if e._app is not None] == ["/health"]
