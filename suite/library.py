"""Where tasks live: the starter pack inside the package, and the data folder's ``suite/tasks/``.

The tasks a user sees are the pack's plus the data folder's; on an id both have, the data
folder's wins (a user can edit a pack task by copying its folder). A folder whose ``task.json``
is missing or wrong is listed with its problems instead of being dropped in silence.

File work is blocking, so the async entry points (``load``, ``prompt_of``, ``write``,
``promote``) run it in a worker thread.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio.to_thread

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.suite.tasks import TASK_ID_RE, Task, TaskProblem, check_task, task_json

PACK_DIR = Path(__file__).resolve().parent / "pack"
MAX_ATTACHED = 400_000  # characters of one attached file


def tasks_dir(home: Path) -> Path:
    return home / "suite" / "tasks"


@dataclass(frozen=True)
class Entry:
    id: str
    origin: str  # pack | data
    folder: Path
    task: Task | None
    problems: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        if self.task is None:
            return {"id": self.id, "origin": self.origin, "valid": False, "problems": list(self.problems)}
        return {**self.task.summary(), "origin": self.origin, "valid": True}


@dataclass
class Catalog:
    entries: dict[str, Entry] = field(default_factory=dict)

    def valid(self) -> list[Task]:
        return [e.task for e in self.entries.values() if e.task is not None]

    def live(self) -> list[Task]:
        """The tasks a run asks: valid and not drafts, in id order."""
        return sorted((t for t in self.valid() if not t.draft), key=lambda t: t.id)

    def entry(self, task_id: str) -> Entry:
        found = self.entries.get(task_id)
        if found is None:
            raise NotFound(f"no suite task {task_id!r}; bench suite list shows them")
        return found

    def task(self, task_id: str) -> Task:
        found = self.entry(task_id)
        if found.task is None:
            raise BadRequest(f"task {task_id!r} cannot be used: {'; '.join(found.problems)}")
        return found.task


def read_entry(folder: Path, origin: str) -> Entry:
    folder_id = folder.name
    try:
        raw = json.loads((folder / "task.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Entry(folder_id, origin, folder, None, ("task.json: missing",))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return Entry(folder_id, origin, folder, None, (f"task.json: not JSON ({e})",))
    try:
        return Entry(folder_id, origin, folder, check_task(raw, folder_id))
    except TaskProblem as problem:
        return Entry(folder_id, origin, folder, None, tuple(problem.problems))


def scan(root: Path, origin: str) -> dict[str, Entry]:
    if not root.is_dir():
        return {}
    return {d.name: read_entry(d, origin) for d in sorted(root.iterdir())
            if d.is_dir() and not d.name.startswith((".", "_"))}


def catalog_sync(home: Path, pack: Path = PACK_DIR) -> Catalog:
    return Catalog({**scan(pack, "pack"), **scan(tasks_dir(home), "data")})


async def load(home: Path, pack: Path = PACK_DIR) -> Catalog:
    return await anyio.to_thread.run_sync(catalog_sync, home, pack)


# ---- prompts --------------------------------------------------------------------------------

def _inside(base: Path, rel: str) -> Path:
    path = (base / rel).resolve()
    if not path.is_relative_to(base.resolve()):
        raise TaskProblem("?", [f"attach: {rel!r} leaves its folder"])
    return path


def attached_file(entry: Entry, rel: str, repos: Mapping[str, str]) -> str:
    task = entry.task
    assert task is not None
    if task.repo:
        if task.repo not in repos:
            raise TaskProblem(task.id, [f"repo: {task.repo!r} is not added (bench suite repos add {task.repo} PATH)"])
        candidates = [_inside(Path(repos[task.repo]), rel)]
    else:
        fixtures = entry.folder / "fixtures"
        candidates = [_inside(fixtures, rel), _inside(fixtures, Path(rel).name)]
    for path in candidates:
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            if len(text) > MAX_ATTACHED:
                raise TaskProblem(task.id, [f"attach: {rel!r} is {len(text):,} characters (at most {MAX_ATTACHED:,})"])
            return text
    where = f"repository {task.repo!r}" if task.repo else f"{entry.folder.name}/fixtures/"
    raise TaskProblem(task.id, [f"attach: {rel!r} is not in {where}"])


def prompt_sync(entry: Entry, repos: Mapping[str, str]) -> str:
    """The prompt as sent: the task's text, then each attached file as ``===== FILE: <rel> =====``."""
    task = entry.task
    if task is None:
        raise TaskProblem(entry.id, list(entry.problems))
    parts = [task.prompt.rstrip()]
    for rel in task.attach:
        parts.append(f"===== FILE: {rel} =====\n{attached_file(entry, rel, repos).rstrip()}")
    return "\n\n".join(parts) + "\n"


async def prompt_of(entry: Entry, repos: Mapping[str, str]) -> str:
    return await anyio.to_thread.run_sync(prompt_sync, entry, repos)


# ---- writing --------------------------------------------------------------------------------

def safe_fixture_name(rel: str) -> str:
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts) or "file.txt"


def write_sync(root: Path, task: Task, fixtures: Mapping[str, str] | None = None) -> Path:
    """Write a task folder whole (a temporary folder renamed into place); never over an existing one."""
    if not TASK_ID_RE.match(task.id):
        raise BadRequest(f"task id {task.id!r} is not valid")
    check_task(task_json(task), task.id)  # what the bench writes, it can read back
    root.mkdir(parents=True, exist_ok=True)
    target = root / task.id
    if target.exists():
        raise BadRequest(f"task {task.id!r} exists already")
    staging = Path(tempfile.mkdtemp(prefix=f".{task.id}.", dir=root))
    try:
        (staging / "task.json").write_text(json.dumps(task_json(task), indent=2, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
        for rel, text in (fixtures or {}).items():
            path = staging / "fixtures" / safe_fixture_name(rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


async def write(home: Path, task: Task, fixtures: Mapping[str, str] | None = None) -> Path:
    return await anyio.to_thread.run_sync(write_sync, tasks_dir(home), task, fixtures)


def promote_sync(home: Path, task_id: str, pack: Path = PACK_DIR) -> Task:
    entry = catalog_sync(home, pack).entry(task_id)
    if entry.task is None:
        raise BadRequest(f"task {task_id!r} cannot be promoted until it is fixed: {'; '.join(entry.problems)}")
    if not entry.task.draft:
        raise BadRequest(f"task {task_id!r} is not a draft (it is asked already)")
    if entry.origin != "data":
        raise BadRequest(f"task {task_id!r} ships with the package; copy its folder into {tasks_dir(home)} to change it")
    promoted = replace(entry.task, draft=False)
    path = entry.folder / "task.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw.pop("draft", None)
    staging = path.with_name(".task.json.new")
    staging.write_text(json.dumps(raw, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(staging, path)
    return promoted


async def promote(home: Path, task_id: str, pack: Path = PACK_DIR) -> Task:
    return await anyio.to_thread.run_sync(promote_sync, home, task_id, pack)
