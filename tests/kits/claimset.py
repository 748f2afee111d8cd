"""The fixed set of panels with known claim groups (``tests/data/claims/*.json``) and how a grouping is
scored against it. Shared by ``tests/test_claims_grouping.py`` and ``benchmarks/claims.py``.

A panel file holds ``answers`` (seat -> markdown) and ``groups``: each a list of ``[seat, snippet]``,
the snippet a piece of that seat's answer found there exactly once, and every claim a reader would
judge is in one group (a claim only one seat made is a group of one). ``split`` is ``tune`` for the
panels the thresholds were tuned on and ``held-out`` for those written after.

Scoring is pairwise, over the labelled claims of each panel: a pair is *together* in the gold when
its two snippets are in one group, and together in the grouping when the claims holding them (the
claim whose span holds the snippet's start) are in one group. A snippet no claim holds is a group of
its own, so a claim the splitter missed costs recall. Precision = together in both / together in the
grouping; recall = together in both / together in the gold.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchwarmers_mcp.engine import claims

DATA = Path(__file__).resolve().parents[1] / "data" / "claims"


@dataclass(frozen=True)
class Panel:
    name: str
    about: str
    split: str  # tune | held-out
    answers: dict[str, str]
    gold: tuple[tuple[tuple[str, int, int], ...], ...]  # groups of (seat, start, end) in that seat's answer
    labels: tuple[str, ...]  # each gold group's "about"


def load(folder: Path = DATA) -> list[Panel]:
    panels = []
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        answers: dict[str, str] = doc["answers"]
        gold = []
        for g in doc["groups"]:
            members = []
            for seat, snippet in g["claims"]:
                text = answers[seat]
                at = text.find(snippet)
                if at < 0 or text.find(snippet, at + 1) >= 0:
                    raise ValueError(f"{path.name}: {seat}'s snippet {snippet!r} is not there exactly once")
                members.append((seat, at, at + len(snippet)))
            gold.append(tuple(members))
        panels.append(Panel(doc["name"], doc["about"], doc["split"], answers, tuple(gold),
                            tuple(g["about"] for g in doc["groups"])))
    return panels


@dataclass
class Tally:
    together_both: int = 0
    together_found: int = 0  # together in the grouping
    together_gold: int = 0
    gold_claims: int = 0
    gold_found: int = 0  # labelled claims some split claim holds
    split_claims: int = 0
    split_labelled: int = 0  # split claims that hold a labelled claim

    def add(self, other: Tally) -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def precision(self) -> float:
        return self.together_both / self.together_found if self.together_found else 1.0

    @property
    def recall(self) -> float:
        return self.together_both / self.together_gold if self.together_gold else 1.0

    @property
    def split_recall(self) -> float:
        return self.gold_found / self.gold_claims if self.gold_claims else 1.0

    @property
    def split_precision(self) -> float:
        return self.split_labelled / self.split_claims if self.split_claims else 1.0


def found_groups(panel: Panel, groups: Sequence[claims.Group]) -> list[list[str | None]]:
    """For each gold group, the id of the found group holding each of its snippets (None: no claim)."""
    holder: dict[tuple[str, int], str] = {}
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for g in groups:
        for seat, c in g.members:
            spans.setdefault(seat, []).append((c.span[0], c.span[1], g.id))
    out = []
    for members in panel.gold:
        row: list[str | None] = []
        for seat, start, _ in members:
            hit = next((gid for s, e, gid in spans.get(seat, []) if s <= start < e), None)
            row.append(hit)
            if hit is not None:
                holder[(seat, start)] = hit
        out.append(row)
    return out


def score(panel: Panel, groups: Sequence[claims.Group]) -> Tally:
    tally = Tally()
    found = found_groups(panel, groups)
    labelled = [(gi, fid if fid is not None else f"missing-{gi}-{k}")
                for gi, row in enumerate(found) for k, fid in enumerate(row)]
    for x in range(len(labelled)):
        for y in range(x + 1, len(labelled)):
            same_gold = labelled[x][0] == labelled[y][0]
            same_found = labelled[x][1] == labelled[y][1]
            tally.together_gold += same_gold
            tally.together_found += same_found
            tally.together_both += same_gold and same_found
    tally.gold_claims = len(labelled)
    tally.gold_found = sum(fid is not None for row in found for fid in row)
    starts = {(seat, start) for members in panel.gold for seat, start, _ in members}
    for g in groups:
        for seat, c in g.members:
            tally.split_claims += 1
            tally.split_labelled += any(s == seat and c.span[0] <= at < c.span[1] for s, at in starts)
    return tally


def evaluate(panels: Sequence[Panel], policy: claims.GroupingPolicy | None = None) -> Tally:
    total = Tally()
    for panel in panels:
        total.add(score(panel, claims.group(panel.answers, policy)))
    return total
