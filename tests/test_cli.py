"""The ``bench`` / ``benchwarmers`` commands (``client.main``, in-process, stdin piped) against the app
and the fake OpenAI-compatible upstream on the loopback: every command, the stream each output goes
to, every exit code, keys that never reach an argument, and the confirmations that refuse without
a terminal. The installed console scripts, on a terminal and as real processes:
tests/e2e/test_cli_scripts.py."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from benchwarmers_mcp.cli.client import build_parser
from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits import cli as kit
from tests.kits.cli import SECRET, SERVED, Bench, ok
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback, free_port

# The CLI tests' own fixtures: ``bench`` runs a command in-process; ``served`` and ``bench_with_models``.
bench, served, bench_with_models = kit.bench, kit.served, kit.bench_with_models


# ---- exit codes ------------------------------------------------------------------------------

def test_no_server_at_the_url_exits_3_with_a_hint(bench: Bench) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for args in (("status",), ("models", "--url", url), ("ask", "core", "hello")):
        result = bench(url, *args)
        assert result.returncode == 3, args
        assert result.stdout == ""
        assert f"no Benchwarmers server at {url}" in result.stderr
        assert "benchwarmers demo" in result.stderr


@pytest.mark.parametrize("args", [
    ("status", "--bogus"),
    ("no-such-command",),
    ("model",),
    ("model", "register", "vendor/alpha"),
    ("verdict", "p1.member1"),
    ("verdict", "p1.member1", "--useful", "--not-useful"),
    ("collection", "save", "core", "--reply", "loud"),
    ("settings", "gateway", "--max-calls", "many"),
    ("endpoint", "add", "x", "--base", "http://h/v1", "--key", "sk-on-the-command-line"),
    ("ask", "core", "--merged", "--all", "x"),
])
def test_bad_usage_exits_2_before_calling_anyone(args: tuple[str, ...], bench: Bench) -> None:
    result = bench(f"http://127.0.0.1:{free_port()}", *args)
    assert result.returncode == 2, (args, result.stderr)
    assert result.stdout == ""
    assert "usage:" in result.stderr or "error:" in result.stderr


def test_a_key_given_as_an_argument_is_refused_by_name(bench: Bench) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for args in (("endpoint", "add", "x", "--base", "http://h/v1", "--key", SECRET),
                 ("endpoint", "add", "x", "--base", "http://h/v1", f"--key={SECRET}"),
                 ("endpoint", "key", "x", "--api-key", SECRET)):
        result = bench(url, *args)
        assert result.returncode == 2, args
        assert "a key is never an argument" in result.stderr and "--key-stdin" in result.stderr
        assert SECRET not in result.stderr + result.stdout


def test_bad_usage_found_by_the_client_also_exits_2(bench_with_models: str, tmp_path: Path, bench: Bench) -> None:
    missing = bench(bench_with_models, "ask", "core", "look", "-f", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "nope.py" in missing.stderr
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\xff\xfe" * 10)
    refused = bench(bench_with_models, "ask", "core", "look", "-f", str(binary))
    assert refused.returncode == 2 and "not a UTF-8 text file" in refused.stderr
    empty = bench(bench_with_models, "ask", "core")
    assert empty.returncode == 2 and "bench ask takes a collection, then the prompt" in empty.stderr
    timeout = bench(bench_with_models, "status", BENCHWARMERS_TIMEOUT="soon")
    assert timeout.returncode == 2 and "BENCHWARMERS_TIMEOUT" in timeout.stderr
    nothing = bench(bench_with_models, "model", "set", "alpha")
    assert nothing.returncode == 2 and "nothing to change" in nothing.stderr


def test_a_refusal_exits_1_with_the_server_reason(bench_with_models: str, bench: Bench) -> None:
    unknown = bench(bench_with_models, "ask", "nosuch", "hello")
    assert unknown.returncode == 1
    assert "unknown collection 'nosuch'" in unknown.stderr and "bench/core" in unknown.stderr
    assert unknown.stdout == ""
    verdict = bench(bench_with_models, "verdict", "p0-none.member1", "--useful")
    assert verdict.returncode == 1 and "no call with id" in verdict.stderr
    twice = bench(bench_with_models, "model", "register", "vendor/alpha", "--endpoint", "fake")
    assert twice.returncode == 1 and "already on the bench as 'alpha'" in twice.stderr


def subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*prefix, name), child
                yield from subcommands(child, (*prefix, name))


def test_help_is_on_every_command_with_examples() -> None:
    """Every command and subcommand the parser knows has an examples section, --json and --url."""
    found = list(subcommands(build_parser()))
    assert len(found) >= 30
    for path, parser in found:
        text = parser.format_help()
        assert "\nexamples:\n  " in text, path
        assert "--json" in text and "--url" in text, path


# ---- the flow of issue 3, point 4 --------------------------------------------------------------

def test_endpoint_to_verdict_end_to_end(gateway: str, upstream: str, served: FakeUpstream, settings: Settings,
                                        tmp_path: Path, net: Loopback, bench: Bench) -> None:
    added = ok(bench(gateway, "endpoint", "add", "fake", "--base", upstream, "--key-stdin", stdin=SECRET + "\n"))
    assert "added endpoint fake (chat, provider)" in added.stdout
    assert json.loads((settings.config_dir / "keys.json").read_text()) == {"fake": SECRET}

    tested = ok(bench(gateway, "endpoint", "test", "fake"))
    assert "fake answers: 4 model(s)" in tested.stdout

    listed = ok(bench(gateway, "candidates", "--new"))
    for name in SERVED:
        assert name in listed.stdout
    assert "beta-free" in listed.stdout  # the alias it would get
    for name in SERVED[:3]:
        registered = ok(bench(gateway, "model", "register", name, "--endpoint", "fake"))
        assert "registered" in registered.stdout
    left = ok(bench(gateway, "candidates", "--new"))
    assert "other/delta" in left.stdout and "vendor/alpha" not in left.stdout

    saved = ok(bench(gateway, "collection", "save", "core", "--members", "alpha,beta-free,gamma",
                     "--description", "code review"))
    assert "created bench/core: alpha, beta-free, gamma" in saved.stdout
    source = tmp_path / "cache.py"
    source.write_text("def get(key):\n    return CACHE[key]\n")
    asked = ok(bench(gateway, "ask", "core", "Where can this return a stale value?", "-f", str(source)))
    for name in SERVED[:3]:
        assert f"answer from {name}" in asked.stdout
    assert [line for line in asked.stderr.splitlines() if line][0].split() == [
        "call", "seat", "model", "status", "seconds"]
    seat_rows = [line for line in asked.stderr.splitlines() if line.startswith("p") and " ok " in line]
    assert len(seat_rows) == 3
    assert asked.stderr.splitlines()[-1] == f"panel page: {gateway}/panels/{seat_rows[0].split()[0].split('.')[0]}"
    assert "seconds" in asked.stderr and "seconds" not in asked.stdout
    sent = served.calls[-1].body["messages"][-1]["content"]
    assert "Where can this return a stale value?" in sent
    assert f"{source}:\n```py\ndef get(key):" in sent
    assert all(c.headers.get("authorization") == f"Bearer {SECRET}" for c in served.calls)

    call = seat_rows[0].split()[0]
    judged = ok(bench(gateway, "verdict", call, "--useful", "--note", "found it", "--real", "the stale read",
                      "--real", "no lock", "--false", "an injection"))
    assert judged.stdout.strip() == f"recorded: {call} useful"
    with net.client(base_url=gateway) as api:
        record = api.get("/bench/record", params={"collection": "core"}).json()["aliases"]
    assert sum(v["useful"] for v in record.values()) == 1
    status = json.loads(ok(bench(gateway, "status", "--json")).stdout)
    assert status["counts"]["verdicts"] == 1 and status["counts"]["owed"] == 2


# ---- ask -------------------------------------------------------------------------------------

def test_a_pipe_is_the_prompt_or_is_added_to_it(bench_with_models: str, served: FakeUpstream, bench: Bench) -> None:
    diff = "--- a/x.py\n+++ b/x.py\n+print('hi')\n"
    ok(bench(bench_with_models, "ask", "core", "Review this diff", stdin=diff))
    sent = served.calls[-1].body["messages"][-1]["content"]
    assert sent.startswith("Review this diff\n\nstdin:\n```\n--- a/x.py")
    ok(bench(bench_with_models, "ask", "core", stdin="Is this the whole prompt?\n"))
    assert served.calls[-1].body["messages"][-1]["content"] == "Is this the whole prompt?"
    ok(bench(bench_with_models, "ask", "core", "-", stdin="From a dash\n"))
    assert served.calls[-1].body["messages"][-1]["content"] == "From a dash"


def test_ask_system_with_and_merged(bench_with_models: str, served: FakeUpstream, net: Loopback, bench: Bench) -> None:
    ok(bench(bench_with_models, "collection", "save", "core", "--remove", "gamma"))
    with net.client(base_url=bench_with_models) as api:
        api.post("/api/gateway-settings", json={"max_explorers": 1}).raise_for_status()
    result = ok(bench(bench_with_models, "ask", "bench/core", "hello", "--system", "Be brief.", "--with", "gamma"))
    aliases = {line.split()[2] for line in result.stderr.splitlines() if line.startswith("p") and not line.startswith("panel page:")}
    assert "gamma" in aliases
    assert any(c.body["messages"][0] == {"role": "system", "content": "Be brief."} for c in served.calls)
    merged = ok(bench(bench_with_models, "ask", "core", "hello again", "--merged"))
    assert "Merged by" in merged.stdout
    assert "merger" in merged.stderr


def test_ask_json_prints_the_completion(bench_with_models: str, bench: Bench) -> None:
    result = ok(bench(bench_with_models, "ask", "core", "hello", "--json"))
    body = json.loads(result.stdout)
    assert body["object"] == "chat.completion"
    assert [s["alias"] for s in body["bench"]["seats"]] == ["alpha", "beta-free", "gamma"]


def test_ask_exits_1_when_no_seat_answers(gateway: str, upstream: str, served: FakeUpstream, net: Loopback, bench: Bench) -> None:
    with net.client(base_url=gateway) as api:
        api.post("/api/endpoint", json={"name": "fake", "base": upstream}).raise_for_status()
        api.post("/api/model/register", json={"served": "bad?fail=500", "endpoint": "fake", "alias": "bad", "force": True})
        api.post("/api/collection", json={"name": "broken", "members": ["bad"]}).raise_for_status()
    result = bench(gateway, "ask", "broken", "hello")
    assert result.returncode == 1
    assert "no seat answered" in result.stderr and " error " in result.stderr


# ---- listings --------------------------------------------------------------------------------

def test_status_collections_models_endpoints_and_settings(bench_with_models: str, settings: Settings, bench: Bench) -> None:
    status = ok(bench(bench_with_models, "status"))
    assert f"data folder    {settings.home}" in status.stdout
    assert "1 endpoint(s), 3 model(s)" in status.stdout
    collections = ok(bench(bench_with_models, "collections"))
    assert "bench/core" in collections.stdout and "code review" in collections.stdout
    assert "bench/core:merged" not in collections.stdout
    shown = ok(bench(bench_with_models, "collection", "show", "core"))
    assert "members     alpha, beta-free, gamma" in shown.stdout
    together = next(line for line in shown.stdout.splitlines() if line.startswith("together"))
    assert "can -" not in together and "no member capability shared by all" in together, together
    models = ok(bench(bench_with_models, "models", "--find", "alp"))
    assert "alpha" in models.stdout and "gamma" not in models.stdout
    # the status every page shows (engine/roster.py), with why, in the listing and in model show
    row = next(line for line in models.stdout.splitlines() if line.startswith("alpha"))
    assert " untested " in row and "has not answered yet" in row, row
    one = ok(bench(bench_with_models, "model", "show", "alpha"))
    assert "status   untested: has not answered yet" in one.stdout and "alpha: vendor/alpha on fake" in one.stdout
    endpoints = ok(bench(bench_with_models, "endpoints"))
    assert "fake" in endpoints.stdout and "keys file" in endpoints.stdout and SECRET not in endpoints.stdout
    assert ok(bench(bench_with_models, "endpoint", "list")).stdout == endpoints.stdout
    settings_out = ok(bench(bench_with_models, "settings"))
    assert "max calls 5" in settings_out.stdout and "max explorers 0" in settings_out.stdout
    changed = ok(bench(bench_with_models, "settings", "gateway", "--max-calls", "6", "--max-explorers", "1"))
    assert "max calls 6" in changed.stdout and "max explorers 1" in changed.stdout
    refused = bench(bench_with_models, "settings", "gateway", "--max-calls", "2")
    assert refused.returncode == 1 and "core" in refused.stderr


def test_json_prints_what_the_server_answered(bench_with_models: str, net: Loopback, bench: Bench) -> None:
    with net.client(base_url=bench_with_models) as api:
        for args, path in ((("status",), "/api/status"), (("models", "--all"), "/api/models"),
                           (("endpoints",), "/api/endpoints"), (("settings",), "/api/gateway-settings"),
                           (("collections",), "/v1/models")):
            printed = json.loads(ok(bench(bench_with_models, *args, "--json")).stdout)
            direct = api.get(path).json()
            if path == "/v1/models":
                assert [m["id"] for m in printed["data"]] == [m["id"] for m in direct["data"]]
            elif path == "/api/models":
                assert [m["alias"] for m in printed["models"]] == [m["alias"] for m in direct["models"]]
            elif path != "/api/status":
                assert printed == direct, args
            else:
                assert printed["data_folder"] == direct["data_folder"]
    before = json.loads(ok(bench(bench_with_models, "--json", "collection", "show", "core")).stdout)
    assert before["members"] == ["alpha", "beta-free", "gamma"]


def test_model_changes_from_the_cli(bench_with_models: str, bench: Bench) -> None:
    changed = ok(bench(bench_with_models, "model", "set", "gamma", "--vision", "on", "--context", "32000",
                       "--tools", "off"))
    assert "vision yes, tools no, context 32000" in changed.stdout
    ok(bench(bench_with_models, "model", "role", "gamma", "code"))
    ok(bench(bench_with_models, "model", "ad-hoc", "gamma", "on"))
    data = json.loads(ok(bench(bench_with_models, "models", "--find", "gamma", "--json")).stdout)["models"][0]
    assert (data["role"], data["ad_hoc"], data["vision"], data["tools"]) == ("code", True, True, False)
    assert data["status"] == "untested", "ad hoc is a setting beside the status, never a status"
    unknown = ok(bench(bench_with_models, "model", "set", "gamma", "--vision", "unknown", "--context", "unknown"))
    assert "vision unknown" in unknown.stdout and "context unknown" in unknown.stdout
    bad_role = bench(bench_with_models, "model", "role", "gamma", "wizard")
    assert bad_role.returncode == 1 and "role must be one of" in bad_role.stderr
    by_role = ok(bench(bench_with_models, "models", "--role", "code"))
    assert "gamma" in by_role.stdout and "alpha" not in by_role.stdout


def test_collection_save_add_remove_and_delete(bench_with_models: str, bench: Bench) -> None:
    refused = bench(bench_with_models, "collection", "save", "core", "--add", "nobody")
    assert refused.returncode == 1 and "unknown model aliases: nobody" in refused.stderr
    not_member = bench(bench_with_models, "collection", "save", "core", "--remove", "nobody")
    assert not_member.returncode == 1 and "not members" in not_member.stderr
    moved = ok(bench(bench_with_models, "collection", "save", "core", "--remove", "alpha,gamma", "--add", "gamma",
                     "--tags", "code,review", "--shape", "review", "--reply", "merged"))
    assert "saved bench/core: beta-free, gamma" in moved.stdout and "reply merged" in moved.stdout
    shown = json.loads(ok(bench(bench_with_models, "collection", "show", "core", "--json")).stdout)
    assert (shown["tags"], shown["shape"], shown["description"]) == (["code", "review"], "review", "code review")
    nothing = bench(bench_with_models, "collection", "save", "core")
    assert nothing.returncode == 2 and "nothing to save" in nothing.stderr
    ok(bench(bench_with_models, "collection", "save", "spare", "--members", "gamma"))
    gone = ok(bench(bench_with_models, "collection", "delete", "spare", "--yes"))
    assert gone.stdout.strip() == "deleted bench/spare"
    assert "bench/spare" not in ok(bench(bench_with_models, "collections")).stdout
    ok(bench(bench_with_models, "collection", "save", "spare", "--members", "gamma"))
    ok(bench(bench_with_models, "collection", "rm", "spare", "-y"))
    missing = bench(bench_with_models, "collection", "show", "spare")
    assert missing.returncode == 1 and "no collection named 'spare'" in missing.stderr


# ---- confirmations ---------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ("collection", "delete", "core"),
    ("endpoint", "remove", "fake", "--with-models"),
    ("key", "revoke", "somebody"),
])
def test_every_destructive_command_refuses_without_a_terminal(bench_with_models: str, args: tuple[str, ...], bench: Bench) -> None:
    result = bench(bench_with_models, *args)
    assert result.returncode == 2
    assert "stdin is not a terminal" in result.stderr
    assert "bench/core" in ok(bench(bench_with_models, "collections")).stdout
    assert "fake" in ok(bench(bench_with_models, "endpoints")).stdout


# ---- endpoints and keys ------------------------------------------------------------------------


def test_endpoint_key_remove_and_a_prompt_that_cannot_be_asked(gateway: str, upstream: str, served: FakeUpstream,
                                                              settings: Settings, bench: Bench) -> None:
    keys_file = settings.config_dir / "keys.json"
    quiet = ok(bench(gateway, "endpoint", "add", "fake", "--base", upstream))
    assert "no key for fake: stdin is not a terminal" in quiet.stderr
    assert not keys_file.exists()
    local = ok(bench(gateway, "endpoint", "add", "local", "--base", upstream, "--kind", "local", "--no-key"))
    assert "(chat, local)" in local.stdout and "no key" not in local.stderr
    empty = bench(gateway, "endpoint", "key", "fake", "--key-stdin", stdin="\n")
    assert empty.returncode == 2 and "stdin was empty" in empty.stderr
    ok(bench(gateway, "endpoint", "key", "fake", "--key-stdin", stdin=SECRET))
    assert json.loads(keys_file.read_text()) == {"fake": SECRET}
    failing = bench(gateway, "endpoint", "test", "nobody")
    assert failing.returncode == 1 and "no endpoint named 'nobody'" in failing.stderr
    ok(bench(gateway, "model", "register", "vendor/alpha", "--endpoint", "fake"))
    blocked = bench(gateway, "endpoint", "remove", "fake", "--yes")
    assert blocked.returncode == 1 and "alpha" in blocked.stderr
    removed = ok(bench(gateway, "endpoint", "rm", "fake", "--with-models", "--yes"))
    assert "removed endpoint fake" in removed.stdout and "retired with it: alpha" in removed.stderr
    assert json.loads(keys_file.read_text()) == {}


def test_an_endpoint_that_does_not_answer_fails_its_test(gateway: str, bench: Bench) -> None:
    ok(bench(gateway, "endpoint", "add", "down", "--base", f"http://127.0.0.1:{free_port()}/v1", "--no-key"))
    tested = bench(gateway, "endpoint", "test", "down")
    assert tested.returncode == 1 and "did not answer" in tested.stderr
    listed = bench(gateway, "candidates")
    assert listed.returncode == 1 and "down:" in listed.stderr


# ---- gateway keys, admin token, quotas ---------------------------------------------------------

TOKEN = "admin-token-for-the-cli-tests-0123"


@pytest.fixture
def guarded_server(settings: Settings, net: Loopback) -> str:
    return serve_gateway(net, settings, admin_token=TOKEN)


def test_tokens_go_where_they_belong(guarded_server: str, bench: Bench) -> None:
    refused = bench(guarded_server, "models")
    assert refused.returncode == 1 and "BENCHWARMERS_ADMIN_TOKEN" in refused.stderr
    ok(bench(guarded_server, "models", BENCHWARMERS_ADMIN_TOKEN=TOKEN))
    created = ok(bench(guarded_server, "key", "create", "my-app", "--rpm", "30", BENCHWARMERS_ADMIN_TOKEN=TOKEN))
    key = created.stdout.strip()
    assert len(created.stdout.splitlines()) == 1 and len(key) > 20
    assert "shown this once" in created.stderr and key not in created.stderr
    keyless = bench(guarded_server, "collections")
    assert keyless.returncode == 1 and "BENCHWARMERS_KEY" in keyless.stderr
    ok(bench(guarded_server, "collections", BENCHWARMERS_KEY=key))
    listed = ok(bench(guarded_server, "keys", BENCHWARMERS_ADMIN_TOKEN=TOKEN))
    assert "my-app" in listed.stdout and "30" in listed.stdout and key not in listed.stdout
    again = ok(bench(guarded_server, "key", "list", BENCHWARMERS_ADMIN_TOKEN=TOKEN)).stdout
    assert again.splitlines()[0] == listed.stdout.splitlines()[0] and "my-app" in again
    revoked = ok(bench(guarded_server, "key", "revoke", "my-app", "--yes", BENCHWARMERS_ADMIN_TOKEN=TOKEN))
    assert revoked.stdout.strip() == "revoked gateway key my-app"
    after = bench(guarded_server, "collections", BENCHWARMERS_KEY=key)
    assert after.returncode == 1


def test_key_create_with_collections(bench_with_models: str, bench: Bench) -> None:
    created = ok(bench(bench_with_models, "key", "create", "ci", "--collections", "core"))
    assert "for core" in created.stderr
    data = json.loads(ok(bench(bench_with_models, "keys", "--json")).stdout)["keys"]
    assert [(k["name"], k["collections"]) for k in data] == [("ci", ["core"])]


def test_quotas_as_tables(bench_with_models: str, bench: Bench) -> None:
    result = ok(bench(bench_with_models, "quotas"))
    assert "fake" in result.stdout and "calls this month" in result.stdout


def test_quotas_from_a_stand_in_server_and_an_older_one(net: Loopback, bench: Bench) -> None:
    reply = {"connections": [{
        "connection": "openrouter",
        "windows": [{"metric": "requests", "window": "day", "limit": 50, "used": 12, "remaining": 38,
                     "resets_at": "2099-01-01T00:00:00Z", "alias": None}],
        "resting": [{"alias": "mercury", "until": "2099-01-01T00:00:00Z", "why": "429 from upstream"}],
        "paused": None, "month": {"calls": 12, "tokens_in": 900, "tokens_out": 300}}]}

    async def quotas(request):
        return JSONResponse(reply)

    async def missing(request):
        return JSONResponse({"error": {"message": "no route GET /bench/quotas", "type": "x", "code": 404}},
                            status_code=404)

    with net.serving(Starlette(routes=[Route("/bench/quotas", quotas)])) as base:
        shown = ok(bench(base, "quotas"))
        assert json.loads(ok(bench(base, "quotas", "--json")).stdout) == reply
    lines = shown.stdout.splitlines()
    assert any(line.split()[:2] == ["openrouter", "12"] for line in lines)
    assert any("requests" in line and "38" in line and "2099-01-01" in line for line in lines)
    assert any("mercury" in line and "429 from upstream" in line for line in lines)
    with net.serving(Starlette(routes=[Route("/bench/quotas", missing)])) as base:
        older = bench(base, "quotas")
    assert older.returncode == 1 and "older than this CLI" in older.stderr


def test_model_register_refuses_a_name_the_endpoint_does_not_list_unless_forced(
        bench_with_models: str, bench: Bench) -> None:
    refused = bench(bench_with_models, "model", "register", "alpah", "--endpoint", "fake")
    assert refused.returncode == 1, refused.stdout
    assert "fake does not list alpah" in refused.stderr and "--force" in refused.stderr
    assert "alpah" not in ok(bench(bench_with_models, "models")).stdout, "nothing registered"
    forced = ok(bench(bench_with_models, "model", "register", "alpah", "--endpoint", "fake", "--force"))
    assert "registered alpah (alpah on fake, untested)" in forced.stdout
    assert "warning: fake does not list alpah" in forced.stderr and "registered anyway" in forced.stderr
