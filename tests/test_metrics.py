"""Issue 36.4: ``GET /metrics`` in Prometheus' text format, read back with prometheus_client's own
parser: the counters move after a panel asked through the openai SDK (requests, seats, panels,
upstream calls, a verdict), a caller without access is refused, and the store's failures, the
pacer's waits and scheduler runs are counted where they happen. JSON-lines logs hold no secret."""

from __future__ import annotations

import io
import json
import logging
import logging.config
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from benchwarmers_mcp.cli.server import log_config
from benchwarmers_mcp.metrics import Metrics
from benchwarmers_mcp.settings import BadSettings, Settings
from tests.kits.gateway import openai_sdk, serve_gateway
from tests.kits.loopback import Loopback
from tests.kits.seed import seed

ADMIN = "an-admin-token-long-enough"
METRICS = "a-metrics-token-long-enough"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by name and labels, as prometheus_client parses it."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def total(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    return sum(v for (n, ls), v in found.items() if n == name and set(labels.items()) <= set(ls))


@pytest.fixture
def panel(home: Path, upstream: str) -> Path:
    seed(home, base_url=upstream, served={"fast": "fast", "medium": "medium"},
         collections={"core": ["fast", "medium"]})
    return home


def scrape(http: httpx.Client, base: str, token: str = METRICS) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reply = http.get(base + "/metrics", headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain")
    return samples(reply.text)


def test_the_counters_move_after_a_panel_and_a_verdict(panel: Path, settings: Settings, net: Loopback,
                                                     http: httpx.Client) -> None:
    base = serve_gateway(net, settings, metrics_token=METRICS)
    before = scrape(http, base)
    assert value(before, "benchwarmers_panel_seconds_count", reply="all") == 0
    info = [ls for (n, ls) in before if n == "benchwarmers_info"]
    assert info and dict(info[0])["replica"], "each process says which replica it is"

    reply = openai_sdk(net, base).chat.completions.create(
        model="bench/core", messages=[{"role": "user", "content": "Where is the stale read?"}])
    bench = reply.model_extra["bench"]
    call = bench["seats"][0]["call"]
    assert http.post(base + "/bench/verdict", json={"call": call, "useful": True}).status_code == 200
    after = scrape(http, base)

    route = {"route": "/v1/chat/completions", "method": "POST", "status": "200"}
    assert value(after, "benchwarmers_requests_total", **route) == value(before, "benchwarmers_requests_total", **route) + 1
    assert value(after, "benchwarmers_requests_total", route="/metrics", method="GET", status="200") >= 1
    assert value(after, "benchwarmers_panel_seconds_count", reply=bench.get("reply", "all")) == 1
    assert value(after, "benchwarmers_seat_seconds_count", status="ok") == 2
    assert total(after, "benchwarmers_upstream_calls_total", outcome="ok") == 2
    assert value(after, "benchwarmers_verdicts_total") == 1
    assert value(after, "benchwarmers_store_errors_total") == 0
    # the same verdict again changes nothing, so counts nothing
    assert http.post(base + "/bench/verdict", json={"call": call, "useful": True}).json()["written"] is False
    assert value(scrape(http, base), "benchwarmers_verdicts_total") == 1


def test_a_caller_without_access_is_refused(settings: Settings, net: Loopback, http: httpx.Client) -> None:
    base = serve_gateway(net, settings, admin_token=ADMIN, metrics_token=METRICS)
    for headers in ({}, {"Authorization": "Bearer wrong-token-of-some-length"},
                    {"Authorization": "Bearer bwk_not_an_admin_credential"}):
        refused = http.get(base + "/metrics", headers=headers)
        assert refused.status_code == 401, (headers, refused.text)
        assert "benchwarmers_" not in refused.text
    assert scrape(http, base, METRICS) and scrape(http, base, ADMIN)  # either credential opens it
    # the metrics token opens /metrics alone, never the admin API
    assert http.get(base + "/api/status", headers={"Authorization": f"Bearer {METRICS}"}).status_code == 401
    found = scrape(http, base, ADMIN)
    assert value(found, "benchwarmers_requests_total", route="/metrics", method="GET", status="401") == 3


def test_a_metrics_token_closes_metrics_on_a_loopback_server_without_an_admin_token(
        settings: Settings, net: Loopback, http: httpx.Client) -> None:
    base = serve_gateway(net, settings, metrics_token=METRICS)
    assert http.get(base + "/metrics").status_code == 401
    assert http.get(base + "/api/status").status_code == 200  # the rest of the loopback server as before
    assert scrape(http, base)


def test_a_short_metrics_token_is_refused_at_start() -> None:
    from benchwarmers_mcp.access.policy import startup_problems

    settings = Settings.from_env({"BENCH_METRICS_TOKEN": "short"}, home=Path("/nonexistent"))
    assert any("BENCH_METRICS_TOKEN is shorter" in p for p in startup_problems(settings))


def test_the_pacer_and_the_scheduler_and_the_store_report_where_they_happen() -> None:
    metrics = Metrics()
    metrics.pacer_wait("groq", 1.5)
    metrics.scheduler_run("backup", "ran")
    errors = [0]
    metrics.watch_store(lambda: errors[0])
    errors[0] = 2
    found = samples(metrics.exposition()[0].decode())
    assert value(found, "benchwarmers_pacer_wait_seconds_count", connection="groq") == 1
    assert value(found, "benchwarmers_pacer_wait_seconds_sum", connection="groq") == 1.5
    assert value(found, "benchwarmers_scheduler_runs_total", job="backup", status="ran") == 1
    assert value(found, "benchwarmers_store_errors_total") == 2


@pytest.mark.parametrize("store_backend", ["sqlite"], indirect=True)
def test_the_store_counts_its_own_failures(panel: Path, settings: Settings, net: Loopback,
                                           http: httpx.Client) -> None:
    base = serve_gateway(net, settings, metrics_token=METRICS)
    conn = net.app_at(base).state.ctx.db._writer.conn  # a full disk: no page more (as test_store_failures)
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
    client = openai_sdk(net, base)
    with pytest.raises(openai.APIStatusError) as refused:  # the panel's own row cannot be written
        client.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "x" * 300_000}])
    assert refused.value.status_code == 503
    conn.execute("PRAGMA max_page_count = 1073741823")
    found = scrape(http, base)
    assert value(found, "benchwarmers_store_errors_total") >= 1
    assert value(found, "benchwarmers_requests_total", route="/v1/chat/completions", method="POST", status="503") == 1


def test_the_log_format_is_read_by_the_one_parser() -> None:
    assert Settings.from_env({"BENCH_LOG_FORMAT": "JSON"}, home=Path("/x")).log_format == "json"
    with pytest.raises(BadSettings, match="BENCH_LOG_FORMAT must be text or json"):
        Settings.from_env({"BENCH_LOG_FORMAT": "xml"}, home=Path("/x"))


def test_json_logs_are_one_object_a_line_with_no_secret(tmp_path: Path) -> None:
    from benchwarmers_mcp.access import access_log

    key = "sk-provider-secret-0123456789"
    settings = Settings.from_env({"BENCH_LOG_FORMAT": "json", "BENCHWARMERS_KEY_GROQ": key,
                                  "BENCH_METRICS_TOKEN": METRICS, "BENCHWARMERS_ADMIN_TOKEN": ADMIN},
                                 home=tmp_path / "data", config_dir=tmp_path / "config")
    config = log_config(settings)
    stream = io.StringIO()
    config["handlers"]["plain"]["stream"] = stream
    logging.config.dictConfig(config)
    logger = logging.getLogger("benchwarmers.test_metrics")
    access = logging.getLogger(access_log.LOGGER)
    saved = access.handlers[:], access.propagate, access.level
    try:
        logger.warning("upstream said %s and %s then %s", key, METRICS, ADMIN)
        try:
            raise RuntimeError(f"boom {key}")
        except RuntimeError:
            logger.exception("it failed")
        access.handlers, access.propagate = [], True  # into the root's JSON handler, as any other logger's
        access.setLevel(logging.INFO)
        access_log.AccessLog(secrets=[ADMIN]).write("GET", f"/v1/models?key={ADMIN}", 200, "local", 0.012)
    finally:
        access.handlers, access.propagate, access.level = saved[0], saved[1], saved[2]
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
        logging.getLogger().handlers.clear()
    lines = stream.getvalue().splitlines()
    events = [json.loads(line) for line in lines]
    assert len(events) == 3
    assert events[0]["level"] == "warning" and events[0]["logger"] == "benchwarmers.test_metrics"
    assert "exception" in events[1] and "RuntimeError" in events[1]["exception"]
    assert events[2]["request"] == {"method": "GET", "path": "/v1/models?key=***", "status": 200, "who": "local",
                                    "ms": 12}
    for secret in (key, METRICS, ADMIN):
        assert secret not in stream.getvalue()


def test_the_access_log_prints_json_lines_on_stderr_too(capsys: pytest.CaptureFixture[str]) -> None:
    from benchwarmers_mcp.access import access_log

    logger = logging.getLogger(access_log.LOGGER)
    saved = logger.handlers[:], logger.propagate, logger.level
    logger.handlers = []
    try:
        access_log.to_stderr("json")
        access_log.AccessLog().write("POST", "/v1/chat/completions", 200, "key:ci", 0.5)
    finally:
        logger.handlers, logger.propagate, logger.level = saved[0], saved[1], saved[2]
    event = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert event["request"]["path"] == "/v1/chat/completions" and event["request"]["ms"] == 500
