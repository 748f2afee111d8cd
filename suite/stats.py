"""Scores added up per model, with intervals: what ``bench suite scores`` and the Benchmarks page show.

Recall is found / (found + wrong line + missed) over answers to tasks with something to find;
"confidently wrong" is wrong / opportunities (see ``scoring``). Both carry a 95% Wilson interval,
which behaves at 0/n and n/n where the normal approximation does not. An answer that is not a
score counts in ``not_a_score`` and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

OUTCOMES = ("found", "wrong line", "missed", "clean", "false alarm")
Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for k successes in n tries; None for no tries."""
    if n <= 0:
        return None
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _rounded(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [round(interval[0], 3), round(interval[1], 3)]


@dataclass
class Tally:
    alias: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    invented: int = 0
    not_a_score: int = 0
    not_a_score_why: dict[str, int] = field(default_factory=dict)
    chances: int = 0
    wrong: int = 0
    tasks: set[str] = field(default_factory=set)
    last_at: float | None = None

    def add(self, row: Mapping[str, Any]) -> None:
        self.last_at = max(self.last_at or 0.0, float(row.get("at") or 0.0)) or None
        if not row["scored"]:
            self.not_a_score += 1
            why = str(row.get("reason") or "error")
            self.not_a_score_why[why] = self.not_a_score_why.get(why, 0) + 1
            return
        self.tasks.add(str(row["task"]))
        self.counts[str(row["outcome"])] = self.counts.get(str(row["outcome"]), 0) + 1
        self.invented += int(row.get("invented") or 0)
        self.chances += int(row.get("chances") or 0)
        self.wrong += int(row.get("wrong") or 0)

    @property
    def finding(self) -> int:
        return self.counts["found"] + self.counts["wrong line"] + self.counts["missed"]

    @property
    def scored(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict[str, Any]:
        c = self.counts
        recall = c["found"] / self.finding if self.finding else None
        wrong_rate = self.wrong / self.chances if self.chances else None
        return {
            "alias": self.alias, "found": c["found"], "wrong_line": c["wrong line"], "missed": c["missed"],
            "clean": c["clean"], "false_alarm": c["false alarm"], "invented": self.invented,
            "not_a_score": self.not_a_score, "not_a_score_why": dict(sorted(self.not_a_score_why.items())),
            "scored": self.scored, "tasks": len(self.tasks),
            "recall": None if recall is None else round(recall, 3),
            "recall_interval": _rounded(wilson(c["found"], self.finding)), "recall_n": self.finding,
            "confidently_wrong": None if wrong_rate is None else round(wrong_rate, 3),
            "confidently_wrong_interval": _rounded(wilson(self.wrong, self.chances)),
            "wrong": self.wrong, "opportunities": self.chances, "last_at": self.last_at,
        }


def tally(rows: Iterable[Mapping[str, Any]]) -> dict[str, Tally]:
    out: dict[str, Tally] = {}
    for row in rows:
        out.setdefault(str(row["alias"]), Tally(str(row["alias"]))).add(row)
    return out


def scores(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per model, best recall first (a model with no recall yet last)."""
    found = [t.as_dict() for t in tally(rows).values()]
    return sorted(found, key=lambda d: (d["recall"] is None, -(d["recall"] or 0.0), d["alias"]))


TRUST = ("alias", "recall", "recall_interval", "recall_n", "confidently_wrong", "confidently_wrong_interval", "wrong",
         "opportunities", "scored", "tasks", "not_a_score", "not_a_score_why", "last_at")
HUNT = ("found", "wrong_line", "missed", "clean", "false_alarm", "not_a_score", "recall", "recall_interval")


def own_code(task: Mapping[str, Any]) -> bool:
    """A task about the user's own code: in the data folder (seeded from their repositories, mined
    from their verdicts, or written by hand), not the starter pack nor a rebench project's bug."""
    return task.get("origin") == "data" and task.get("shape") != "rebench"


def _hunt(rows: Sequence[Mapping[str, Any]], tasks: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per model, bugs and their controls: all of them, then ``planted`` (the pack's and the user's
    seeded pairs) and ``real`` (rebench's fixed bugs) apart."""
    def shape(r: Mapping[str, Any]) -> str:
        return str((tasks.get(str(r["task"])) or {}).get("shape") or "")

    hunting = [r for r in rows if (tasks.get(str(r["task"])) or {}).get("kind") in ("bug", "control")]
    apart = {"planted": scores([r for r in hunting if shape(r) != "rebench"]),
             "real": scores([r for r in hunting if shape(r) == "rebench"])}
    out = []
    for m in scores(hunting):
        entry: dict[str, Any] = {"alias": m["alias"], **{k: m[k] for k in HUNT}}
        for name, models in apart.items():
            mine = next((x for x in models if x["alias"] == m["alias"]), None)
            entry[name] = None if mine is None else {k: mine[k] for k in HUNT}
        out.append(entry)
    return out


def _matrix(rows: Sequence[Mapping[str, Any]], tasks: Mapping[str, Mapping[str, Any]], everything: bool) -> dict[str, Any]:
    """Task x model cells; the tasks are those answered and the user's own live ones (unanswered
    cells left for the page to draw empty)."""
    own = {t for t, summary in tasks.items() if own_code(summary)}
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        if not everything and str(r["task"]) not in own:
            continue
        cell = cells.setdefault((str(r["task"]), str(r["alias"])),
                                {"task": r["task"], "alias": r["alias"], "answers": 0, "scored": 0, "good": 0,
                                 "latest": None, "at": 0.0})
        cell["answers"] += 1
        if r["scored"]:
            cell["scored"] += 1
            cell["good"] += 1 if r["outcome"] in ("found", "clean") else 0
        if float(r.get("at") or 0) >= cell["at"]:
            cell["at"] = float(r.get("at") or 0)
            cell["latest"] = r["outcome"] if r["scored"] else f"not a score: {r.get('reason')}"
    live = {t for t in own if not tasks[t].get("draft")}
    return {"scope": "all" if everything else "own", "models": sorted({c["alias"] for c in cells.values()}),
            "tasks": sorted(live | {str(c["task"]) for c in cells.values()}),
            "cells": sorted(cells.values(), key=lambda c: (c["task"], c["alias"]))}


def board(rows: Sequence[Mapping[str, Any]], tasks: Mapping[str, Mapping[str, Any]], *,
          everything: bool = False) -> dict[str, Any]:
    """What the Benchmarks page draws, each with its table: ``trust`` (recall against confidently
    wrong, with intervals, per model), ``bug_hunt`` (bugs and their controls per model, planted
    and real apart) and ``matrix`` (task x model over the user's own code; every task with
    ``everything``). ``tasks`` are the catalog's summaries (with ``origin``)."""
    return {"trust": [{k: m[k] for k in TRUST} for m in scores(rows)], "bug_hunt": _hunt(rows, tasks),
            "matrix": _matrix(rows, tasks, everything)}
