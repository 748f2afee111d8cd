"""``bench suite ...`` against a real server on a loopback port: the CLI is only an HTTP client."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.cli.client import main
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.collections import Collection
from tests.kits.loopback import Loopback
from tests.suite.kit import add_models
from tests.suite.test_seed import make_repo


def bench(capsys: pytest.CaptureFixture[str], net: Loopback, base: str, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--url", base], transport=net.transport(httpx))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_suite_from_a_terminal(gateway: str, net: Loopback, settings: Settings, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]):
    async def models() -> None:
        async with Database(settings.store_target) as db:
            await add_models(db, {"nf": "simulated/judge?say=no-fault"}, endpoint="sim", api="simulated")

    anyio.run(models)
    code, out, err = bench(capsys, net, gateway, "suite", "list")
    assert code == 0 and "std-claim-" in out and "32 live task(s)" in err

    repo = make_repo(tmp_path / "repo")
    code, out, _ = bench(capsys, net, gateway, "suite", "repos", "add", "app", str(repo))
    assert code == 0 and f"repository app at {repo}" in out
    code, out, err = bench(capsys, net, gateway, "suite", "seed", "--repo", "app", "--count", "1", "--seed", "2")
    assert code == 0 and "draft task(s) written" in err
    bug = next(line.split()[0] for line in out.splitlines() if line.startswith("seed-app") and " bug " in line)
    code, out, _ = bench(capsys, net, gateway, "suite", "show", bug)
    assert code == 0 and "FAULT: line <n>" in out and "draft" in out.splitlines()[0]

    code, out, err = bench(capsys, net, gateway, "suite", "run", "--model", "nf", "--dry-run")
    assert code == 0 and "6 call(s) would be made" in err and sum(line.startswith("nf ") for line in out.splitlines()) == 6
    code, out, _ = bench(capsys, net, gateway, "suite", "runs")
    assert "done" not in out  # the dry run asked nothing
    code, out, _ = bench(capsys, net, gateway, "suite", "run", "--model", "nf", "--task", bug, "--task",
                         bug.removesuffix("-bug") + "-control", "--gap", "0", "--wait")
    assert code == 0 and "missed" in out and "clean" in out and "done, 2 answered, 0 to go" in out
    code, out, _ = bench(capsys, net, gateway, "suite", "scores", "--json")
    [nf] = json.loads(out)["models"]
    assert (nf["alias"], nf["missed"], nf["clean"], nf["recall"]) == ("nf", 1, 1, 0.0)
    code, out, _ = bench(capsys, net, gateway, "suite", "scores")
    assert code == 0 and "nf" in out and "0-79%" in out  # recall 0 of 1, with its interval
    code, out, _ = bench(capsys, net, gateway, "suite", "runs")
    assert code == 0 and "done" in out

    code, out, _ = bench(capsys, net, gateway, "suite", "promote", bug)
    assert code == 0 and "is live" in out
    code, _, err = bench(capsys, net, gateway, "suite", "promote", bug)
    assert code == 1 and "not a draft" in err
    code, _, err = bench(capsys, net, gateway, "suite", "run", "--model", "nobody")
    assert code == 1 and "no model with alias 'nobody'" in err
    code, _, err = bench(capsys, net, gateway, "suite", "run", "--next", "--next-free")
    assert code == 2 and "not allowed with" in err


def test_mining_a_file_that_leaves_its_folder_says_why(gateway: str, net: Loopback, api: httpx.Client,
                                                       settings: Settings, capsys: pytest.CaptureFixture[str]):
    async def collection() -> None:
        async with Database(settings.store_target) as db:
            await add_models(db, {"sage": "simulated/sage"}, endpoint="sim", api="simulated")
            await collection_store.save(db, Collection("core", ("sage",), "code review"))

    anyio.run(collection)
    reply = api.post("/v1/chat/completions", json={"model": "bench/core", "messages": [
        {"role": "user", "content": "Review.\n\n===== FILE: ../../etc/x.py =====\nx = 1\n"}]})
    call = reply.json()["bench"]["seats"][0]["call"]
    assert api.post("/bench/verdict", json={"call": call, "useful": False, "false": ["a race"]}).status_code == 200
    code, out, err = bench(capsys, net, gateway, "suite", "mine", call)
    assert code == 1 and out == ""
    assert "'../../etc/x.py', which cannot be frozen into a task" in err and "no leading / or .." in err
    assert "internal error" not in err
