"""``bench probe``, ``model retry``, ``alerts``, ``health``, ``scheduler``, ``settings scheduler``,
``onboard`` and ``onboarding``: the bench looking after itself, from a terminal."""

from __future__ import annotations

import argparse
from typing import Any

import anyio

from benchwarmers_mcp.cli import cmd_bench
from benchwarmers_mcp.cli.console import note, show_json
from benchwarmers_mcp.cli.remote import CliError, Remote, UsageError, present
from benchwarmers_mcp.cli.tables import table, when

WAIT_POLL = 1.0


def _probe_line(p: dict[str, Any]) -> str:
    if p.get("answered"):
        speed = f"p50 {p['p50_s']:.2f} s" if p.get("p50_s") is not None else "answered"
        rate = f", {p['chars_per_s']:.0f} chars/s" if p.get("chars_per_s") else ""
        return f"{p['prompt']}: {p['answered']}/{p['n']} answered, {speed}{rate}"
    return f"{p['prompt']}: no answer ({p.get('failure')}): {p.get('detail') or '-'}"


async def probe(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/probe", {"alias": args.alias, "kind": args.kind})
    if show_json(args, reply):
        return 0 if reply.get("answered") else 1
    for p in reply["probes"]:
        print(f"{args.alias} {_probe_line(p)}")
    return 0 if reply.get("answered") else 1


async def retry(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/model/retry", {"alias": args.alias})
    if show_json(args, reply):
        return 0 if reply.get("answered") else 1
    print(f"{args.alias} {_probe_line(reply['probe'])}")
    if reply.get("cleared"):
        note("it answered: its retiring alert is cleared")
    if reply.get("answered") and reply.get("retired"):
        note(f"it is retired; bring it back with: bench model restore {args.alias}")
    return 0 if reply.get("answered") else 1


async def alerts(args: argparse.Namespace, remote: Remote) -> int:
    if args.action == "dismiss":
        if not args.target or not args.target.isdigit():
            raise UsageError("bench alerts dismiss <id> (the id from bench alerts)")
        reply = await remote.post("/api/alerts/dismiss", {"id": int(args.target)})
        if not show_json(args, reply):
            print(f"dismissed alert {args.target}")
        return 0
    if args.action == "retire-all":
        if not args.target:
            raise UsageError("bench alerts retire-all <connection> (a held connection from bench alerts)")
        reply = await remote.post("/api/health/retire-all", {"connection": args.target})
        if not show_json(args, reply):
            print(f"retired on {args.target}: {', '.join(reply['retired']) or 'nothing'}")
        return 0
    reply = await remote.get("/api/alerts", {"all": "1" if args.all else None})
    if show_json(args, reply):
        return 0
    rows = [(a["id"], a["kind"], a["subject"], a["message"], (a["actions"] or [{}])[0].get("cli") or "-")
            for a in reply["alerts"]]
    table(("id", "kind", "subject", "what happened", "to do"), rows)
    recent = [(r["alias"], when(r["at"]), r["why"], f"bench model restore {r['alias']}")
              for r in reply.get("retired_this_week") or ()]
    if recent:
        print("\nretired automatically this week")
        table(("alias", "when", "why", "to undo"), recent)
    if not rows and not recent:
        note("nothing needs your attention")
    return 0


async def health(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/health", {"alias": args.alias})
    if show_json(args, reply):
        return 0
    rows = []
    for m in reply["models"]:
        tiny = (m.get("speed") or {}).get("tiny") or {}
        failure = m.get("latest_failure") or {}
        strip = "".join("." if d["answered"] and not d["failed"] else "x" if d["failed"] and not d["answered"]
                        else "~" if d["answered"] else " " for d in m.get("days") or ())
        rows.append((m["alias"], m["status"], when(m.get("last_answer")), tiny.get("p50_s"),
                     f"{failure.get('failure')}: {failure.get('detail')}" if failure else "-", f"[{strip}]"))
    table(("alias", "status", "last answer", "p50 s", "latest failure", "14 days"), rows)
    for p in reply.get("history") or ():
        print(f"{p['at']}  {p['kind']:<12} {_probe_line(p)}")
    return 0


async def scheduler(args: argparse.Namespace, remote: Remote) -> int:
    if args.action == "run":
        if not args.job:
            raise UsageError("bench scheduler run <job> (jobs: bench scheduler)")
        reply = await remote.post("/api/scheduler/run", {"job": args.job, "wait": not args.no_wait})
        if show_json(args, reply):
            return 0
        print(f"{args.job}: run {reply['run']} {reply.get('status')}" + (f" ({reply['note']})" if reply.get("note")
                                                                         else ""))
        return 1 if reply.get("status") in ("failed", "cancelled", "lost") else 0
    reply = await remote.get("/api/scheduler")
    if show_json(args, reply):
        return 0
    print(f"scheduler  {reply['mode']}" + ("  (nothing runs on its own: bench settings scheduler run)"
                                           if reply["mode"] == "off" else ""))
    rows = [(j["name"], j["schedule"], "on" if j["on"] else "off", "yes" if j["available"] else "not installed",
             "running" if j["running"] else _last(j.get("last_run")), when(j.get("next_run")))
            for j in reply["jobs"]]
    table(("job", "when (local)", "switch", "available", "last run", "next run"), rows)
    return 0


def _last(run: dict[str, Any] | None) -> str:
    return f"{run['status']} {when(run['at'])}" if run else "never"


async def settings(args: argparse.Namespace, remote: Remote) -> int:
    """``bench settings`` (both sections), ``settings gateway ...`` and ``settings scheduler ...``."""
    if args.section != "scheduler":
        if args.value or args.off or args.on or args.at:
            raise UsageError("--off, --on, --at and a mode belong to: bench settings scheduler")
        code = await cmd_bench.settings(args, remote)
        if args.section is None and not getattr(args, "json", False):
            reply = await remote.get("/api/scheduler")
            off = [j["name"] for j in reply["jobs"] if not j["on"]]
            print(f"scheduler  {reply['mode']}" + (f", off: {', '.join(off)}" if off else ""))
        return code
    times: dict[str, str | None] = {}
    for item in args.at or ():
        job, eq, text = item.partition("=")
        if not eq:
            raise UsageError(f"--at takes JOB=TIME (e.g. availability=04:30, perf='mon 07:00'), not {item!r}")
        times[job.strip()] = text.strip() or None
    body = present(mode=args.value, off=_names(args.off), on=_names(args.on), times=times or None)
    reply = await (remote.post("/api/scheduler", body) if body else remote.get("/api/scheduler"))
    if show_json(args, reply):
        return 0
    off = [j["name"] for j in reply["jobs"] if not j["on"]]
    print(f"scheduler  {reply['mode']}" + (f", off: {', '.join(off)}" if off else ""))
    return 0


def _names(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


async def onboard(args: argparse.Namespace, remote: Remote) -> int:
    mode = "quick-adhoc" if args.ad_hoc else "quick" if args.quick else "full"
    items = [present(served=s, endpoint=args.endpoint, mode=mode) for s in args.served]
    reply = await remote.post("/api/onboarding", {"items": items})
    ids = list(reply["queued"])
    if not args.wait:
        if show_json(args, reply):
            return 0
        print(f"queued {len(ids)} model(s) for onboarding ({mode}); {reply['waiting']} waiting")
        note("follow it: bench onboarding (or bench onboard ... --wait)")
        return 0
    return await follow(args, remote, ids)


async def follow(args: argparse.Namespace, remote: Remote, ids: list[int]) -> int:
    """Print each step of these items as it happens, until every one has finished."""
    shown: dict[int, int] = {}
    while True:
        reply = await remote.get("/api/onboarding")
        mine = [i for i in reply["items"] if i["id"] in ids]
        for item in mine:
            for entry in item["log"][shown.get(item["id"], 0):]:
                print(f"[{entry['step']}/{entry['of']}] {item['served']}: {entry['state']}"
                      f" - {entry['message']}", flush=True)
            shown[item["id"]] = len(item["log"])
        if mine and all(i["state"] not in ("queued", "running") for i in mine):
            break
        await anyio.sleep(WAIT_POLL)
    if show_json(args, {"items": mine}):
        return 0
    for item in mine:
        print(f"{item['served']}: {item['state']}" + (f" ({item['reason']})" if item["reason"] else ""))
    return 0 if all(i["state"] == "done" for i in mine) else 1


async def onboarding(args: argparse.Namespace, remote: Remote) -> int:
    if args.action in ("stop", "clear"):
        reply = await remote.post(f"/api/onboarding/{args.action}", {})
    else:
        reply = await remote.get("/api/onboarding")
    if show_json(args, reply):
        return 0
    rows = [(i["id"], i["alias"] or "-", i["served"], i["endpoint"], i["mode"], i["state"],
             f"{i['step']}/{i['steps']}", (i["log"][-1]["message"] if i["log"] else i["reason"]) or "-")
            for i in reply["items"]]
    table(("id", "alias", "served", "endpoint", "mode", "state", "step", "latest"), rows)
    if args.action == "stop":
        note(f"skipped {reply['skipped']} queued; {reply['stopping']} stopping after its step")
    elif args.action == "clear":
        note(f"cleared {reply['cleared']} finished item(s)")
    elif not rows:
        note("the queue is empty: bench onboard <served> --endpoint NAME")
    return 0


def add(b: Any, sub: Any) -> None:
    """The commands of this module, for ``cli/client.py``."""
    p = b.command(sub, "probe", probe, "probe a model now: availability, speed or capabilities", [
        "bench probe mercury", "bench probe mercury --kind speed", "bench probe mercury --kind capabilities"],
        args=("alias",))
    p.add_argument("--kind", default="availability", choices=("availability", "speed", "capabilities"),
                   help="availability (one tiny call, default), speed (3 short + 3 long) or capabilities")
    a = b.command(sub, "alerts", alerts, "what needs your attention, each with what to do", [
        "bench alerts", "bench alerts --json", "bench alerts dismiss 12", "bench alerts retire-all groq"])
    a.add_argument("action", nargs="?", choices=("dismiss", "retire-all"), help="dismiss an alert, or retire "
                   "every model of a held connection")
    a.add_argument("target", nargs="?", help="the alert id, or the connection")
    a.add_argument("--all", action="store_true", help="include dismissed alerts")
    h = b.command(sub, "health", health, "each model's health: status, last answer, speed, 14 days",
                  ["bench health", "bench health mercury"])
    h.add_argument("alias", nargs="?", help="one model, with its probe history")
    s = b.command(sub, "scheduler", scheduler, "the bench's own jobs: on, last run, next run; run one now", [
        "bench scheduler", "bench scheduler --json", "bench scheduler run availability"])
    s.add_argument("action", nargs="?", choices=("run",), help="run a job now")
    s.add_argument("job", nargs="?", help="the job to run")
    s.add_argument("--no-wait", action="store_true", help="start it and return (bench scheduler shows it)")
    o = b.command(sub, "onboard", onboard, "bring models on: check, register, probe, suite (queued)", [
        "bench onboard vendor/model:free --endpoint openrouter --wait",
        "bench onboard vendor/model:free@openrouter other/model@groq --quick",
        "bench onboard pricey-model --endpoint openai --ad-hoc"])
    o.add_argument("served", nargs="+", help="served names (or served@endpoint, as bench candidates keys them)")
    o.add_argument("--endpoint", help="the endpoint that serves them")
    mode = o.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="no suite now (its scheduled passes score it)")
    mode.add_argument("--ad-hoc", action="store_true", help="ad hoc: never probed, scored or seated on its own")
    o.add_argument("--wait", action="store_true", help="show each step as it goes, until done")
    q = b.command(sub, "onboarding", onboarding, "the onboarding queue: progress, stop, clear", [
        "bench onboarding", "bench onboarding stop", "bench onboarding clear"])
    q.add_argument("action", nargs="?", choices=("stop", "clear"), help="stop what is queued, or clear finished")


def add_retry(b: Any, msub: Any) -> None:
    b.command(msub, "retry", retry, "one call now; an answer clears its retiring alert",
              ["bench model retry mercury"], args=("alias",))


def add_settings(settings: argparse.ArgumentParser) -> None:
    settings.add_argument("value", nargs="?", choices=("off", "log-only", "run"),
                          help="scheduler: off, log-only (log what would run) or run")
    settings.add_argument("--off", action="append", metavar="JOB", help="scheduler: switch jobs off (A,B)")
    settings.add_argument("--on", action="append", metavar="JOB", help="scheduler: switch jobs back on")
    settings.add_argument("--at", action="append", metavar="JOB=TIME",
                          help="scheduler: a job's local time(s), e.g. availability=04:30 (empty: default)")


__all__ = ["CliError", "add", "add_retry", "add_settings"]
