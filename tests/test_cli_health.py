"""The health commands of ``bench`` (``client.main`` in-process, stdin piped): onboard --wait, probe,
model retry, alerts, scheduler and settings scheduler, against the app and the fake upstream on the
test's loopback."""

from __future__ import annotations

import json

from tests.fakes.openai_upstream import FakeUpstream
from tests.kits import cli as kit
from tests.kits.cli import Bench, ok
from tests.kits.loopback import Loopback

bench = kit.bench


def test_onboard_probe_retry_alerts_and_the_scheduler(gateway: str, upstream: str, fake: FakeUpstream,
                                                      net: Loopback, bench: Bench) -> None:
    fake.served[:] = ["vendor/alpha", "vendor/gone?fail=404"]
    with net.client(base_url=gateway) as api:
        api.post("/api/endpoint", json={"name": "fake", "base": upstream, "key": "sk-test-key"}).raise_for_status()
    onboarded = ok(bench(gateway, "onboard", "vendor/alpha", "--endpoint", "fake", "--quick", "--wait"))
    assert "[1/5] vendor/alpha: ok - fake serves vendor/alpha" in onboarded.stdout
    assert "[4/5] vendor/alpha: ok - answered" in onboarded.stdout and "vendor/alpha: done" in onboarded.stdout
    missed = bench(gateway, "onboard", "vendor/alpah", "--endpoint", "fake", "--wait")
    assert missed.returncode == 1 and "did you mean vendor/alpha" in missed.stdout

    probed = ok(bench(gateway, "probe", "alpha"))
    assert probed.stdout.startswith("alpha ready: 1/1 answered")
    assert "alpha" in ok(bench(gateway, "health")).stdout
    queue = json.loads(ok(bench(gateway, "onboarding", "--json")).stdout)
    assert [i["state"] for i in queue["items"]] == ["done", "failed"]

    ok(bench(gateway, "model", "register", "vendor/gone?fail=404", "--endpoint", "fake", "--alias", "gone"))
    retried = bench(gateway, "model", "retry", "gone")
    assert retried.returncode == 1 and "no answer (structural)" in retried.stdout
    alerts = json.loads(ok(bench(gateway, "alerts", "--json")).stdout)
    [gone] = [a for a in alerts["alerts"] if a["subject"] == "gone"]
    assert gone["kind"] == "model_gone" and gone["actions"][0]["cli"] == "bench model retry gone"
    ok(bench(gateway, "alerts", "dismiss", str(gone["id"])))
    assert "gone" not in ok(bench(gateway, "alerts")).stdout

    assert "scheduler  off" in ok(bench(gateway, "scheduler")).stdout
    changed = ok(bench(gateway, "settings", "scheduler", "log-only", "--off", "perf,suite"))
    assert changed.stdout.strip() == "scheduler  log-only, off: perf, suite"
    shown = json.loads(ok(bench(gateway, "scheduler", "--json")).stdout)
    assert shown["mode"] == "log-only" and {j["name"]: j["on"] for j in shown["jobs"]}["perf"] is False
    assert "scheduler  log-only" in ok(bench(gateway, "settings")).stdout
    before = fake.count("vendor/alpha")
    ran = ok(bench(gateway, "scheduler", "run", "availability"))  # now, whatever the mode: the user asked
    assert ran.stdout.startswith("availability: run ") and " ran " in ran.stdout
    assert fake.count("vendor/alpha") == before + 1
    [last] = [j["last_run"] for j in json.loads(ok(bench(gateway, "scheduler", "--json")).stdout)["jobs"]
              if j["name"] == "availability"]
    assert last["trigger"] == "now" and last["detail"]["probed"] == 2
