"""The server's cyclic collector (``cli.server.settle_collector``): start-up's objects frozen out of
later collections, the young generation collected less often."""

from __future__ import annotations

import gc

from benchwarmers_mcp.cli.server import GC_THRESHOLDS, settle_collector


def test_settle_collector_freezes_start_up_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        settle_collector()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 10_000, "what start-up made is out of every later collection"
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_collector_is_off_through_start_up_and_on_again_after_it(monkeypatch, tmp_path) -> None:
    """``run_server_command`` turns the collector off for start-up; settling turns it on before
    serving, and a command that ends without serving (here a refused start) leaves it on too."""
    from benchwarmers_mcp.cli import main as cli_main
    from benchwarmers_mcp.cli import server

    seen: list[bool] = []

    def serve(settings: object) -> int:
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr(server, "serve", serve)
    monkeypatch.setenv("BENCHWARMERS_HOME", str(tmp_path / "data"))
    assert cli_main.run_server_command(["serve"]) == 0
    assert seen == [False], "start-up ran with the collector off"
    assert gc.isenabled()
    monkeypatch.setenv("BENCH_PORT", "not-a-port")
    assert cli_main.run_server_command(["serve"]) == 2
    assert gc.isenabled(), "a refused start leaves the collector on"
    gc.disable()
    before = gc.get_threshold()
    try:
        settle_collector()
        assert gc.isenabled(), "settling turns it back on before serving"
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        gc.enable()
