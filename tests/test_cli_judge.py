"""Judging from the terminal (issue 30.5), on both backends: ``bench panels`` lists and filters the
panels asked, ``bench panel show`` shows one whole (prompt, who asked, each seat with its answer,
the claims map, the verdict history), ``bench judge`` judges the inbox one key a seat through a pipe
(a whole panel in as many keys as it has seats; a note and a claim mark on the way, the mark on
every seat that made the claim and kept when the seat is judged), a scoped gateway key's
``bench panels`` and ``bench judge`` see only its collections, ``bench ask`` prints the panel's page
on stderr; and on a terminal a key counts without Enter. The inbox's keys are one table
(``judge_keys``)."""

from __future__ import annotations

import io
import os
import pty
import termios
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.cli.client import build_parser
from benchwarmers_mcp.cli.cmd_judge import parse_marks
from benchwarmers_mcp.cli.keys import ESC, KeyReader
from benchwarmers_mcp.judge_keys import BY_ACTION, KEYS, action_of, legend
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.cli import Bench, bench, ok  # noqa: F401 (the fixture)
from tests.kits.gateway import serve_gateway
from tests.kits.judging import ANSWERS, PROMPT, ask, lines_of, seat_calls, seed_judging, shared_group
from tests.kits.loopback import Loopback

pytestmark = pytest.mark.backends


@pytest.fixture
def judging(home: Path, upstream: str, fake: FakeUpstream) -> Path:
    seed_judging(home, upstream, fake, broken="broken?fail=500")
    return home


def test_ask_prints_the_panels_page_and_panels_lists_and_filters(judging: Path, gateway: str, http: httpx.Client,
                                                                 bench: Bench) -> None:  # noqa: F811
    asked = ok(bench(gateway, "ask", "core", PROMPT))
    (cli_panel,) = [p["id"] for p in http.get(gateway + "/bench/panels", params={"source": "cli"}).json()["panels"]]
    assert f"panel page: {gateway}/panels/{cli_panel}\n" in asked.stderr
    assert "/panels/" not in asked.stdout  # the answers alone on stdout
    sdk_panel = ask(http, gateway, "other")["panel"]

    listed = ok(bench(gateway, "panels"))
    assert listed.stdout.index(sdk_panel) < listed.stdout.index(cli_panel)  # newest first
    assert "bench/other" in listed.stdout and "3 owed of 4" in listed.stdout
    assert "seats owed a verdict" in listed.stderr
    only_cli = ok(bench(gateway, "panels", "--source", "cli")).stdout
    assert cli_panel in only_cli and sdk_panel not in only_cli and "cli (benchwarmers-cli/" in only_cli
    only_other = ok(bench(gateway, "panels", "--collection", "bench/other")).stdout
    assert sdk_panel in only_other and cli_panel not in only_other
    assert cli_panel in ok(bench(gateway, "panels", "--model", "alpha", "--owed")).stdout

    for call in seat_calls(http.get(gateway + f"/bench/panels/{cli_panel}").json()).values():
        http.post(gateway + "/bench/verdict", json={"call": call, "useful": False})
    owed = ok(bench(gateway, "panels", "--owed")).stdout
    assert cli_panel not in owed and sdk_panel in owed
    as_json = ok(bench(gateway, "panels", "--owed", "--json"))
    assert '"owed_total"' in as_json.stdout
    bad = bench(gateway, "panels", "--source", "elsewhere")
    assert bad.returncode == 2


def test_panel_show_gives_the_prompt_who_asked_every_seat_the_claims_and_the_history(
        judging: Path, gateway: str, http: httpx.Client, bench: Bench) -> None:  # noqa: F811
    bench_field = ask(http, gateway)
    panel, calls = bench_field["panel"], seat_calls(bench_field)
    http.post(gateway + "/bench/verdict", json={"call": calls["alpha"], "useful": False, "note": "first look"})
    http.post(gateway + "/bench/verdict", json={"call": calls["alpha"], "useful": True, "note": "read it again"})
    shown = ok(bench(gateway, "panel", "show", panel)).stdout
    assert f"panel {panel} · bench/core" in shown and "asked by gateway" in shown
    assert f"prompt:\n    {PROMPT}\n" in shown
    for alias, call in calls.items():
        assert call in shown and alias in shown
    for answer in ANSWERS.values():
        assert answer.splitlines()[0] in shown
    assert "(no answer:" in shown  # the errored seat, with its error
    assert "tokens" in shown and " s · " in shown
    history = shown.split(f"{calls['alpha']} · ok", 1)[1].split("──", 1)[0]
    assert history.index("not useful") < history.index("useful · by") and "note: read it again" in history
    claims = shown.split("claims several seats made:", 1)[1]
    group = shared_group(http.get(gateway + f"/bench/panels/{panel}").json())
    assert group["id"] in claims.split("claims only one seat made", 1)[0] and "[member1, member2]" in claims
    assert "claims only one seat made (look here first):" in shown
    missing = bench(gateway, "panel", "show", "p20000101-000000-abcd")
    assert missing.returncode == 1 and "no panel" in missing.stderr


def test_judge_takes_a_whole_panel_one_key_a_seat_through_a_pipe(judging: Path, gateway: str, http: httpx.Client,
                                                                 bench: Bench) -> None:  # noqa: F811
    calls = seat_calls(ask(http, gateway))
    one_model = ok(bench(gateway, "judge", "--model", "beta", stdin="x\n"))  # beta's seat alone
    assert [len(lines_of(judging, calls[a])) for a in ("alpha", "beta", "gamma")] == [0, 1, 0]
    assert "judged 1 seat; 0 still owed" in one_model.stdout and "seat 1 of 1" in one_model.stdout
    newer = seat_calls(ask(http, gateway))  # a second panel: judged first, newest first
    judged = ok(bench(gateway, "judge", stdin="u\nx\nu\n" + "u\nu\n"))  # one key a seat, no more
    assert [lines_of(judging, newer[a])[-1].verdict.useful for a in ("alpha", "beta", "gamma")] == [True, False, True]
    assert [lines_of(judging, calls[a])[-1].verdict.useful for a in ("alpha", "beta", "gamma")] == [True, False, True]
    assert lines_of(judging, calls["broken"]) == []
    out = judged.stdout
    assert f"keys: {legend()}" in out and "not answered (nothing to judge useful): " in out and "broken" in out
    assert "judged 5 seats; 0 still owed" in out and "nothing left to judge here" in out
    assert ANSWERS["beta"].splitlines()[0] in out
    assert judged.stderr == ""  # no prompt is written for a pipe


def test_judge_takes_a_note_and_claim_marks_and_keeps_them(judging: Path, gateway: str, http: httpx.Client,
                                                           bench: Bench) -> None:  # noqa: F811
    bench_field = ask(http, gateway)
    calls, panel = seat_calls(bench_field), bench_field["panel"]
    group = shared_group(http.get(gateway + f"/bench/panels/{panel}").json())
    wording = {c["call"]: c["text"] for c in group["claims"]}
    # on alpha: a note and claim 1 (the one alpha and beta made) false; a key that is nothing, the
    # next seat and back, useful; then beta not useful; then quit with gamma still owed
    keys = "c\nwrong about the SQL\n1 false\nz\nj\nk\nu\nx\nq\n"
    judged = ok(bench(gateway, "judge", stdin=keys))
    alpha, beta = lines_of(judging, calls["alpha"])[-1].verdict, lines_of(judging, calls["beta"])[-1].verdict
    assert (alpha.useful, alpha.note, alpha.false) == (True, "wrong about the SQL", (wording[calls["alpha"]],))
    assert (beta.useful, beta.false) == (False, (wording[calls["beta"]],))  # the mark stayed with the verdict
    assert lines_of(judging, calls["gamma"]) == []
    assert "claim 1 marked false on member1, member2" in judged.stdout
    assert "'z' does nothing here; ? lists the keys" in judged.stdout
    assert "judged 2 seats; 1 still owed" in judged.stdout
    assert judged.stdout.count("── seat 2 of 3") == 2  # j showed beta, and x's move on showed it again


def test_bench_verdict_marks_claims_on_every_seat_that_made_them(judging: Path, gateway: str, http: httpx.Client,
                                                               bench: Bench) -> None:  # noqa: F811
    bench_field = ask(http, gateway)
    calls, panel = seat_calls(bench_field), bench_field["panel"]
    group = shared_group(http.get(gateway + f"/bench/panels/{panel}").json())
    ok(bench(gateway, "verdict", calls["beta"], "--not-useful", "--claim", f"{group['id']}=false"))
    wording = {c["call"]: c["text"] for c in group["claims"]}
    assert lines_of(judging, calls["beta"])[-1].verdict.false == (wording[calls["beta"]],)
    assert lines_of(judging, calls["alpha"])[-1].verdict.false == (wording[calls["alpha"]],)
    bad = bench(gateway, "verdict", calls["beta"], "--useful", "--claim", group["id"])
    assert bad.returncode == 2 and "--claim" in bad.stderr


def test_a_scoped_keys_panels_and_judge_see_only_its_collections(home: Path, upstream: str, fake: FakeUpstream,
                                                                 settings: Settings, net: Loopback, http: httpx.Client,
                                                                 bench: Bench) -> None:  # noqa: F811
    seed_judging(home, upstream, fake)

    async def make() -> dict[str, str]:
        async with Database(settings.store_target) as db:
            return {name: (await gateway_keys.create(db, f"{name}-key", scope))[1]
                    for name, scope in (("core", ["core"]), ("other", ["other"]))}

    keys = anyio.run(make)
    base = serve_gateway(net, settings, require_keys=True)
    core_panel = ask(http, base, "core", {"Authorization": f"Bearer {keys['core']}"})
    other_panel = ask(http, base, "other", {"Authorization": f"Bearer {keys['other']}"})

    listed = ok(bench(base, "panels", BENCHWARMERS_KEY=keys["other"])).stdout
    assert other_panel["panel"] in listed and core_panel["panel"] not in listed
    judged = ok(bench(base, "judge", stdin="u\n" * 10, BENCHWARMERS_KEY=keys["other"]))
    assert core_panel["panel"] not in judged.stdout and other_panel["panel"] in judged.stdout
    for call in seat_calls(other_panel).values():
        assert lines_of(home, call)[-1].verdict.useful is True
    for call in seat_calls(core_panel).values():
        assert lines_of(home, call) == []
    assert "0 still owed" in judged.stdout  # its own count: the core panel's seats are not its to see
    refused = bench(base, "panel", "show", core_panel["panel"], BENCHWARMERS_KEY=keys["other"])
    assert refused.returncode == 1 and "(HTTP 403)" in refused.stderr and "bench/core" not in refused.stderr


def test_the_inboxs_keys_are_one_table() -> None:
    assert len({k.key for k in KEYS}) == len(KEYS) == len({k.action for k in KEYS})
    assert all(len(k.key) == 1 for k in KEYS)
    assert [action_of(k.key) for k in KEYS] == [k.action for k in KEYS] and action_of("Z") is None
    assert BY_ACTION["useful"] == "u" and BY_ACTION["not_useful"] == "x"
    judge = build_parser()._subparsers._group_actions[0].choices["judge"]  # type: ignore[union-attr]
    assert legend() in (judge.description or "")
    assert parse_marks("1 real, 2f 3=none", 3) == ([(1, "real"), (2, "false"), (3, "none")], [])
    assert parse_marks("4 real, one false", 3)[1] == ["there is no claim 4 (1 to 3)",
                                                       "'one false' is not '<number> real|false|none'"]


@pytest.mark.anyio
async def test_on_a_terminal_a_key_counts_without_enter() -> None:
    master, slave = pty.openpty()
    terminal = os.fdopen(slave, "r")
    try:
        before = termios.tcgetattr(slave)
        reader = KeyReader(terminal, prompts=io.StringIO())
        assert reader.raw
        with reader.session():
            assert not termios.tcgetattr(slave)[3] & termios.ICANON  # no line editing: each key at once
            os.write(master, b"u")
            assert await reader.key() == "u"
            os.write(master, b"jk")  # typed faster than read: two keys, in order
            assert [await reader.key(), await reader.key()] == ["j", "k"]
            os.write(master, b"\x1b[A")  # an arrow: one sequence, no key of the inbox's
            assert await reader.key() == ESC
            os.write(master, b"a note\n")
            assert await reader.line("note: ") == "a note"
            assert not termios.tcgetattr(slave)[3] & termios.ICANON  # keys again after the line
        assert termios.tcgetattr(slave) == before
    finally:
        terminal.close()
        os.close(master)
