"""Real-bug tasks from SWE-rebench-V2-style rows (``bench suite rebench``): network, off by default.

Nothing is fetched until the user names a source (``--source URL``, then kept in the store): a
URL that answers rows as JSON, either the datasets-server shape ``{"rows": [{"row": {...}}]}`` or
a plain list of rows; ``offset`` and ``length`` are added to its query. A row needs
``instance_id``, ``repo``, ``base_commit`` and ``patch``; ``created_at`` and ``license`` are kept
when present. The file before the fix comes from ``raw`` (a template with ``{repo}``,
``{commit}`` and ``{path}``; GitHub's raw host unless told otherwise).

A fix is kept when it changes one non-test ``.py`` file in one contiguous hunk, with at most 5
lines removed and 5 added, and not only comments or blank lines. The bug task shows the file
before the fix (400 lines around the hunk), its control the file after; both are drafts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import httpx

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadGateway, BadRequest
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.suite import library, plant
from benchwarmers_mcp.suite.tasks import Clause, Task

DEFAULT_RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
MAX_CHANGED = 5
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
CONFIG = "rebench"


@dataclass(frozen=True)
class Fix:
    path: str
    old_start: int  # first line of the hunk in the file before the fix
    old: tuple[str, ...]  # the hunk's lines before (context and removed)
    new: tuple[str, ...]  # the hunk's lines after (context and added)
    removed_at: tuple[int, ...]  # line numbers (before) of the removed lines; an insertion point if none


def _is_code(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith("#")


def single_fix(patch: str) -> Fix | None:
    """The patch's one change, when it is the kind kept; else None."""
    files = re.findall(r"^diff --git a/(\S+) b/(\S+)", patch, re.M)
    if len(files) != 1 or files[0][0] != files[0][1]:
        return None
    path = files[0][1]
    if plant.skipped(path) or "test" in Path(path).name.lower():
        return None
    lines = patch.splitlines()
    hunks = [i for i, line in enumerate(lines) if line.startswith("@@")]
    if len(hunks) != 1:
        return None
    m = HUNK.match(lines[hunks[0]])
    if m is None:
        return None
    body = [line for line in lines[hunks[0] + 1:] if not line.startswith("\\")]
    changed = [i for i, line in enumerate(body) if line[:1] in "+-"]
    if not changed or any(body[i][:1] not in "+-" for i in range(changed[0], changed[-1] + 1)):
        return None  # not one contiguous change
    removed = [body[i][1:] for i in changed if body[i].startswith("-")]
    added = [body[i][1:] for i in changed if body[i].startswith("+")]
    if len(removed) > MAX_CHANGED or len(added) > MAX_CHANGED:
        return None
    if [s.strip() for s in removed if _is_code(s)] == [s.strip() for s in added if _is_code(s)]:
        return None  # only comments or blank lines change
    old = tuple(line[1:] for line in body if line[:1] in " -")
    new = tuple(line[1:] for line in body if line[:1] in " +")
    start = int(m.group(1))
    first_change = start + sum(1 for line in body[:changed[0]] if line[:1] == " ")
    removed_at = tuple(range(first_change, first_change + len(removed))) or (max(1, first_change - 1), first_change)
    return Fix(path, start, old, new, removed_at)


def apply_fix(before: str, fix: Fix) -> str | None:
    """The file after the fix, or None when the file does not hold the hunk where it says."""
    lines = before.splitlines()
    at = fix.old_start - 1
    if tuple(lines[at:at + len(fix.old)]) != fix.old:
        return None
    return "\n".join(lines[:at] + list(fix.new) + lines[at + len(fix.old):]) + "\n"


def rows_of(payload: Any) -> list[dict[str, Any]]:
    items = payload.get("rows", []) if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        return []
    rows = [item.get("row", item) if isinstance(item, dict) else None for item in items]
    return [r for r in rows if isinstance(r, dict)]


def _with_page(source: str, offset: int, limit: int) -> str:
    parts = urlsplit(source)
    query = "&".join(q for q in (parts.query, urlencode({"offset": offset, "length": limit})) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


@contextmanager
def _mapped(what: str) -> Iterator[None]:
    """The one boundary where httpx's failures become a clear 502."""
    try:
        yield
    except httpx.HTTPError as e:
        raise BadGateway(f"{what} failed: {type(e).__name__}: {e}") from e
    except ValueError as e:
        raise BadGateway(f"{what} did not answer JSON: {e}") from e


def make_pair(row: dict[str, Any], fix: Fix, before: str, after: str, source_url: str) -> tuple[Task, Task]:
    instance = str(row["instance_id"])
    base = f"rebench-{plant.slug(instance, 60)}"
    unit = plant.Unit(fix.path, "", fix.removed_at[0], fix.removed_at[-1])
    first, last = plant.window(unit, len(before.splitlines()))
    bug_lines, control_lines = before.splitlines(), after.splitlines()
    lines_re = "|".join(str(n) for n in fix.removed_at)
    label = f"{row['repo']}/{fix.path}"
    head = (f"Review this excerpt of `{label}` below. It may contain a real bug that was later fixed, or it may be "
            f"correct as written.\n{plant.ANSWER_RULE}\n\n```python\n")
    meta: dict[str, Any] = {"upstream": instance, "source_url": source_url, "created": row.get("created_at"),
                            "license": row.get("license") or row.get("repo_license"), "shape": "rebench"}
    common = {k: v for k, v in meta.items() if k != "shape"}
    bug = Task(id=f"{base}-bug", title=f"Real bug in {label}", shape="rebench", kind="bug", pair=f"{base}-control",
               prompt=head + plant.numbered(bug_lines, first, min(last, len(bug_lines))) + "\n```\n",
               why=f"the file before the fix of {instance}", score_in="first_line", draft=True,
               must_find=(Clause(regex=rf"^\W*fault:\s*line\s*(?:{lines_re})\b", label=f"fault: line {lines_re}"),),
               must_not_claim=(Clause(("no fault",)),), source={"repo": row["repo"], "rel": fix.path,
                                                                "commit": row["base_commit"]}, extra=common)
    control = Task(id=f"{base}-control", title=f"Fixed {label} (no fault)", shape="rebench", kind="control",
                   pair=f"{base}-bug", prompt=head + plant.numbered(control_lines, first,
                                                                    min(last, len(control_lines))) + "\n```\n",
                   why=f"the file after the fix of {instance}", score_in="first_line", draft=True,
                   must_find=(Clause(("no fault",)),),
                   must_not_claim=(Clause(regex=r"^\W*fault:\s*line", label="fault: line"),),
                   source={"repo": row["repo"], "rel": fix.path, "commit": row["base_commit"], "fixed": True},
                   extra=common)
    return bug, control


async def fetch(ctx: Context, *, source: str | None, raw: str | None, limit: int = 100, offset: int = 0,
                count: int = 5) -> dict[str, Any]:
    """Read one page of rows and write up to ``count`` bug/control pairs; says what it skipped."""
    saved = await suite_store.get_config(ctx.db, CONFIG) or {}
    source = source or saved.get("source")
    raw = raw or saved.get("raw") or DEFAULT_RAW
    if not source:
        raise BadRequest("rebench is off until you name a source: bench suite rebench --source URL (a URL answering "
                         "SWE-rebench-V2 rows as JSON); it is kept for next time")
    for url in (source, raw):
        if urlsplit(url).scheme not in ("http", "https"):
            raise BadRequest(f"{url!r} must be an http(s) URL")
    await suite_store.set_config(ctx.db, CONFIG, {"source": source, "raw": raw})
    page = _with_page(source, offset, limit)
    with _mapped(f"GET {page}"):
        response = await ctx.client.get(page)
        response.raise_for_status()
        rows = rows_of(response.json())
    catalog = await library.load(ctx.settings.home)
    skipped: dict[str, int] = {}
    created: list[dict[str, Any]] = []
    for row in rows:
        if len(created) >= 2 * count:
            break
        why = await _one(ctx, row, raw, page, catalog.entries, created)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
    return {"rows": len(rows), "created": created, "skipped": skipped, "source": source}


async def _one(ctx: Context, row: dict[str, Any], raw: str, page: str, known: dict[str, Any],
               created: list[dict[str, Any]]) -> str:
    if not all(isinstance(row.get(k), str) and row.get(k) for k in ("instance_id", "repo", "base_commit", "patch")):
        return "incomplete row"
    fix = single_fix(row["patch"])
    if fix is None:
        return "not one small contiguous change to one .py file"
    if f"rebench-{plant.slug(str(row['instance_id']), 60)}-bug" in known:
        return "already a task"
    url = raw.format(repo=row["repo"], commit=row["base_commit"], path=quote(fix.path))
    with _mapped(f"GET {url}"):
        response = await ctx.client.get(url)
    if response.status_code != 200:
        return f"file not found upstream (HTTP {response.status_code})"
    before = response.text
    after = apply_fix(before, fix)
    if after is None:
        return "the file does not match the patch"
    bug, control = make_pair(row, fix, before, after, page)
    for task in (bug, control):
        await library.write(ctx.settings.home, task)
        created.append({**task.summary(), "origin": "data"})
    return ""
