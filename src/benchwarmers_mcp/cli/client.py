"""``bench`` / ``benchwarmers`` client commands: a thin HTTP client of a running server.

``cli/main.py`` runs the server commands (serve, demo, init, mcp) and hands every other command
to ``main(argv)`` here. Nothing of the engine is imported: the same commands work against a
server on another machine (``--url`` or ``BENCHWARMERS_URL``).

Exit codes: 0 done, 1 refused or failed (the reason on stderr), 2 bad usage, 3 no server at the
URL, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from benchwarmers_mcp import __version__
from benchwarmers_mcp.cli import (
    cmd_ask,
    cmd_bench,
    cmd_catalog,
    cmd_connect,
    cmd_health,
    cmd_hubs,
    cmd_judge,
    cmd_models,
    cmd_panels,
    cmd_providers,
    cmd_ratings,
    cmd_suite,
)
from benchwarmers_mcp.cli.remote import CliError, Remote, config_from_env
from benchwarmers_mcp.client import DEFAULT_URL, ServerConfig
from benchwarmers_mcp.judge_keys import legend

Handler = Callable[[argparse.Namespace, Remote], Awaitable[int]]
RAW = argparse.RawDescriptionHelpFormatter
if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]  # what add_subparsers returns

OVERVIEW = f"""\
Benchwarmers from a terminal: ask and judge, and run the bench itself. A client of a running
server: --url, else BENCHWARMERS_URL, else the server BENCH_BIND and BENCH_PORT start on this
machine, read as `benchwarmers serve` reads them ({DEFAULT_URL} when neither is set).

server side (run on the machine that keeps the data):
  benchwarmers serve | demo | init | mcp

environment:
  BENCHWARMERS_URL          the server (e.g. https://bench.example.com); unset: this machine's, below
  BENCH_BIND, BENCH_PORT    where `benchwarmers serve` listens here (BENCH_PORT=8133 bench status)
  BENCHWARMERS_ADMIN_TOKEN  sent on admin commands, when the server has one
  BENCHWARMERS_KEY          a gateway key, sent by ask, collections, verdict and quotas
  BENCHWARMERS_TIMEOUT      seconds one exchange may take, a streamed answer included (default 900)

exit codes: 0 done, 1 refused or failed, 2 bad usage, 3 no server at the URL
"""

TOP_EXAMPLES = """\
examples:
  bench status
  bench ask core "Where can this return a stale value?" -f cache.py
  git diff | bench ask core "Review this diff"
  bench verdict p20260101-120000-ab12.member1 --useful --real "the race in refresh()"
  bench panels --owed
  bench judge
  bench endpoint add openrouter --base https://openrouter.ai/api/v1
  bench candidates --new
  bench discover --free
  bench model register vendor/model:free --endpoint openrouter
  bench model facts laguna-m.1-free
  bench collection save core --members a,b,c --description "code review"

every command takes --help (with examples), --json and --url.
"""


def prog_name() -> str:
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "bench"
    return name if name in ("bench", "benchwarmers") else "bench"


class Builder:
    """Adds commands that all take --json and --url, each with its examples in --help."""

    def __init__(self) -> None:
        self.common = argparse.ArgumentParser(add_help=False)
        self.common.add_argument("--url", default=argparse.SUPPRESS,
                                 help=f"the server for this command (default: BENCHWARMERS_URL, else BENCH_PORT's server here, else"
                                 f" {DEFAULT_URL})")
        self.common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                                 help="print what the server answered, as JSON")

    def command(self, sub: Subparsers, name: str, handler: Handler | None, summary: str, examples: list[str],
                aliases: tuple[str, ...] = (), args: tuple[str, ...] = ()) -> argparse.ArgumentParser:
        """``args``: the command's plain positional arguments (an alias, a name), first in its usage."""
        epilog = "examples:\n" + "\n".join(f"  {e}" for e in examples)
        parser = sub.add_parser(name, help=summary, description=summary, epilog=epilog, aliases=list(aliases),
                                parents=[self.common], formatter_class=RAW)
        for arg in args:
            parser.add_argument(arg)
        if handler is not None:
            parser.set_defaults(handler=handler)
        return parser

    def group(self, sub: Subparsers, name: str, summary: str, examples: list[str],
              aliases: tuple[str, ...] = ()) -> tuple[argparse.ArgumentParser, Subparsers]:
        parser = self.command(sub, name, None, summary, examples, aliases)
        return parser, parser.add_subparsers(dest=f"{name}_command", metavar="<subcommand>", required=True)


class RefuseKey(argparse.Action):
    """``--key VALUE`` is refused by name: a key on the command line is readable by anyone on the machine."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error("a key is never an argument (others on this machine can read the argument list): leave it "
                     "out to be asked with no echo, or pipe it in with --key-stdin")


def refuse_key_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key", "--api-key", action=RefuseKey, nargs="?", help=argparse.SUPPRESS)


def yes_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", "-y", action="store_true", help="answer the confirmation (for scripts)")


def build_parser() -> argparse.ArgumentParser:
    prog = prog_name()
    top = argparse.ArgumentParser(prog=prog, description=OVERVIEW, epilog=TOP_EXAMPLES, formatter_class=RAW)
    top.add_argument("--url", default=None, help=f"the server (default: BENCHWARMERS_URL, else BENCH_PORT's server here, else {DEFAULT_URL})")
    top.add_argument("--json", action="store_true", default=False, help="print what the server answered")
    top.add_argument("--version", "-v", action="version", version=f"benchwarmers {__version__}")
    sub = top.add_subparsers(dest="command", metavar="<command>", required=True)
    b = Builder()
    add_everyday(b, sub)
    add_models(b, sub)
    add_endpoints(b, sub)
    add_admin(b, sub)
    cmd_catalog.add_commands(b, sub)
    cmd_suite.register(b, sub)
    cmd_ratings.register(b, sub)
    cmd_health.add(b, sub)
    cmd_hubs.register(b, sub)
    cmd_providers.register(b, sub)
    return top


def add_everyday(b: Builder, sub: Subparsers) -> None:
    b.command(sub, "status", cmd_bench.status, "what is running, and where", ["bench status", "bench status --json"])
    b.command(sub, "collections", cmd_bench.collections, "the collections you can ask",
              ["bench collections", "bench collections --url http://otherhost:8122"])
    ask = b.command(sub, "ask", cmd_ask.ask, "ask a collection: answers on stdout, the seats table on stderr", [
        'bench ask core "Where can this return a stale value?" -f cache.py',
        'git diff | bench ask core "Review this diff"',
        'bench ask core "Which design is simpler?" -f a.md -f b.md --merged',
        'bench ask core "Check this" --with mercury,lark > review.md',
        'bench ask core - < question.txt'])
    ask.add_argument("collection", help="the collection (core or bench/core)")
    ask.add_argument("prompt", nargs="*", help="the prompt; '-' or none reads it from stdin")
    ask.add_argument("-f", "--file", action="append", metavar="FILE",
                     help="attach a file (repeatable): text as a fenced block titled with its name, or an image")
    ask.add_argument("--system", help="a system prompt for every seat")
    mode = ask.add_mutually_exclusive_group()
    mode.add_argument("--merged", action="store_true", help="one merged answer (every seat still listed)")
    mode.add_argument("--all", action="store_true", help="every answer, whatever the collection's reply mode")
    ask.add_argument("--with", dest="with_", action="append", metavar="A,B",
                     help="nominate models for the explorer seats (repeatable, or comma-separated)")
    verdict = b.command(sub, "verdict", cmd_ask.verdict, "record a verdict on one call, once checked", [
        "bench verdict p20260101-120000-ab12.member1 --useful --note 'found the real bug'",
        'bench verdict p20260101-120000-ab12.explorer1 --not-useful --false "the SQL injection"',
        'bench verdict <call> --useful --real "the race in refresh()" --real "the stale cache"',
        "bench verdict <call> --not-useful --claim 3f9c2a1b=false"])
    verdict.add_argument("call", help="the call id from the seats table")
    judged = verdict.add_mutually_exclusive_group(required=True)
    judged.add_argument("--useful", dest="useful", action="store_true", default=None)
    judged.add_argument("--not-useful", dest="useful", action="store_false")
    verdict.add_argument("--note", help="one line on why")
    verdict.add_argument("--real", action="append", metavar="CLAIM", help="a claim you verified (repeatable)")
    verdict.add_argument("--false", action="append", metavar="CLAIM", help="a claim that was false (repeatable)")
    verdict.add_argument("--claim", action="append", metavar="ID=real|false|none",
                         help="mark a claim of the panel (its id from bench panel show) on every seat that made it "
                              "(repeatable)")
    add_judging(b, sub)


def _panel_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--collection", metavar="C", help="only this collection's panels")
    parser.add_argument("--source", choices=cmd_panels.SOURCES, help="only panels asked from here")
    parser.add_argument("--model", metavar="ALIAS", help="only panels this model sat on (with --owed: its seat owed)")


def add_judging(b: Builder, sub: Subparsers) -> None:
    listed = b.command(sub, "panels", cmd_panels.panels, "the panels asked, newest first, and the seats owed a verdict", [
        "bench panels --owed", "bench panels --collection core --source gateway",
        "bench panels --model mercury --owed", "bench panels --json"])
    listed.add_argument("--owed", action="store_true", help="only panels with a seat still owed a verdict")
    _panel_filters(listed)
    listed.add_argument("--limit", type=int, metavar="N", help="panels to list (1 to 200, default 50)")
    listed.add_argument("--before", metavar="PANEL", help="the panels asked before this one (the next page)")
    _, psub = b.group(sub, "panel", "one panel whole: prompt, who asked, every seat's answer, claims, verdicts", [
        "bench panel show p20260101-120000-ab12"])
    shown = b.command(psub, "show", cmd_panels.panel_show, "one panel (or route conversation) whole", [
        "bench panel show p20260101-120000-ab12", "bench panel show r20260101-120000-cd34",
        "bench panel show p20260101-120000-ab12 --json"])
    shown.add_argument("id", help="the panel id (bench panels lists them), or a route conversation's")
    judge = b.command(sub, "judge", cmd_judge.judge, "judge the seats owed a verdict, one key a seat: "
                      f"{legend()}", [
        "bench judge", "bench judge --collection core", "bench judge --source gateway --model mercury",
        "printf 'u\\nx\\nq\\n' | bench judge   # from a script: one key a line"])
    _panel_filters(judge)


def add_models(b: Builder, sub: Subparsers) -> None:
    models = b.command(sub, "models", cmd_models.models, "the roster, with each model's status", [
        "bench models", "bench models --find mercury", "bench models --all --role code"])
    models.add_argument("--all", action="store_true", help="include retired models")
    models.add_argument("--find", metavar="TEXT", help="only aliases or served names containing TEXT")
    models.add_argument("--role", help="only this role (general, code, light, image, vision, decision)")
    cands = b.command(sub, "candidates", cmd_models.candidates, "what your endpoints serve, and what is not on "
                      "the bench", ["bench candidates --new", "bench candidates --endpoint openrouter --find free",
                                    "bench candidates dismiss vendor/model:free@openrouter"])
    cands.add_argument("action", nargs="?", choices=("dismiss", "undismiss"),
                       help="dismiss: leave one out from now on (undismiss: bring it back)")
    cands.add_argument("key", nargs="?", metavar="SERVED@ENDPOINT", help="with dismiss: the candidate")
    cands.add_argument("--dismissed", action="store_true", help="include the dismissed ones")
    cands.add_argument("--endpoint", help="only this endpoint")
    cands.add_argument("--new", action="store_true", help="only what is not registered yet")
    cands.add_argument("--find", metavar="TEXT", help="only served names containing TEXT")

    _, msub = b.group(sub, "model", "register, retire, restore or change one model", [
        "bench model register vendor/model:free --endpoint openrouter",
        'bench model retire laguna-m.1-free --reason "stopped answering"', "bench model restore laguna-m.1-free",
        "bench model set mercury --vision on --context 128000"])
    reg = b.command(msub, "register", cmd_models.model_register, "put a served model on the bench", [
        "bench model register poolside/laguna-m.1:free --endpoint openrouter   # alias laguna-m.1-free",
        "bench model register gpt-4o-mini --endpoint openai --alias mini --role light"])
    reg.add_argument("served", help="the served name, as the endpoint lists it (bench candidates)")
    reg.add_argument("--endpoint", required=True, help="the endpoint that serves it")
    reg.add_argument("--alias", help="the bench's name for it (default: from the served name)")
    reg.add_argument("--role", help="general (default), code, light, image, vision or decision")
    reg.add_argument("--ad-hoc", action="store_true", help="never seated on its own (explorers skip it)")
    reg.add_argument("--force", action="store_true",
                     help="register it even though the endpoint's listing does not name it")
    retire = b.command(msub, "retire", cmd_models.model_retire, "stop seating a model; its record stays", [
        'bench model retire mercury --reason "confidently wrong on reviews"', "bench model retire mercury --yes"],
        args=("alias",))
    retire.add_argument("--reason", default="retired by hand", help="why (kept with the record)")
    yes_flag(retire)
    b.command(msub, "restore", cmd_models.model_restore, "bring a retired model back",
              ["bench model restore mercury"], args=("alias",))
    b.command(msub, "show", cmd_models.model_show, "one model: its status and why, its record and facts",
              ["bench model show mercury", "bench model show mercury --json"], args=("alias",))
    b.command(msub, "facts", cmd_models.model_facts, "every fact known about a model, and where each came from",
              ["bench model facts mercury", "bench model facts mercury --json"], args=("alias",))
    cmd_health.add_retry(b, msub)
    add_model_changes(b, msub)


def add_model_changes(b: Builder, msub: Subparsers) -> None:
    onoff = ("on", "off", "unknown")
    change = b.command(msub, "set", cmd_models.model_set, "change what is known about a model", [
        "bench model set mercury --role code", "bench model set lark --vision on --tools off",
        "bench model set mole --context 32000 --max-output 4096", "bench model set mole --ad-hoc on"],
        args=("alias",))
    change.add_argument("--role", help="general, code, light, image, vision or decision")
    change.add_argument("--vision", choices=onoff, help="reads images")
    change.add_argument("--tools", choices=onoff, help="calls tools")
    change.add_argument("--context", metavar="TOKENS", help="context window (or 'unknown')")
    change.add_argument("--max-output", metavar="TOKENS", help="output limit (or 'unknown')")
    change.add_argument("--ad-hoc", choices=("on", "off"), help="ad hoc: only seated when asked for")
    role = b.command(msub, "role", cmd_models.model_set, "set a model's role",
                     ["bench model role lark vision", "bench model role mercury code"], args=("alias",))
    role.add_argument("role", help="general, code, light, image, vision or decision")
    adhoc = b.command(msub, "ad-hoc", cmd_models.model_set, "mark a model ad hoc (or not)",
                      ["bench model ad-hoc pricey-model on", "bench model ad-hoc pricey-model off"],
                      args=("alias",))
    adhoc.add_argument("ad_hoc", choices=("on", "off"))


def add_endpoints(b: Builder, sub: Subparsers) -> None:
    b.command(sub, "endpoints", cmd_models.endpoint_list, "the endpoints models are served from",
              ["bench endpoints", "bench endpoints --json"])
    _, esub = b.group(sub, "endpoint", "add, test, re-key or remove an endpoint", [
        "bench endpoint add openrouter --base https://openrouter.ai/api/v1",
        "pass show openrouter | bench endpoint add openrouter --base https://openrouter.ai/api/v1 --key-stdin",
        "bench endpoint test openrouter", "bench endpoint remove openrouter --with-models",
        "bench endpoint connect github --device   # sign in with a provider instead of pasting a key"])
    b.command(esub, "list", cmd_models.endpoint_list, "the endpoints", ["bench endpoint list"])
    add = b.command(esub, "add", cmd_models.endpoint_add, "add (or change) an endpoint; asks for its key, hidden", [
        "bench endpoint add openrouter --base https://openrouter.ai/api/v1",
        "echo \"$KEY\" | bench endpoint add groq --base https://api.groq.com/openai/v1 --key-stdin",
        "bench endpoint add ollama --base http://127.0.0.1:11434/v1 --kind local --no-key"])
    add.add_argument("name", help="lower-case letters, digits and '-'")
    add.add_argument("--base", help="the base URL, e.g. https://host/v1 (needed for a new endpoint)")
    add.add_argument("--api", help="chat (default), responses, anthropic, gemini or ollama")
    add.add_argument("--kind", help="provider (default), aggregator, hub or local")
    add.add_argument("--key-name", help="the key store name for its key (default: the endpoint's name)")
    add.add_argument("--hub", choices=("litellm", "openwebui", "cliproxy"),
                     help="it is a hub of this kind (its admin key: bench endpoint key NAME --admin)")
    keys = add.add_mutually_exclusive_group()
    keys.add_argument("--key-stdin", action="store_true", help="read the key from stdin (never an argument)")
    keys.add_argument("--no-key", action="store_true", help="do not ask for a key (local endpoints)")
    refuse_key_argument(add)
    key = b.command(esub, "key", cmd_models.endpoint_key, "replace an endpoint's key (asked hidden, or stdin)", [
        "bench endpoint key openrouter", "pass show openrouter | bench endpoint key openrouter --key-stdin"],
        args=("name",))
    key.add_argument("--key-stdin", action="store_true", help="read the key from stdin")
    key.add_argument("--admin", action="store_true", help="a hub's admin key (its master or management key)")
    refuse_key_argument(key)
    b.command(esub, "test", cmd_models.endpoint_test, "call the endpoint's model listing with its key",
              ["bench endpoint test openrouter"], args=("name",))
    rm = b.command(esub, "remove", cmd_models.endpoint_remove, "remove an endpoint (asks first)", [
        "bench endpoint remove old-hub", "bench endpoint remove old-hub --with-models --yes"],
        aliases=("rm",), args=("name",))
    rm.add_argument("--with-models", action="store_true", help="retire the models it serves, too")
    yes_flag(rm)
    cmd_connect.add_commands(b, esub)


def add_admin(b: Builder, sub: Subparsers) -> None:
    _, csub = b.group(sub, "collection", "show, save or delete a collection", [
        'bench collection save reviewers --members a,b,c --description "adversarial review"',
        "bench collection save reviewers --add d --remove a", "bench collection delete reviewers"])
    b.command(csub, "show", cmd_bench.collection_show, "one collection in full", ["bench collection show core"],
              args=("name",))
    save = b.command(csub, "save", cmd_bench.collection_save, "create a collection, or change what is given", [
        'bench collection save reviewers --members a,b,c --description "adversarial review"',
        "bench collection save reviewers --add d --remove a",
        "bench collection save designers --members x,y --shape design --reply merged --tags design,docs"],
        args=("name",))
    save.add_argument("--members", metavar="A,B,C", help="the members, replacing the list")
    save.add_argument("--add", metavar="A,B", help="add members")
    save.add_argument("--remove", metavar="A,B", help="remove members")
    save.add_argument("--description", help="what it is for (at most 300 characters)")
    save.add_argument("--tags", metavar="T1,T2", help="up to 8 tags")
    save.add_argument("--shape", help="review, code, design, prose, enumeration, quick, vision, image or general")
    save.add_argument("--reply", choices=("all", "merged", "route"), help="how it answers by default")
    save.add_argument("--merger", metavar="ALIAS", help="who writes merged replies (default: by record)")
    delete = b.command(csub, "delete", cmd_bench.collection_delete, "delete a collection (asks first)",
                       ["bench collection delete reviewers", "bench collection rm reviewers --yes"], aliases=("rm",),
                       args=("name",))
    yes_flag(delete)

    settings = b.command(sub, "settings", cmd_health.settings,
                         "show or change the gateway, scheduler, learning and retention settings", [
        "bench settings", "bench settings gateway --max-calls 6 --max-explorers 1",
        "bench settings scheduler run --off perf", "bench settings scheduler --at availability=04:30",
        "bench settings learning --auto on", "bench settings learning --shadow agents:on",
        "bench settings retention", "bench settings retention --days 30"])
    settings.add_argument("section", nargs="?", choices=("gateway", "scheduler", "learning", "retention"),
                          help="the settings to change")
    settings.add_argument("--days", type=int, help="retention: days prompts and answers are kept (default 90)")
    cmd_health.add_settings(settings)
    settings.add_argument("--max-calls", type=int, help="seats per panel, members included (1 to 10)")
    settings.add_argument("--max-explorers", type=int, help="explorer seats per panel (0 to 2)")
    cmd_ratings.add_learning_flags(settings)
    b.command(sub, "quotas", cmd_bench.quotas, "rate-limit windows per connection, and who is resting",
              ["bench quotas", "bench quotas --json"])
    add_keys(b, sub)


def add_keys(b: Builder, sub: Subparsers) -> None:
    b.command(sub, "keys", cmd_bench.key_list, "gateway keys: names and hints, never a key", ["bench keys"])
    _, ksub = b.group(sub, "key", "create, list or revoke gateway keys", [
        "bench key create my-app --collections core --rpm 30", "bench key revoke my-app"])
    b.command(ksub, "list", cmd_bench.key_list, "gateway keys: names and hints", ["bench key list"])
    create = b.command(ksub, "create", cmd_bench.key_create, "make a gateway key; it is printed once, on stdout", [
        "bench key create my-app", "bench key create ci --collections core,reviewers --rpm 30 > ci.key"],
        args=("name",))
    create.add_argument("--collections", metavar="A,B", help="only these collections (default: all)")
    create.add_argument("--rpm", type=int, help="requests a minute allowed")
    revoke = b.command(ksub, "revoke", cmd_bench.key_revoke, "revoke a gateway key (asks first)",
                       ["bench key revoke my-app", "bench key revoke my-app --yes"], args=("name",))
    yes_flag(revoke)


async def run(handler: Handler, args: argparse.Namespace, config: ServerConfig,
              transport: httpx.AsyncBaseTransport | None = None) -> int:
    async with Remote(config, transport=transport) as remote:
        return await handler(args, remote)


def main(argv: list[str] | None = None, *, transport: httpx.AsyncBaseTransport | None = None) -> int:
    """``transport`` is a test seam: the commands reach an in-process server through it."""
    argv = sys.argv[1:] if argv is None else argv
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        config = config_from_env(args.url)
        return anyio.run(run, args.handler, args, config, transport)
    except CliError as e:
        print(f"{parser.prog}: {e.message}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
