"""A suite task: its ``task.json`` read, checked and turned into a typed value.

A task is a folder ``<id>/`` with ``task.json`` and optional ``fixtures/``. The keys are the
reference suite's (``id``, ``title``, ``why``, ``prompt``, ``shape``, ``repo``, ``attach``,
``must_find``, ``must_not_claim``, ``must_not_claim_in``, ``score_in``, ``min_answer_chars``,
``format``, ``draft``, ``kind``, ``source``, ``mined_from``; rebench adds ``upstream``,
``source_url``, ``created``, ``license``), so tasks written for it load unchanged. Two keys are
ours: ``truth`` (a claim's recorded truth) and ``pair`` (a bug's control, a control's bug).
Unknown keys are kept and ignored.

A clause is a phrase (``"no fault"``), ``{"any_of": [...]}`` or ``{"regex": ..., "label": ...}``.
``check_task`` lists every problem of a bad task, each naming its key, so a person can fix it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

TASK_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,119}$")
SHAPES = ("claim", "seeded", "rebench")
DEFAULT_MIN_ANSWER_CHARS = 40
Expects = Literal["find", "clean"]


class TaskProblem(ValueError):
    """A task that cannot be used; ``problems`` lists what is wrong, one line each."""

    def __init__(self, task_id: str, problems: list[str]) -> None:
        super().__init__(f"task {task_id!r}: " + "; ".join(problems))
        self.task_id = task_id
        self.problems = problems


@dataclass(frozen=True)
class Clause:
    """One thing an answer must (or must not) say."""

    phrases: tuple[str, ...] = ()  # a plain phrase, or any_of's alternatives (lower case)
    regex: str | None = None
    label: str = ""

    @property
    def text(self) -> str:
        return self.label or (self.regex or " | ".join(self.phrases))

    def as_json(self) -> Any:
        if self.regex is not None:
            return {"regex": self.regex, **({"label": self.label} if self.label else {})}
        if len(self.phrases) == 1 and not self.label:
            return self.phrases[0]
        return {"any_of": list(self.phrases)}


@dataclass(frozen=True)
class Format:
    table: bool = False
    min_rows: int = 0
    min_chars: int = 0
    must_not_contain: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self == Format()


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    title: str = ""
    why: str = ""
    shape: str | None = None
    repo: str | None = None
    attach: tuple[str, ...] = ()
    must_find: tuple[Clause, ...] = ()
    must_not_claim: tuple[Clause, ...] = ()
    must_not_claim_in: str | None = None
    score_in: str | None = None
    min_answer_chars: int = DEFAULT_MIN_ANSWER_CHARS
    format: Format = Format()
    draft: bool = False
    kind: str = ""
    truth: bool | None = None
    pair: str = ""
    source: Any = None
    mined_from: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # keys we keep but do not read

    @property
    def expects(self) -> Expects:
        """``find``: there is something to find (a planted bug, a true claim); ``clean``: there is not."""
        if self.kind == "bug":
            return "find"
        if self.kind == "control":
            return "clean"
        if self.truth is not None:
            return "find" if self.truth else "clean"
        phrases = {p for c in self.must_find for p in c.phrases}
        if "verdict: true" in phrases:
            return "find"
        if "verdict: false" in phrases or not self.must_find:
            return "clean"
        if all(c.phrases and all(p == "no fault" for p in c.phrases) for c in self.must_find):
            return "clean"
        return "find"

    @property
    def locates(self) -> bool:
        """A task whose answer names a fault line (a bug): a wrong line is then a wrong answer."""
        return self.kind == "bug" or any(c.regex and "fault" in c.regex and "line" in c.regex
                                         for c in self.must_find)

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title or self.id, "shape": self.shape or "hand-built",
                "kind": self.kind or None, "expects": self.expects, "draft": self.draft, "truth": self.truth,
                "repo": self.repo, "attach": list(self.attach), "pair": self.pair or None,
                "mined_from": self.mined_from or None}


# ---- reading ------------------------------------------------------------------------------

def _clause(value: Any, where: str, problems: list[str]) -> Clause | None:
    if isinstance(value, str):
        if not value.strip():
            problems.append(f"{where}: an empty phrase matches every answer")
            return None
        return Clause((value.strip().lower(),))
    if isinstance(value, dict) and "any_of" in value:
        alts = value["any_of"]
        if not isinstance(alts, list) or not alts or not all(isinstance(a, str) and a.strip() for a in alts):
            problems.append(f"{where}: any_of must be a non-empty list of non-empty phrases")
            return None
        return Clause(tuple(a.strip().lower() for a in alts), label=str(value.get("label") or ""))
    if isinstance(value, dict) and "regex" in value:
        pattern = value["regex"]
        if not isinstance(pattern, str) or not pattern:
            problems.append(f"{where}: regex must be a non-empty string")
            return None
        try:
            re.compile(pattern)
        except re.error as e:
            problems.append(f"{where}: regex {pattern!r} does not compile: {e}")
            return None
        return Clause(regex=pattern, label=str(value.get("label") or ""))
    problems.append(f'{where}: a clause is a phrase, {{"any_of": [...]}} or {{"regex": ..., "label": ...}}; '
                    f"got {type(value).__name__} {str(value)[:60]!r}")
    return None


def _clauses(raw: dict[str, Any], key: str, problems: list[str]) -> tuple[Clause, ...]:
    value = raw.get(key, [])
    if value is None:
        return ()
    if isinstance(value, (str, dict)):
        value = [value]
    if not isinstance(value, list):
        problems.append(f"{key}: must be a list of clauses")
        return ()
    found = [_clause(v, f"{key}[{i}]", problems) for i, v in enumerate(value)]
    return tuple(c for c in found if c is not None)


def _text(raw: dict[str, Any], key: str, problems: list[str], *, required: bool = False) -> str:
    value = raw.get(key)
    if value is None:
        if required:
            problems.append(f"{key}: missing (a non-empty string)")
        return ""
    if not isinstance(value, str):
        problems.append(f"{key}: must be a string, not {type(value).__name__}")
        return ""
    if required and not value.strip():
        problems.append(f"{key}: empty")
    return value


def _int(raw: dict[str, Any], key: str, default: int, problems: list[str], where: str = "") -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(f"{where}{key}: must be a whole number, 0 or more (got {value!r})")
        return default
    return value


def _format(raw: dict[str, Any], problems: list[str]) -> Format:
    value = raw.get("format")
    if value is None:
        return Format()
    if not isinstance(value, dict):
        problems.append("format: must be an object {table, min_rows, min_chars, must_not_contain}")
        return Format()
    unknown = set(value) - {"table", "min_rows", "min_chars", "must_not_contain"}
    if unknown:
        problems.append(f"format: unknown keys {', '.join(sorted(unknown))}")
    banned = value.get("must_not_contain", [])
    if isinstance(banned, str):
        banned = [banned]
    if not isinstance(banned, list) or not all(isinstance(b, str) and b for b in banned):
        problems.append("format.must_not_contain: must be a list of non-empty strings")
        banned = []
    table = value.get("table", False)
    if not isinstance(table, bool):
        problems.append("format.table: must be true or false")
        table = False
    return Format(table, _int(value, "min_rows", 0, problems, "format."),
                  _int(value, "min_chars", 0, problems, "format."), tuple(banned))


def _attach(raw: dict[str, Any], problems: list[str]) -> tuple[str, ...]:
    value = raw.get("attach", [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(a, str) and a.strip() for a in value):
        problems.append("attach: must be a list of file paths")
        return ()
    for rel in value:
        if rel.startswith(("/", "\\")) or ".." in rel.replace("\\", "/").split("/"):
            problems.append(f"attach: {rel!r} must be a path inside the repository (no leading / or ..)")
    return tuple(value)


KNOWN = {"id", "title", "why", "prompt", "shape", "repo", "attach", "must_find", "must_not_claim",
         "must_not_claim_in", "score_in", "min_answer_chars", "format", "draft", "kind", "truth", "pair", "source",
         "mined_from"}


def check_task(raw: Any, folder_id: str) -> Task:
    """A task from its parsed ``task.json``, or ``TaskProblem`` listing everything wrong with it."""
    if not isinstance(raw, dict):
        raise TaskProblem(folder_id, [f"task.json must hold an object, not {type(raw).__name__}"])
    problems: list[str] = []
    task_id = raw.get("id", folder_id)
    if task_id != folder_id:
        problems.append(f"id: {task_id!r} differs from its folder's name {folder_id!r}")
    if not isinstance(task_id, str) or not TASK_ID_RE.match(task_id):
        problems.append("id: lower-case letters, digits, '.', '_' or '-' (at most 120)")
    prompt = _text(raw, "prompt", problems, required=True)
    shape = raw.get("shape")
    if shape is not None and shape not in SHAPES:
        problems.append(f"shape: one of {', '.join(SHAPES)}, or left out for a hand-built task (got {shape!r})")
    for key, allowed in (("score_in", ("first_line",)), ("must_not_claim_in", ("table",))):
        if raw.get(key) is not None and raw.get(key) not in allowed:
            problems.append(f"{key}: only {allowed[0]!r} (or left out), got {raw.get(key)!r}")
    must_find = _clauses(raw, "must_find", problems)
    must_not = _clauses(raw, "must_not_claim", problems)
    if not must_find and not must_not and not raw.get("must_find") and not raw.get("must_not_claim"):
        problems.append("must_find / must_not_claim: a task needs at least one clause to be scored")
    for key in ("draft",):
        if not isinstance(raw.get(key, False), bool):
            problems.append(f"{key}: must be true or false")
    truth = raw.get("truth")
    if truth is not None and not isinstance(truth, bool):
        problems.append("truth: must be true or false (a claim's recorded truth)")
        truth = None
    repo = raw.get("repo")
    if repo is not None and (not isinstance(repo, str) or not repo.strip()):
        problems.append("repo: must be the name of a repository added with `bench suite repos add`")
        repo = None
    task = Task(
        id=folder_id, prompt=prompt, title=_text(raw, "title", problems), why=_text(raw, "why", problems),
        shape=shape if shape in SHAPES else None, repo=repo, attach=_attach(raw, problems),
        must_find=must_find, must_not_claim=must_not, must_not_claim_in=raw.get("must_not_claim_in"),
        score_in=raw.get("score_in"),
        min_answer_chars=_int(raw, "min_answer_chars", DEFAULT_MIN_ANSWER_CHARS, problems),
        format=_format(raw, problems), draft=bool(raw.get("draft", False)), kind=_text(raw, "kind", problems),
        truth=truth, pair=_text(raw, "pair", problems), source=raw.get("source"),
        mined_from=_text(raw, "mined_from", problems), extra={k: v for k, v in raw.items() if k not in KNOWN})
    if problems:
        raise TaskProblem(folder_id, problems)
    return task


def task_json(task: Task) -> dict[str, Any]:
    """What ``task.json`` holds for a task the bench writes: the reference's keys, then ours."""
    out: dict[str, Any] = {"id": task.id, "title": task.title or task.id}
    if task.why:
        out["why"] = task.why
    out["prompt"] = task.prompt
    for key, value in (("shape", task.shape), ("kind", task.kind), ("repo", task.repo)):
        if value:
            out[key] = value
    if task.attach:
        out["attach"] = list(task.attach)
    out["must_find"] = [c.as_json() for c in task.must_find]
    out["must_not_claim"] = [c.as_json() for c in task.must_not_claim]
    if task.must_not_claim_in:
        out["must_not_claim_in"] = task.must_not_claim_in
    if task.score_in:
        out["score_in"] = task.score_in
    out["min_answer_chars"] = task.min_answer_chars
    if not task.format.empty:
        f = task.format
        out["format"] = {"table": f.table, "min_rows": f.min_rows, "min_chars": f.min_chars,
                         "must_not_contain": list(f.must_not_contain)}
    if task.truth is not None:
        out["truth"] = task.truth
    if task.pair:
        out["pair"] = task.pair
    if task.source is not None:
        out["source"] = task.source
    if task.mined_from:
        out["mined_from"] = task.mined_from
    out.update(task.extra)
    if task.draft:
        out["draft"] = True
    return out
