"""Real-bug tasks from SWE-rebench-V2-style rows, against a fake dataset server (httpx.MockTransport)."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from benchwarmers_mcp.errors import BadGateway, BadRequest
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.suite import library, rebench, scoring
from tests.suite.kit import engine

BEFORE = "\n".join([f"# line {i}" for i in range(1, 41)] + [
    "def clamp(value, low, high):",
    "    if value < low:",
    "        return low",
    "    if value > high:",
    "        return low",
    "    return value",
] + [f"# tail {i}" for i in range(1, 21)]) + "\n"


def patch(path: str, body: str, start: int = 42) -> str:
    return (f"diff --git a/{path} b/{path}\nindex 1..2 100644\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{start},5 +{start},5 @@ def clamp(value, low, high):\n{body}")


GOOD = patch("src/mathx.py", "     if value < low:\n         return low\n     if value > high:\n-        return low\n"
                             "+        return high\n     return value\n")
ROWS = [
    {"instance_id": "acme__mathx-12", "repo": "acme/mathx", "base_commit": "abc123", "patch": GOOD,
     "created_at": "2025-05-01T00:00:00Z", "license": "MIT"},
    {"instance_id": "acme__mathx-13", "repo": "acme/mathx", "base_commit": "abc123",
     "patch": patch("tests/test_mathx.py", "-    assert 1\n+    assert 2\n")},
    {"instance_id": "acme__mathx-14", "repo": "acme/mathx", "base_commit": "abc123",
     "patch": patch("src/mathx.py", "-# line 42\n+# a better comment\n")},
    {"instance_id": "acme__mathx-15", "repo": "acme/mathx", "base_commit": "abc123",
     "patch": GOOD + "@@ -60,1 +60,1 @@\n-x\n+y\n"},
    {"instance_id": "acme__mathx-16", "repo": "acme/mathx", "base_commit": "abc123",
     "patch": patch("src/mathx.py", "".join(f"-a{i}\n+b{i}\n" for i in range(6)))},
    {"instance_id": "acme__mathx-17", "repo": "acme/mathx", "patch": GOOD},
]


def dataset(seen: list[str]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.host == "rows.test":
            offset = int(request.url.params["offset"])
            return httpx.Response(200, json={"rows": [{"row_idx": i, "row": r} for i, r in enumerate(ROWS)][offset:]})
        if request.url.path == "/acme/mathx/abc123/src/mathx.py":
            return httpx.Response(200, text=BEFORE)
        return httpx.Response(404, text="not found")
    return httpx.MockTransport(handler)


def test_only_small_contiguous_changes_to_one_python_file_are_kept():
    fix = rebench.single_fix(GOOD)
    assert fix is not None and (fix.path, fix.removed_at) == ("src/mathx.py", (45,))
    assert [rebench.single_fix(r["patch"]) for r in ROWS[1:5]] == [None, None, None, None]
    addition = patch("src/mathx.py", "     if value < low:\n+        log(value)\n         return low\n")
    added = rebench.single_fix(addition)
    assert added is not None and added.removed_at == (42, 43)  # an insertion point: the lines either side


@pytest.mark.anyio
async def test_rebench_writes_bug_and_control_from_a_fake_dataset(settings: Settings):
    seen: list[str] = []
    async with engine(settings, dataset(seen)) as ctx:
        with pytest.raises(BadRequest, match="rebench is off until you name a source"):
            await rebench.fetch(ctx, source=None, raw=None)
        assert seen == []  # nothing left the machine
        out = await rebench.fetch(ctx, source="https://rows.test/rows?dataset=x", raw="https://raw.test/{repo}/"
                                  "{commit}/{path}")
        assert out["rows"] == 6 and len(out["created"]) == 2
        assert out["skipped"] == {"not one small contiguous change to one .py file": 4, "incomplete row": 1}
        again = await rebench.fetch(ctx, source=None, raw=None)  # the source was kept
        assert again["created"] == [] and again["skipped"]["already a task"] == 1
    assert seen[0] == "https://rows.test/rows?dataset=x&offset=0&length=100"
    catalog = library.catalog_sync(settings.home)
    bug, control = catalog.task("rebench-acme-mathx-12-bug"), catalog.task("rebench-acme-mathx-12-control")
    assert bug.draft and control.draft and bug.shape == "rebench" and bug.extra["license"] == "MIT"
    assert bug.extra["upstream"] == "acme__mathx-12" and bug.pair == control.id
    assert re.search(r"^45 \| {9}return low$", bug.prompt, re.M)
    assert re.search(r"^45 \| {9}return high$", control.prompt, re.M)
    explain = "\nThe upper bound returns the lower bound, so large values are clamped to the wrong end."
    assert scoring.score_answer(bug, "FAULT: line 45" + explain).outcome == "found"
    assert scoring.score_answer(bug, "FAULT: line 43" + explain).outcome == "wrong line"
    assert scoring.score_answer(control, "NO FAULT" + explain).outcome == "clean"
    assert json.loads((library.tasks_dir(settings.home) / bug.id / "task.json").read_text())["created"] == \
        "2025-05-01T00:00:00Z"


@pytest.mark.anyio
async def test_a_dataset_server_that_fails_is_a_clear_502(settings: Settings):
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)
    async with engine(settings, httpx.MockTransport(handler)) as ctx:
        with pytest.raises(BadGateway, match="GET https://rows.test/.*ConnectError"):
            await rebench.fetch(ctx, source="https://rows.test/rows", raw=None)
