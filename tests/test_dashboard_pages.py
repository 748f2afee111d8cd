"""The dashboard's pages over HTTP: every page in the sidebar, the headers on every response
(this origin only), escaped values, static files from the package, the page registry's rules,
and the login redirect (303 for pages, 401 for /api/*)."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchwarmers_mcp import routes
from benchwarmers_mcp.routes import is_page
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import facts as fact_store
from benchwarmers_mcp.web import site as site_module
from benchwarmers_mcp.web.assets import Assets
from benchwarmers_mcp.web.registry import Page, discover, sidebar
from benchwarmers_mcp.web.registry import discover as real_discover
from benchwarmers_mcp.web.site import safe_next
from tests.catalog.kit import FakeFeeds, models_dev_doc
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback

SIDEBAR = ["At a glance", "Ask", "Ratings", "Collections", "Endpoints", "Models", "Discover", "Benchmarks", "Quotas", "Logs", "Health",
           "Settings", "Info"]
TOKEN = "a-long-enough-admin-token-for-tests"


def links(html: str) -> list[str]:
    nav = html.split('<nav class="sidebar"', 1)[1].split("</nav>", 1)[0]
    return re.findall(r'<a href="/[^"]*"(?: aria-current="page")?>([^<]+)</a>', nav)


def test_every_page_is_in_the_sidebar_in_order_and_answers(api: httpx.Client) -> None:
    pages = discover()
    assert [p.title for p in pages] == SIDEBAR
    assert [g for g, _ in sidebar(pages)] == ["Bench", "Gateway", "Observe", "Control"]
    for page in pages:
        reply = api.get(page.path)
        assert reply.status_code == 200, (page.path, reply.text[:300])
        assert reply.headers["content-type"].startswith("text/html")
        csp = reply.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert reply.headers["x-frame-options"] == "DENY"
        assert links(reply.text) == ["Benchwarmers", *SIDEBAR]  # the brand, then every page
        assert f'aria-current="page">{page.title}<' in reply.text
        assert "<script>" not in reply.text and " style=" not in reply.text  # no inline script or style
        assert not re.search(r'(src|href)="(https?:)?//', reply.text)  # nothing from another host


def test_the_root_is_the_dashboard_and_leads_the_first_run(api: httpx.Client) -> None:
    html = api.get("/").text
    assert "<h1>At a glance</h1>" in html and "Add your first endpoint" in html
    assert 'type="password"' in html and 'data-api="/api/endpoint/try"' in html


def test_values_are_escaped(api: httpx.Client) -> None:
    api.post("/api/endpoint", json={"name": "sim", "api": "simulated"})
    alias = api.post("/api/model/register", json={"served": "simulated/sage", "endpoint": "sim"}).json()["model"]["alias"]
    evil = '<script>alert("x")</script>'
    assert api.post("/api/collection", json={"name": "core", "members": [alias], "description": evil}).status_code == 201
    html = api.get("/collections").text
    assert evil not in html and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html


def test_static_files_come_from_the_package_cached_by_version(api: httpx.Client) -> None:
    html = api.get("/quotas").text
    src = re.search(r'src="(/static/vendor/uplot/uPlot\.iife\.min\.js\?v=[0-9a-f]+)"', html)
    assert src, "uPlot is vendored and linked from this server"
    reply = api.get(src.group(1), headers={"Accept-Encoding": "gzip"})
    assert reply.status_code == 200 and "immutable" in reply.headers["cache-control"]
    assert reply.headers["content-type"].startswith("text/javascript") and "uPlot" in reply.text
    assert reply.headers["content-security-policy"].startswith("default-src 'self'")
    tag = reply.headers["etag"]
    assert api.get("/static/app.css", headers={"If-None-Match": tag}).status_code == 200
    assert api.get(src.group(1).split("?")[0], headers={"If-None-Match": tag}).status_code == 304
    assert api.get("/static/nothing.js").status_code == 404
    assert api.get("/static/../pyproject.toml").status_code in (400, 404)
    licence = api.get("/static/vendor/uplot/LICENSE.txt")
    assert licence.status_code == 200 and "MIT" in licence.text


def test_a_page_is_gzipped_when_the_browser_takes_it(api: httpx.Client) -> None:
    raw = api.get("/logs", headers={"Accept-Encoding": "gzip"})
    assert raw.headers.get("content-encoding") == "gzip"
    assert "<h1>Logs</h1>" in raw.text
    with api.stream("GET", "/logs", headers={"Accept-Encoding": "gzip"}) as r:
        body = b"".join(r.iter_raw())
    assert b"<h1>Logs</h1>" in gzip.decompress(body)


def test_every_shipped_asset_is_listed_for_the_wheel() -> None:
    assets = Assets()
    assert {"app.js", "app.css", "ask.js", "charts.js", "vendor/uplot/uPlot.iife.min.js",
            "vendor/uplot/uPlot.min.css", "vendor/uplot/LICENSE.txt"} <= set(assets.files)
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    for pattern in ('"templates/*.html"', '"static/*"', '"static/vendor/uplot/*"'):
        assert pattern in pyproject
    assert all(n.count("/") == 0 or n.startswith("vendor/uplot/") for n in assets.files)


async def _load(view):  # a page loader for the registry tests
    return {}


@pytest.mark.parametrize(("path", "group", "live", "words"), [
    ("/models", "Bench", frozenset(), "gateway"),
    ("/v1/anything", "Bench", frozenset(), "gateway"),
    ("/api/thing", "Bench", frozenset(), "/api"),
    ("/static", "Bench", frozenset(), "/static"),
    ("/fine", "Elsewhere", frozenset(), "group"),
    ("/fine", "Bench", frozenset({"weather"}), "event kinds"),
])
def test_a_page_must_have_a_path_group_and_events_of_its_own(path: str, group: str, live: frozenset,
                                                             words: str) -> None:
    with pytest.raises(ValueError, match=words):
        Page(path, "Thing", group, 1, "thing.html", _load, live=live)


def test_login_targets_stay_on_this_server() -> None:
    assert safe_next("/collections") == "/collections"
    for bad in ("//evil.example", "https://evil.example/", "/\\evil", "javascript:alert(1)", "/a\nb"):
        assert safe_next(bad) == "/"
    assert is_page("/") and is_page("/ask") and not is_page("/api/status") and not is_page("/v1/models")


@pytest.fixture
def guarded(settings: Settings, net: Loopback) -> Iterator[httpx.Client]:
    with net.client(base_url=serve_gateway(net, settings, admin_token=TOKEN), timeout=30) as client:
        yield client


def test_with_a_token_pages_redirect_and_the_api_refuses(guarded: httpx.Client, net: Loopback) -> None:
    page = guarded.get("/logs", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login?next=/logs"
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    api = guarded.get("/api/logs")
    assert api.status_code == 401 and api.json()["error"]["message"]
    assert guarded.get("/login").status_code == 200
    assert guarded.get("/static/app.css").status_code == 200  # the login page's own assets
    assert guarded.get("/v1/models").status_code == 401  # gateway routes keep their own answer
    session = guarded.post("/login", json={"token": TOKEN})
    cookie = session.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    with net.client(base_url=str(guarded.base_url), cookies=session.cookies) as client:
        assert client.get("/logs").status_code == 200
        assert "Log out" in client.get("/").text
        assert client.get("/login").text.count("You are logged in") == 1


def test_every_page_is_answered_by_the_route_tables_one_page_entry() -> None:
    """No page has a line in routes.py: the table's ``/{page:page}`` entry answers each, as admin
    with the ``page`` error shape, and no other entry is hidden by it."""
    for page in discover():
        assert routes.find(page.path) is routes.PAGES, page.path
        assert routes.access_class(page.path) == "admin" and routes.shape_of(page.path) == "page"
    assert [e for e in routes.TABLE if e.handler == routes.PAGES.handler] == [routes.PAGES]
    assert routes.table_problems(routes.TABLE) == []
    for path in ("/health", "/login", "/logout", "/mcp", "/models", "/responses", "/completions", "/v1", "/bench",
                 "/api", "/static"):
        assert routes.find(path) is not routes.PAGES, path  # a route's own path, or no route at all


def test_a_new_page_is_one_module_and_one_template(api: httpx.Client, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A page module the registry finds is served at its path and listed in the sidebar, with
    nothing added to the route table (``site()`` gathers the pages on first use)."""
    package = tmp_path / "more_pages"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "checks.py").write_text(
        "from benchwarmers_mcp.web.registry import Page\n\n"
        "async def load(view):\n    return {'message': 'every probe answered'}\n\n"
        "PAGE = Page('/probe-notes', 'Notes', 'Observe', 40, 'error.html', load, live=frozenset({'alert'}))\n")
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setattr(site_module, "discover", lambda: real_discover() + real_discover("more_pages"))
    site_module.site.cache_clear()
    try:
        reply = api.get("/probe-notes")
        assert reply.status_code == 200 and "every probe answered" in reply.text
        live = reply.text.split('data-live="', 1)[1].split('"', 1)[0].split()
        assert "<h1>Notes</h1>" in reply.text and "alert" in live  # its own, with the banner's and chip's
        after = SIDEBAR.index("Health") + 1  # the last of its group (Observe, order 40)
        assert links(api.get("/").text) == ["Benchwarmers", *SIDEBAR[:after], "Notes", *SIDEBAR[after:]]
    finally:
        site_module.site.cache_clear()


def test_a_path_no_page_has_is_a_404_page(api: httpx.Client) -> None:
    reply = api.get("/nothing-here")
    assert reply.status_code == 404 and reply.headers["content-type"].startswith("text/html")
    assert "no page at /nothing-here" in reply.text and links(reply.text) == ["Benchwarmers", *SIDEBAR]
    assert reply.headers["content-security-policy"].startswith("default-src 'self'")
    assert api.get("/ask/deeper").status_code == 404  # pages are one segment: no route, the default 404


def _facts(html: str, alias: str) -> dict[str, tuple[str, str]]:
    """The Models page's facts dialog of one model: fact -> (value, source)."""
    dialog = html.split(f'id="facts-{alias}"', 1)[1].split("</dialog>", 1)[0]
    return {f: (v, s) for f, v, s in re.findall(
        r'<tr data-fact="([a-z_]+)"><th scope="row">[^<]+</th><td>([^<]*)</td>\s*<td><span class="chip src-[a-z]+">'
        r'([a-z]+)</span>', dialog)}


def test_the_models_page_shows_each_fact_with_its_source(settings: Settings, net: Loopback,
                                                         fake: FakeUpstream) -> None:
    """Every fact with the source that won it, as ``store.facts`` layers them: the shipped catalog,
    what the user set, what the model's own errors taught, and the catalog once a refresh replaced
    the snapshot ("refreshed"), for a model on its provider's own endpoint (a refresh changes only
    the facts of the provider a feed names: ``catalog/test_refresh_scope.py``)."""
    def bigger(provider: str, model: str, raw: dict) -> None:
        if model == "gpt-4o-mini":
            raw["limit"]["output"] = 20000

    feeds = FakeFeeds(models_dev=models_dev_doc(("openai",), change=bigger))
    base = net.serve(feeds.app())
    gateway = serve_gateway(net, settings, catalog_models_dev_url=f"{base}/api.json", catalog_openrouter_url="",
                            catalog_freellmapi_url="")
    fake.served = ["gpt-4o-mini"]
    openai = net.serve_as(fake.app(), "https://api.openai.com") + "/v1"
    with net.client(base_url=gateway, timeout=60) as api:
        assert api.post("/api/endpoint", json={"name": "openai", "base": openai, "key": "sk-local-0123456789abc"}
                        ).status_code == 201
        alias = api.post("/api/model/register", json={"served": "gpt-4o-mini", "endpoint": "openai"}).json()["model"]["alias"]
        shipped = _facts(api.get("/registered").text, alias)
        assert shipped["context_window"] == ("128,000", "catalog") and shipped["max_output"] == ("16,384", "catalog")
        assert shipped["tools"] == ("yes", "catalog") and shipped["input_modalities"] == ("text, image, pdf", "catalog")

        assert api.post("/api/model", json={"alias": alias, "context_window": 64000}).status_code == 200

        async def learn() -> None:  # what a "does not support tools" error teaches (catalog/learned.py's path)
            async with Database(settings.db_path) as db, db.transaction() as tx:
                await fact_store.learn(tx, alias, "tools", False, "does not support tools")
                await fact_store.recompute(tx, alias)

        net.call(learn)
        assert api.post("/api/catalog/refresh", json={}).status_code == 200 and feeds.hits == ["models.dev"]
        html = api.get("/registered").text
        now = _facts(html, alias)
        assert now["context_window"] == ("64,000", "you") and now["tools"] == ("no", "learned")
        assert now["max_output"] == ("20,000", "refreshed")  # the refreshed models.dev, not the snapshot
        dialog = html.split(f'id="facts-{alias}"', 1)[1].split("</dialog>", 1)[0]
        window = dialog.split('data-fact="context_window"', 1)[1].split("</tr>", 1)[0]
        assert "128,000 (refreshed)" in window  # what the user's value overrides
        assert "does not support tools" in dialog.split('data-fact="tools"', 1)[1].split("</tr>", 1)[0]
        row = html.split(f"<th scope=\"row\">{alias}<br>", 1)[1].split("</tr>", 1)[0]  # the table names each source
        assert '64k<br><span class="muted src">you</span>' in row and 'no<br><span class="muted src">learned</span>' in row


def test_sizes_read_as_people_write_them() -> None:
    from benchwarmers_mcp.web.render import tokens

    assert [tokens(v) for v in (16384, 131072, 128000, 200000, 1048576, 1500, 500, None)] == [
        "16k", "128k", "128k", "200k", "1M", "1.5k", "500", "—"]


def test_a_rating_weighs_whole_verdicts_as_whole_numbers() -> None:
    from benchwarmers_mcp.web.render import weight

    assert [weight(v) for v in (10.0, 9.996, 9.6, 0.0, None)] == ["10", "10", "9.6", "0", "0"]
