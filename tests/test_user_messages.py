"""Messages a user sees say what to do: ``bench ask "hi"`` (no collection), ``bench endpoint add NAME``
with no ``--base``, and a name that breaks the naming rule, wherever a name is checked (the admin
API, the store, gateway keys, the CLI): one rule, said in words, never as a regex or a validator's
wording, with a name that would do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, endpoints, models
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from tests.kits import cli as kit
from tests.kits.cli import Bench
from tests.kits.security import app_client

bench = kit.bench  # the fixture: a ``bench`` command in-process, against the test's loopback
NAME_RULE = "lower-case letters, digits and dashes, starting with a letter or digit, 2 to 32 characters"
ALIAS_RULE = ("lower-case letters, digits, dashes, dots and underscores, starting with a letter or digit, "
              "at most 64 characters")
VALIDATOR_WORDS = ("^", "$", "{", "String should", "Value error", "pattern", "match")


def says_the_rule(message: str, rule: str = NAME_RULE) -> None:
    assert rule in message, message
    for word in VALIDATOR_WORDS:
        assert word not in message.replace(rule, ""), (word, message)


def test_ask_with_a_prompt_and_no_collection_says_how_to_ask(bench: Bench) -> None:
    done = bench("http://127.0.0.1:9", "ask", "hi")  # refused before any server is called
    assert done.returncode == 2, done.stderr
    assert 'bench ask <collection> "hi"' in done.stderr and "'hi' was read as the collection" in done.stderr
    assert "bench collections" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_endpoint_add_without_base_says_to_give_one(gateway: str, bench: Bench) -> None:
    done = bench(gateway, "endpoint", "add", "groq")
    assert done.returncode == 2, done.stderr
    assert "bench endpoint add groq --base https://" in done.stderr
    assert "key" not in done.stderr.split("base URL", 1)[0], "the key is not asked for before the base"
    assert "no key for" not in done.stderr


@pytest.mark.anyio
async def test_admin_api_says_the_rule_in_words(settings: Settings) -> None:
    async with app_client(settings) as client:
        async def refused(path: str, body: dict[str, Any]) -> str:
            response = await client.post(path, json=body)
            assert response.status_code == 400, (path, response.text)
            return str(response.json()["error"]["message"])

        base = "http://127.0.0.1:9/v1"
        no_base = await refused("/api/endpoint", {"name": "groq", "key": "sk-x"})
        assert "base URL" in no_base and "--base" in no_base
        message = await refused("/api/endpoint", {"name": "My Groq", "base": base})
        says_the_rule(message)
        assert "'my-groq'" in message, "a name that would do is suggested"
        says_the_rule(await refused("/api/endpoint", {"name": "groq", "base": base, "key_name": "Groq_Key"}))
        assert (await client.post("/api/endpoint", json={"name": "fake", "base": base})).status_code == 201
        says_the_rule(await refused("/api/model/register", {"served": "vendor/gpt-4", "endpoint": "fake",
                                                            "alias": "GPT 4"}), ALIAS_RULE)
        served = await refused("/api/model/register", {"served": "vendor/gpt 4", "endpoint": "fake"})
        assert "no spaces" in served and "bench candidates" in served and "^" not in served
        for name in ("Core", "a", "core\n", "x" * 40, "-core", "bench/core"):
            says_the_rule(await refused("/api/collection", {"name": name, "members": []}))
        assert (await client.post("/api/model/register", json={"served": "vendor/gpt-4", "endpoint": "fake"})
                ).status_code in (200, 201)
        tag = await refused("/api/collection", {"name": "core", "members": ["gpt-4"], "tags": ["Python!"]})
        assert "at most 24 characters" in tag and "'python'" in tag
        for name in ("CI", "a", "ci key"):
            says_the_rule(await refused("/api/gateway-key", {"name": name}))


@pytest.mark.anyio
async def test_the_store_and_the_key_maker_say_the_same(home: Path) -> None:
    async with Database(home / "benchwarmers.db") as db:
        calls = [
            (endpoints.add(db, Endpoint("Bad Name", "http://127.0.0.1:9/v1")), NAME_RULE),
            (endpoints.add(db, Endpoint("ok", "http://127.0.0.1:9/v1", key_name="Bad")), NAME_RULE),
            (models.register(db, ModelRecord("Bad Alias", "x", "ok", "x")), ALIAS_RULE),
            (collection_store.save(db, Collection("Bad!")), NAME_RULE),
            (gateway_keys.create(db, "Bad Key"), NAME_RULE),
            (gateway_keys.create(db, 7), NAME_RULE),
        ]
        for call, rule in calls:
            with pytest.raises(BadRequest) as refused:
                await call
            says_the_rule(refused.value.message, rule)


def test_the_cli_shows_the_rule(gateway: str, bench: Bench) -> None:
    for args in (("key", "create", "CI"), ("collection", "save", "My Core", "--description", "mine")):
        done = bench(gateway, *args)
        assert done.returncode == 1, done.stderr
        says_the_rule(done.stderr)
