"""Issue 29.4: with every kind of limit set, every page of the dashboard answers, and a page that
fails shows its error inside the page.

Every kind: each limit the Quotas page's own "Set a limit" form offers (rpm, rpd, rpmo, tpm, tpd),
for each connection and each model it lists, posted as the form posts it (``quotas.js``'s
``limitBody``); and every limit the bench learns from upstream: windows a reply's
``x-ratelimit-*`` headers report (requests and tokens, a minute and a day), a connection's window
from the bare headers of a 429, and limits named in a 429's text (Groq's "on tokens per day
(TPD): Limit ..."). Then every page of the registry is opened.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.web import site as site_module
from benchwarmers_mcp.web.registry import discover
from benchwarmers_mcp.web.registry import discover as real_discover
from tests.kits.loopback import Loopback
from tests.kits.store import in_store

SIDEBAR_LINK = re.compile(r'<nav class="sidebar"')


def _answer(model: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"id": "c1", "object": "chat.completion", "created": 0, "model": model,
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": f"{model} answers"},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}},
                        headers=headers or {})


def _refusal(message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": {"message": message, "type": "rate_limit", "code": "rate_limit_exceeded"}},
                        status_code=429, headers=headers or {})


def limited_upstream() -> Starlette:
    """``reporter`` answers with every x-ratelimit-* window; ``tpd-learner`` and ``rpm-learner`` are
    refused with a limit in the text; ``shared`` with a connection's window in bare headers."""
    reset = str(int((time.time() + 3600) * 1000))

    async def chat(request: Request) -> Response:
        model = (await request.json())["model"]
        if model == "reporter":
            return _answer(model, {
                "x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "90",
                "x-ratelimit-reset-requests": "30s", "x-ratelimit-limit-tokens": "50000",
                "x-ratelimit-remaining-tokens": "40000", "x-ratelimit-reset-tokens": "20s",
                "x-ratelimit-limit-requests-day": "1000", "x-ratelimit-remaining-requests-day": "900",
                "x-ratelimit-reset-requests-day": "3h0m0s", "x-ratelimit-limit-tokens-day": "900000",
                "x-ratelimit-remaining-tokens-day": "800000", "x-ratelimit-reset-tokens-day": "3h0m0s"})
        if model == "tpd-learner":
            return _refusal("Rate limit reached for model `tpd-learner` on tokens per day (TPD): Limit 100000, "
                            "Used 99990, Requested 20. Please try again in 1m0s.")
        if model == "rpm-learner":
            return _refusal("Rate limit reached for model `rpm-learner` on requests per minute (RPM): Limit 30, "
                            "Used 30, Requested 1. Please try again in 2s.")
        return _refusal("Rate limit exceeded: free-models-per-day", {
            "x-ratelimit-limit": "50", "x-ratelimit-remaining": "0", "x-ratelimit-reset": reset})

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": m, "object": "model"} for m in SERVED]})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                             Route("/v1/models", models)])


SERVED = ["reporter", "tpd-learner", "rpm-learner", "shared"]


@pytest.fixture
def limited(api: httpx.Client, net: Loopback) -> Iterator[httpx.Client]:
    base = net.serve(limited_upstream())
    assert api.post("/api/endpoint", json={"name": "up", "base": base + "/v1", "key": "sk-test"}).status_code == 201
    for served in SERVED:
        reply = api.post("/api/model/register", json={"served": served, "endpoint": "up"})
        assert reply.status_code == 201, reply.text
    assert api.post("/api/collection", json={"name": "core", "members": SERVED}).status_code == 201
    yield api


def form_choices(html: str) -> tuple[list[str], list[str]]:
    """The "Set a limit" form's pickers: its subjects (``connection:up``, ``model:reporter``) and limits."""
    form = html.split('id="set-limit-h"', 1)[1].split("</form>", 1)[0]
    subjects = re.findall(r'<option value="((?:connection|model):[^"]+)">', form)
    names = re.findall(r'<option value="([a-z]+)">', form.split('id="limit-name"', 1)[1])
    return subjects, names


def limit_body(subject: str, name: str, value: int) -> dict[str, object]:
    """What ``quotas.js``'s ``limitBody`` makes of the form's fields."""
    scope, who = subject.split(":", 1)
    return {scope: who, name: value}


def assert_every_page_answers(api: httpx.Client) -> dict[str, str]:
    shown = {}
    for page in discover():
        reply = api.get(page.path)
        assert reply.status_code == 200, (page.path, reply.status_code, reply.text[:400])
        assert reply.headers["content-type"].startswith("text/html"), page.path
        assert SIDEBAR_LINK.search(reply.text) and f"<h1>{page.title}</h1>" in reply.text, page.path
        shown[page.path] = reply.text
    return shown


def test_every_kind_of_limit_set_by_the_form_and_learned_and_every_page_answers(
        limited: httpx.Client, settings) -> None:
    api = limited
    subjects, names = form_choices(api.get("/quotas").text)
    assert names == list(limit_store.LIMIT_NAMES)
    assert set(subjects) == {"connection:up", *(f"model:{m}" for m in SERVED)}
    refused = []
    for n, subject in enumerate(subjects):
        for name in names:
            reply = api.post("/api/limits", json=limit_body(subject, name, 1000 + n))
            if reply.status_code == 400:  # the form says why beside it: a month's count is per connection
                assert name == "rpmo" and subject.startswith("model:"), reply.text
                refused.append(subject)
                continue
            assert reply.status_code == 200, (subject, name, reply.text)
    assert len(refused) == len(SERVED)

    asked = api.post("/v1/chat/completions", json={"model": "bench/core",
                                                   "messages": [{"role": "user", "content": "hello"}]})
    assert asked.status_code == 200, asked.text

    limits = in_store(settings, limit_store.all_limits)
    assert {(i.subject, i.name) for i in limits if i.source == "learned"} == {("tpd-learner", "tpd"),
                                                                             ("rpm-learner", "rpm")}
    assert len([i for i in limits if i.source == "user"]) == len(names) * len(subjects) - len(SERVED)
    quotas = in_store(settings, lambda db: limit_store.shown_quotas(db, 0))
    assert {(q.alias, q.record.metric, q.record.window) for q in quotas} == {
        ("reporter", "requests", "minute"), ("reporter", "tokens", "minute"), ("reporter", "requests", "day"),
        ("reporter", "tokens", "day"), ("", "requests", "day")}

    shown = assert_every_page_answers(api)
    quotas_page = shown["/quotas"]
    assert "requests a calendar month" in quotas_page and "learned" in quotas_page and "headers" in quotas_page
    assert quotas_page.count("tpd-learner") >= 2  # its learned limit and the limits set for it


def test_a_page_that_fails_shows_its_error_inside_the_page(api: httpx.Client, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A load that fails and a template that fails alike: the page's error page, in the layout, as
    HTML with the dashboard's headers and status 500; the server log has the traceback."""
    package = tmp_path / "failing_pages"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "broken.py").write_text(
        "from benchwarmers_mcp.web.registry import Page\n\n"
        "async def nothing(view):\n    return {}\n\n"  # error.html wants a message: StrictUndefined refuses
        "async def failing(view):\n    raise RuntimeError('the store fell over')\n\n"
        "BROKEN = Page('/broken-render', 'Broken render', 'Observe', 50, 'error.html', nothing)\n"
        "FAILING = Page('/broken-load', 'Broken load', 'Observe', 51, 'error.html', failing)\n")
    monkeypatch.syspath_prepend(str(package.parent))

    def pages() -> list:
        import failing_pages.broken as broken  # type: ignore[import-not-found]
        return [*real_discover(), broken.BROKEN, broken.FAILING]

    monkeypatch.setattr(site_module, "discover", pages)
    site_module.site.cache_clear()
    try:
        for path, title in (("/broken-render", "Broken render"), ("/broken-load", "Broken load")):
            reply = api.get(path)
            assert reply.status_code == 500, (path, reply.text[:300])
            assert reply.headers["content-type"].startswith("text/html")
            assert reply.headers["content-security-policy"].startswith("default-src 'self'")
            html = reply.text
            assert SIDEBAR_LINK.search(html) and f"<h1>{title}</h1>" in html
            assert f'aria-current="page">{title}<' in html
            assert "This page could not be shown" in html and "the server log has the details" in html
            assert "Traceback" not in html and "the store fell over" not in html
    finally:
        site_module.site.cache_clear()
