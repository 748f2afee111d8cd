"""``bench client`` and ``bench own-app`` (issue 33 items 5 and 6) in-process against the app: the
choice shown and made, what the llm client cannot do printed when it is chosen, a provider switched
to own-app-only and back, and bad usage refused before anything is sent."""

from __future__ import annotations

import json

from tests.kits import cli as kit
from tests.kits.cli import Bench

bench = kit.bench


def test_bench_client_shows_chooses_and_says_what_llm_cannot_do(gateway: str, bench: Bench) -> None:
    shown = bench(gateway, "client")
    assert shown.returncode == 0 and "through the builtin client" in shown.stdout
    assert "BENCH_CLIENT=builtin" in shown.stdout
    chosen = bench(gateway, "client", "llm")
    assert chosen.returncode == 0 and "through the llm client (chosen here)" in chosen.stdout
    assert "what the built-in client does that the llm one cannot" in chosen.stderr and "ledger" in chosen.stderr
    back = bench(gateway, "client", "default", "--json")
    assert back.returncode == 0 and json.loads(back.stdout)["chosen"] is None
    bad = bench(gateway, "client", "litellm")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_bench_own_app_switches_a_provider(gateway: str, bench: Bench) -> None:
    assert "no provider" in bench(gateway, "own-app").stdout
    on = bench(gateway, "own-app", "openrouter", "on")
    assert on.returncode == 0 and "free only in their own app: openrouter" in on.stdout
    assert json.loads(bench(gateway, "own-app", "--json").stdout)["providers"] == ["openrouter"]
    assert "no provider" in bench(gateway, "own-app", "openrouter", "off").stdout
    half = bench(gateway, "own-app", "openrouter")
    assert half.returncode == 2 and "say on or off" in half.stderr
    bad = bench(gateway, "own-app", "Not A Provider!", "on")
    assert bad.returncode == 1 and "not a provider id" in bad.stderr
