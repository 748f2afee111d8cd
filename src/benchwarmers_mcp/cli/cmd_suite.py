"""``bench suite ...``: the review suite from a terminal (a thin client of ``/api/suite/``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from benchwarmers_mcp.cli.console import note, show_json
from benchwarmers_mcp.cli.remote import CliError, Remote, given
from benchwarmers_mcp.cli.tables import ago, table

POLL = (0.2, 2.0)  # the first look soon after, then every two seconds at most


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _interval(pair: list[float] | None) -> str:
    return "-" if not pair else f"{pair[0] * 100:.0f}-{pair[1] * 100:.0f}%"


async def suite_list(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/suite/tasks", {"drafts": "1" if args.drafts else None})
    if show_json(args, reply):
        return 0
    rows = [(t["id"], t["origin"], t["shape"], t.get("kind"), t["expects"], "draft" if t["draft"] else "", t["title"])
            for t in reply["tasks"]]
    table(("task", "from", "shape", "kind", "expects", "", "title"), rows)
    c = reply["counts"]
    note(f"{c['live']} live task(s), {c['drafts']} draft(s) ({c['pack']} from the starter pack, {c['data']} in "
         f"{reply['data_folder']})")
    for bad in reply["invalid"]:
        note(f"invalid task {bad['id']} ({bad['origin']}): {'; '.join(bad['problems'])}")
    return 0


async def suite_show(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/suite/task", {"id": args.id})
    if show_json(args, reply):
        return 0
    if not reply.get("valid"):
        raise CliError(f"task {args.id} is invalid: {'; '.join(reply.get('problems') or [])}")
    print(f"{reply['id']}  {reply['title']}  ({reply['origin']}, {reply['shape']}, expects {reply['expects']}"
          f"{', draft' if reply['draft'] else ''})")
    print(f"folder  {reply['folder']}")
    if reply.get("prompt_problems"):
        note("cannot build its prompt: " + "; ".join(reply["prompt_problems"]))
    else:
        print("\n" + reply["prompt"])
    return 0


async def suite_scores(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/suite/scores", {"model": args.model})
    if show_json(args, reply):
        return 0
    rows = [(m["alias"], m["found"], m["wrong_line"], m["missed"], m["clean"], m["false_alarm"], m["invented"],
             m["not_a_score"], _pct(m["recall"]), _interval(m["recall_interval"]), _pct(m["confidently_wrong"]),
             ago(m["last_at"])) for m in reply["models"]]
    table(("model", "found", "wrong line", "missed", "clean", "false alarm", "invented", "not a score", "recall",
           "95% interval", "conf. wrong", "last"), rows)
    if not rows:
        note("no scores yet: bench suite run --model <alias> (or --next-free)")
    return 0


def _run_line(run: dict[str, Any]) -> str:
    items = run.get("items") or {}
    left = sum(v for k, v in items.items() if k != "done")
    rest = f", resting until {time.strftime('%H:%M', time.localtime(run['resting_until']))}" \
        if run.get("resting_until") else ""
    return f"run {run['id']}: {run['state']}, {items.get('done', 0)} answered, {left} to go{rest}"


async def suite_run(args: argparse.Namespace, remote: Remote) -> int:
    body = {"models": args.model or [], "tasks": args.task or [], "next": args.next, "next_free": args.next_free,
            "repeat": args.repeat, "dry_run": args.dry_run, **given(limit=args.limit, timeout=args.timeout),
            **({} if args.gap is None else {"gap": args.gap})}
    reply = await remote.post("/api/suite/run", body)
    if args.dry_run:
        if not show_json(args, reply):
            table(("model", "task", "connection"), [(i["alias"], i["task"], i["connection"]) for i in reply["plan"]])
            note(f"{len(reply['plan'])} call(s) would be made; nothing was asked")
        return 0
    run = reply["run"]
    if not args.wait:
        if show_json(args, reply):
            return 0
        print(_run_line(run))
        note(f"bench suite runs shows its progress; bench suite scores the scores (run {run['id']})")
        return 0
    last, pause = "", POLL[0]
    while run["state"] == "running":
        line = _run_line(run)
        if line != last and sys.stderr.isatty():
            note(line)
        last = line
        await anyio.sleep(pause)
        pause = min(POLL[1], pause * 2)
        run = (await remote.get("/api/suite/run", {"id": run["id"]}))["run"]
    detail = await remote.get("/api/suite/run", {"id": run["id"]})
    if show_json(args, detail):
        return 0
    rows = [(a["alias"], a["task"], a["outcome"] or f"not a score ({a['reason']})", a["seconds"])
            for a in sorted(detail["answers"], key=lambda a: a["id"])]
    table(("model", "task", "outcome", "seconds"), rows)
    print(_run_line(run))
    return 0 if run["state"] == "done" else 1


async def suite_runs(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/suite/runs")
    if show_json(args, reply):
        return 0
    rows = [(r["id"], r["state"], r["origin"], (r["items"] or {}).get("done", 0),
             sum(v for k, v in (r["items"] or {}).items() if k != "done"), ago(r["created_at"]), r["note"])
            for r in reply["runs"]]
    table(("run", "state", "from", "answered", "to go", "started", "note"), rows)
    return 0


async def suite_stop(args: argparse.Namespace, remote: Remote) -> int:
    if not str(args.run).isdigit():
        raise CliError(f"a run is a number (bench suite runs lists them), not {args.run!r}")
    reply = await remote.post("/api/suite/run/stop", {"id": int(args.run)})
    if not show_json(args, reply):
        print(f"run {args.run} {'stopped' if reply['stopped'] else 'was not running'}")
    return 0


async def suite_promote(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/suite/promote", {"id": args.id})
    if not show_json(args, reply):
        print(f"{args.id} is live: runs ask it from now on")
    return 0


async def repos_list(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/suite/repos")
    if not show_json(args, reply):
        table(("repo", "path"), [(r["name"], r["path"]) for r in reply["repos"]])
        if not reply["repos"]:
            note("no repositories yet: bench suite repos add NAME PATH")
    return 0


def absolute(path: str) -> str:
    """A path as the server needs it: the user's ``~`` and working folder resolved here."""
    return str(Path(path).expanduser().absolute())


async def repos_add(args: argparse.Namespace, remote: Remote) -> int:
    path = absolute(args.path)
    reply = await remote.post("/api/suite/repos", {"name": args.name, "path": path})
    if not show_json(args, reply):
        print(f"repository {reply['repo']['name']} at {reply['repo']['path']}")
    return 0


async def repos_remove(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/suite/repos/remove", {"name": args.name})
    if not show_json(args, reply):
        print(f"{args.name} {'removed' if reply['removed'] else 'was not there'}")
    return 0


def _created(reply: dict[str, Any]) -> None:
    rows = [(t["id"], t.get("kind"), t.get("mutation") or t.get("claim") or "", t["title"]) for t in reply["created"]]
    table(("task", "kind", "what", "title"), rows)
    if rows:
        note(f"{len(rows)} draft task(s) written; check them (bench suite show ID), then bench suite promote ID")
    elif reply.get("note"):
        note(reply["note"])


async def suite_seed(args: argparse.Namespace, remote: Remote) -> int:
    body: dict[str, Any] = {"repo": args.repo, "count": args.count, "hard": args.hard, "seed": args.seed}
    if args.kinds:
        body["kinds"] = [k.strip() for k in args.kinds.split(",") if k.strip()]
    reply = await remote.post("/api/suite/seed", body)
    if not show_json(args, reply):
        _created(reply)
    return 0


async def suite_mine(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/suite/mine", {"call": args.call})
    if not show_json(args, reply):
        _created(reply)
    return 0


async def suite_rebench(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/suite/rebench", {**given(source=args.source, raw=args.raw),
                                                     "count": args.count, "offset": args.offset})
    if not show_json(args, reply):
        _created(reply)
        skipped = ", ".join(f"{v} {k}" for k, v in reply["skipped"].items())
        note(f"{reply['rows']} row(s) read from {reply['source']}" + (f"; skipped: {skipped}" if skipped else ""))
    return 0


def register(b: Any, sub: Any) -> None:
    """Add ``bench suite ...`` to the CLI (``b`` is client.Builder)."""
    _, ssub = b.group(sub, "suite", "the review suite: tasks, planting, runs and scores", [
        "bench suite list", "bench suite run --model mercury --wait", "bench suite scores",
        "bench suite repos add app ~/src/app", "bench suite seed --repo app --count 6"])
    ls = b.command(ssub, "list", suite_list, "the tasks: the starter pack and your data folder's",
                   ["bench suite list", "bench suite list --drafts"])
    ls.add_argument("--drafts", action="store_true", help="include drafts")
    b.command(ssub, "show", suite_show, "one task, with the prompt as sent", ["bench suite show std-textwrap-..."],
              args=("id",))
    sc = b.command(ssub, "scores", suite_scores, "per model: outcomes, not a score, recall with its interval",
                   ["bench suite scores", "bench suite scores --model mercury --json"])
    sc.add_argument("--model", metavar="ALIAS", help="only this model")
    run = b.command(ssub, "run", suite_run, "ask models the suite's tasks, in the background", [
        "bench suite run --model mercury --wait", "bench suite run --next-free", "bench suite run --next --repeat 2",
        "bench suite run --model lark --task std-textwrap-dedent-aed113-bug --wait --json"])
    run.add_argument("--model", action="append", metavar="ALIAS", help="this model (repeatable; default: the bench)")
    run.add_argument("--task", action="append", metavar="ID", help="this task (repeatable; drafts allowed)")
    which = run.add_mutually_exclusive_group()
    which.add_argument("--next", action="store_true", help="one paid model: never scored, then incomplete, then oldest")
    which.add_argument("--next-free", dest="next_free", action="store_true", help="the same, among free models")
    run.add_argument("--repeat", type=int, default=1, help="ask each task this many times")
    run.add_argument("--limit", type=int, help="tasks per model when none are named (default 6)")
    run.add_argument("--timeout", type=float, help="seconds for one answer (default 420)")
    run.add_argument("--gap", type=float, help="seconds between two calls on one connection (default 2)")
    run.add_argument("--wait", action="store_true", help="wait for the run to finish and show its answers")
    run.add_argument("--dry-run", dest="dry_run", action="store_true", help="show what would be asked; ask nothing")
    b.command(ssub, "runs", suite_runs, "recent runs and how far they got", ["bench suite runs"])
    b.command(ssub, "stop", suite_stop, "stop a run (its answers stay)", ["bench suite stop 12"], args=("run",))
    b.command(ssub, "promote", suite_promote, "make a draft a live task", ["bench suite promote seed-app-..."],
              args=("id",))
    _, rsub = b.group(ssub, "repos", "the repositories seeding plants in", [
        "bench suite repos add app ~/src/app", "bench suite repos list"])
    b.command(rsub, "list", repos_list, "the repositories", ["bench suite repos list"])
    b.command(rsub, "add", repos_add, "add (or move) a repository", ["bench suite repos add app ~/src/app"],
              args=("name", "path"))
    b.command(rsub, "remove", repos_remove, "forget a repository (its tasks stay)", ["bench suite repos remove app"],
              args=("name",))
    seed = b.command(ssub, "seed", suite_seed, "plant bug/control pairs in a repository (drafts)", [
        "bench suite seed --repo app", "bench suite seed --repo app --count 3 --hard --seed 7"])
    seed.add_argument("--repo", required=True, help="a repository added with bench suite repos add")
    seed.add_argument("--count", type=int, default=6, help="pairs to plant (default 6)")
    seed.add_argument("--hard", action="store_true", help="whole files of 100-400 lines, all ten kinds, no hint")
    seed.add_argument("--seed", type=int, default=0, help="the random seed (same seed, same tasks)")
    seed.add_argument("--kinds", metavar="K1,K2", help="only these mutation kinds")
    b.command(ssub, "mine", suite_mine, "turn a verdict's real and false claims into claim tasks (drafts)",
              ["bench suite mine p20260101-120000-ab12.member1"], args=("call",))
    rb = b.command(ssub, "rebench", suite_rebench, "real-bug tasks from SWE-rebench-V2 rows (network; drafts)", [
        "bench suite rebench --source 'https://datasets-server.huggingface.co/rows?dataset=nebius%2FSWE-rebench-V2"
        "&config=default&split=train'", "bench suite rebench --offset 100"])
    rb.add_argument("--source", metavar="URL", help="where the rows are (kept for next time)")
    rb.add_argument("--raw", metavar="TEMPLATE", help="file URL template with {repo}, {commit}, {path}")
    rb.add_argument("--count", type=int, default=5, help="pairs to write at most (default 5)")
    rb.add_argument("--offset", type=int, default=0, help="the first row to read")
