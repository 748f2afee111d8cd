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


def board(rows: Sequence[Mapping[str, Any]], tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """What the Benchmarks page draws, each with its table: trust (recall against confidently
    wrong), the bug hunt (planted and real bugs with their controls), and the task x model matrix."""
    per_model = scores(rows)
    trust = [{k: m[k] for k in ("alias", "recall", "recall_interval", "recall_n", "confidently_wrong",
                                "confidently_wrong_interval", "opportunities", "not_a_score")} for m in per_model]
    hunt_rows = [r for r in rows if (tasks.get(str(r["task"])) or {}).get("kind") in ("bug", "control")]
    hunt = [{k: m[k] for k in ("alias", "found", "wrong_line", "missed", "clean", "false_alarm", "not_a_score",
                               "recall", "recall_interval")} for m in scores(hunt_rows)]
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
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
    models = sorted({str(r["alias"]) for r in rows})
    task_ids = sorted({str(r["task"]) for r in rows})
    return {"trust": trust, "bug_hunt": hunt, "matrix": {"models": models, "tasks": task_ids,
                                                          "cells": sorted(cells.values(),
                                                                          key=lambda c: (c["task"], c["alias"]))}}
