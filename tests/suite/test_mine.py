"""Mining a verdict: its real and false claims become claim tasks, with the panel's files frozen."""

from __future__ import annotations

import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.suite import library, mine, scoring
from tests.suite.kit import add_models, app_client

PROMPT = ("Review these two files for stale reads.\n\n===== FILE: src/cache.py =====\nclass Cache:\n"
          "    def get(self, key):\n        return self.data.get(key)\n\n===== FILE: src/store.py =====\n"
          "def load():\n    return {}\n")


def test_files_in_both_prompt_shapes():
    assert mine.files_in(PROMPT) == {"src/cache.py": "class Cache:\n    def get(self, key):\n"
                                                     "        return self.data.get(key)\n",
                                     "src/store.py": "def load():\n    return {}\n"}
    fenced = "Check this\n\ncache.py:\n```python\nx = 1\n```\n\nnotes/a.md:\n````\n```inner```\n````\n"
    assert mine.files_in(fenced) == {"cache.py": "x = 1\n", "notes/a.md": "```inner```\n"}
    assert mine.files_in("no files at all") == {}


@pytest.mark.anyio
async def test_a_verdict_becomes_claim_tasks_with_the_files_frozen(settings: Settings):
    async with Database(settings.store_target) as db:
        await add_models(db, {"sage": "simulated/sage", "lark": "simulated/lark"}, endpoint="sim", api="simulated")
        await collection_store.save(db, Collection("core", ("sage", "lark"), "code review"))
    async with app_client(settings) as client:
        reply = await client.post("/v1/chat/completions", json={
            "model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
        assert reply.status_code == 200, reply.text
        call = reply.json()["bench"]["seats"][0]["call"]
        unjudged = await client.post("/api/suite/mine", json={"call": call})
        assert unjudged.status_code == 404 and "no verdict" in unjudged.json()["error"]["message"]
        verdict = await client.post("/bench/verdict", json={
            "call": call, "useful": True, "real": ["get() can return a value another thread just replaced"],
            "false": ["load() leaks a file handle"]})
        assert verdict.status_code == 200, verdict.text
        mined = await client.post("/api/suite/mine", json={"call": call})
        assert mined.status_code == 200, mined.text
        created = mined.json()["created"]
        assert sorted(t["truth"] for t in created) == [False, True] and all(t["draft"] for t in created)
        again = await client.post("/api/suite/mine", json={"call": call})
        assert again.json()["created"] == []  # mined once
    catalog = library.catalog_sync(settings.home)
    for summary in created:
        entry = catalog.entry(summary["id"])
        task = catalog.task(summary["id"])
        assert (task.shape, task.mined_from, task.attach) == ("claim", call, ("src/cache.py", "src/store.py"))
        assert (entry.folder / "fixtures" / "src" / "cache.py").read_text().startswith("class Cache:")
        prompt = library.prompt_sync(entry, {})
        assert prompt.startswith("Hypothesis about the attached code: ")
        assert "===== FILE: src/store.py =====\ndef load():" in prompt
        right = "VERDICT: TRUE\nline 3" if task.truth else "VERDICT: FALSE\nnothing opens"
        wrong = "VERDICT: FALSE\nline 3" if task.truth else "VERDICT: TRUE\nit leaks"
        assert scoring.score_answer(task, right).outcome == ("found" if task.truth else "clean")
        assert scoring.score_answer(task, wrong).outcome == ("missed" if task.truth else "false alarm")


@pytest.mark.anyio
async def test_mining_needs_claims_and_files(settings: Settings):
    async with Database(settings.store_target) as db:
        await add_models(db, {"sage": "simulated/sage"}, endpoint="sim", api="simulated")
        await collection_store.save(db, Collection("core", ("sage",), "code review"))
    async with app_client(settings) as client:
        reply = await client.post("/v1/chat/completions", json={
            "model": "bench/core", "messages": [{"role": "user", "content": "no files in here"}]})
        call = reply.json()["bench"]["seats"][0]["call"]
        await client.post("/bench/verdict", json={"call": call, "useful": False})
        bare = await client.post("/api/suite/mine", json={"call": call})
        assert bare.status_code == 400 and "names no real or false claims" in bare.json()["error"]["message"]
        await client.post("/bench/verdict", json={"call": call, "useful": False, "false": ["a race"]})
        nofiles = await client.post("/api/suite/mine", json={"call": call})
        assert nofiles.status_code == 400 and "carries no files" in nofiles.json()["error"]["message"]


async def _judged_call(client: httpx.AsyncClient, prompt: str) -> str:
    reply = await client.post("/v1/chat/completions", json={
        "model": "bench/core", "messages": [{"role": "user", "content": prompt}]})
    assert reply.status_code == 200, reply.text
    call = str(reply.json()["bench"]["seats"][0]["call"])
    verdict = await client.post("/bench/verdict", json={"call": call, "useful": False, "real": ["a race"],
                                                        "false": ["a leak"]})
    assert verdict.status_code == 200, verdict.text
    return call


@pytest.mark.anyio
@pytest.mark.parametrize(("rel", "why"), [
    ("../../x.py", "no leading / or .."), ("/abs/x.py", "no leading / or .."), ("..\\x.py", "no leading / or .."),
    ("src/../../x.py", "no leading / or .."), ("C:\\x.py", "it names a drive"),
    ("a\x01b.py", "a control character"), ("x" * 300 + ".py", "longer than a file system holds")])
async def test_a_file_that_cannot_be_frozen_is_a_400_saying_why(settings: Settings, rel: str, why: str):
    async with Database(settings.store_target) as db:
        await add_models(db, {"sage": "simulated/sage"}, endpoint="sim", api="simulated")
        await collection_store.save(db, Collection("core", ("sage",), "code review"))
    async with app_client(settings) as client:
        call = await _judged_call(client, f"Review.\n\n===== FILE: src/ok.py =====\nx = 1\n\n===== FILE: {rel} =====\n"
                                          "y = 2\n")
        refused = await client.post("/api/suite/mine", json={"call": call})
        assert refused.status_code == 400, refused.text
        message = refused.json()["error"]["message"]
        assert why in message and repr(rel[:20])[:-1] in message and "nothing was mined" in message
    assert not library.tasks_dir(settings.home).exists() or not any(library.tasks_dir(settings.home).iterdir())


@pytest.mark.anyio
async def test_a_windows_name_is_frozen_with_slashes(settings: Settings):
    async with Database(settings.store_target) as db:
        await add_models(db, {"sage": "simulated/sage"}, endpoint="sim", api="simulated")
        await collection_store.save(db, Collection("core", ("sage",), "code review"))
    async with app_client(settings) as client:
        call = await _judged_call(client, "Review.\n\n===== FILE: src\\cache.py =====\nclass Cache:\n    pass\n")
        mined = await client.post("/api/suite/mine", json={"call": call})
        assert mined.status_code == 200, mined.text
    catalog = library.catalog_sync(settings.home)
    for summary in mined.json()["created"]:
        entry = catalog.entry(summary["id"])
        assert catalog.task(summary["id"]).attach == ("src/cache.py",)
        assert "===== FILE: src/cache.py =====\nclass Cache:" in library.prompt_sync(entry, {})  # it reads back
