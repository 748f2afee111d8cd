"""``bench suite mine <call id>``: a verdict's real and false claims become claim tasks.

The files the panel was shown are taken from the prompt the store kept for that seat's panel:
``===== FILE: <rel> =====`` blocks (each runs to the next such line or the end), else the fenced
blocks ``bench ask -f`` writes (``name:`` then a fence). They are frozen into each task's
fixtures, so the task still works when the code moves on. A real claim is a task whose truth is
TRUE, a false claim one whose truth is FALSE; all start as drafts.

A file is frozen under the name its header gives, read with ``/`` for ``\\``. A name the task
could not hold (absolute, climbing out with ``..``: the rule every task's ``attach`` follows) or
the file system could not (a control character, a drive, a part past 255 bytes) refuses the
mining with a 400 that names it; nothing is written then.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PureWindowsPath
from typing import Any

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import Database, verdicts
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.suite import library, plant
from benchwarmers_mcp.suite.tasks import Clause, Task, TaskProblem, check_task, task_json

HEADER = re.compile(r"^=====\s*FILE:\s*(?P<rel>.+?)\s*=====[ \t]*$", re.M)
ANY_BANNER = re.compile(r"^=====.*=====[ \t]*$", re.M)
FENCED = re.compile(r"^(?P<name>[\w./\\-]+\.\w+):[ \t]*\n(?P<fence>`{3,})[^\n]*\n(?P<body>.*?)\n(?P=fence)[ \t]*$",
                    re.M | re.S)
MAX_PART = 255  # bytes of one part of a file name, as file systems hold them
MAX_NAME = 1024  # characters of a whole name
CLAIM_RULE = ("Your first line must be exactly `VERDICT: TRUE` or `VERDICT: FALSE`. Then quote the line or lines "
              "that decide it and explain in at most five sentences.")


def files_in(prompt: str) -> dict[str, str]:
    """The files a prompt carries, by their relative path."""
    out: dict[str, str] = {}
    headers = list(HEADER.finditer(prompt))
    for m in headers:
        rest = prompt[m.end():]
        end = ANY_BANNER.search(rest)
        body = rest[:end.start()] if end else rest
        out[m.group("rel")] = body.strip("\n") + "\n"
    if headers:
        return out
    for m in FENCED.finditer(prompt):
        out[m.group("name")] = m.group("body") + "\n"
    return out


def _refusal(rel: str) -> str | None:
    """Why a file the prompt names cannot be frozen under its name into a task, or None."""
    if any(ord(c) < 32 or ord(c) == 127 for c in rel):
        return "it holds a control character"
    if PureWindowsPath(rel).drive:
        return "it names a drive"
    name = rel.replace("\\", "/")
    if len(name) > MAX_NAME or any(len(part.encode()) > MAX_PART for part in name.split("/")):
        return f"it is longer than a file system holds ({MAX_PART} bytes a part, {MAX_NAME} characters in all)"
    try:  # the rule every task's attach follows, as the task will be read back
        check_task(task_json(claim_task("probe", "probe", True, (name,))), "probe")
    except TaskProblem as problem:
        return "; ".join(problem.problems)
    return None


def frozen(call: str, files: dict[str, str]) -> dict[str, str]:
    """The files by the names they are frozen under, or a 400 naming the first that cannot be and why."""
    for rel in files:
        why = _refusal(rel)
        if why is not None:
            shown = rel if len(rel) <= 80 else rel[:77] + "..."
            raise BadRequest(f"the prompt of call {call} carries the file {shown!r}, which cannot be frozen into a "
                             f"task: {why}; nothing was mined")
    return {rel.replace("\\", "/"): text for rel, text in files.items()}


def claim_prompt(claim: str) -> str:
    return f"Hypothesis about the attached code: {claim.strip()}\n{CLAIM_RULE}"


def claim_task(task_id: str, claim: str, truth: bool, attach: tuple[str, ...], *, mined_from: str = "",
               source: Any = None, title: str = "", draft: bool = True, why: str = "") -> Task:
    said, other = ("verdict: true", "verdict: false") if truth else ("verdict: false", "verdict: true")
    return Task(id=task_id, title=title or f"{'True' if truth else 'False'} claim: {claim.strip()[:80]}",
                prompt=claim_prompt(claim), shape="claim", kind="claim", truth=truth, attach=attach,
                must_find=(Clause((said,)),), must_not_claim=(Clause((other,)),), score_in="first_line",
                min_answer_chars=10, mined_from=mined_from, source=source, draft=draft,
                why=why or ("a claim judged " + ("real" if truth else "false") + (f" in the verdict on {mined_from}"
                                                                                 if mined_from else "")))


async def mine(db: Database, home: Path, call: str) -> list[dict[str, Any]]:
    verdict = await verdicts.latest(db, call)
    if verdict is None:
        raise NotFound(f"no verdict on call {call!r}; record one with --real/--false claims first")
    if not verdict.real and not verdict.false:
        raise BadRequest(f"the verdict on {call} names no real or false claims (bench verdict {call} --real ... "
                         "--false ...)")
    prompt = await suite_store.panel_prompt(db, call)
    if prompt is None:
        raise BadRequest(f"call {call} has no panel prompt in the store (a route turn keeps none)")
    files = files_in(prompt)
    if not files:
        raise BadRequest(f"the prompt of call {call} carries no files (===== FILE: <rel> ===== blocks or bench ask "
                         "-f attachments) to freeze")
    catalog = await library.load(home)
    base = f"mined-{plant.slug(call, 40)}"
    fixtures = frozen(call, files)
    new: list[tuple[str, Task]] = []
    for claim, truth in [(c, True) for c in verdict.real] + [(c, False) for c in verdict.false]:
        digest = hashlib.sha256(f"{truth}|{claim}".encode()).hexdigest()[:6]
        task_id = f"{base}-{'real' if truth else 'false'}-{digest}"
        if task_id not in catalog.entries:
            new.append((claim, claim_task(task_id, claim, truth, tuple(fixtures), mined_from=call, source="verdict")))
    written = []
    for claim, task in new:
        await library.write(home, task, fixtures)
        written.append({**task.summary(), "origin": "data", "claim": claim})
    return written
