"""Judging a panel: its claims judged once, and a verdict with the claims it marks.

- ``claim_map``: a panel's agreement map (``engine.claims``) from its answers: the seats that
  answered (the merger left out: it repeats the others), so the same answers always give the same
  groups and ids, in a merged reply (``engine.merge``) as on the panel's page.
- ``claims_view``: each group as callers see it: its text, seats, their call ids, each seat's own
  wording, and the judgement the seats' latest verdict lines give it (``real``, ``false``,
  ``mixed``, or None while none is marked).
- ``panel_view``: one panel to judge (``GET /bench/panels/{id}``): the store's panel, its
  attachments by name, its claims and its merged answer.
- ``judge`` and ``mark_claim``: a verdict with its claim marks, or a group marked alone. Marking a
  group writes, on EVERY seat that made the claim, a line with that seat's own wording in its
  ``real`` or ``false`` list (or off both), all in one transaction (``store.verdicts.mark``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from benchwarmers_mcp.context import Access
from benchwarmers_mcp.engine import attachments
from benchwarmers_mcp.engine.claims import ClaimMap, Group
from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import Database, Reader, panels, verdicts
from benchwarmers_mcp.store.verdicts import Mark, Verdict, VerdictLine


@dataclass(frozen=True)
class Judged:
    """A verdict as sent: the verdict itself and the claim groups it marks (group id, judgement)."""

    verdict: Verdict
    claims: tuple[tuple[str, str], ...] = ()


def claim_map(answers: Mapping[str, str]) -> ClaimMap:
    """The agreement map of a panel's answers, by seat key (the answered seats, no merger)."""
    return ClaimMap.of({seat: text for seat, text in answers.items() if text.strip()})


def _state(line: VerdictLine | Verdict | None, text: str) -> str | None:
    verdict = line.verdict if isinstance(line, VerdictLine) else line
    if verdict is None:
        return None
    return "real" if text in verdict.real else "false" if text in verdict.false else None


def judgement(group: Group, calls: Mapping[str, str], latest: Mapping[str, VerdictLine | Verdict]) -> str | None:
    """What a group's members' latest verdict lines say of it: real or false when all agree, mixed
    when they differ (or only some are marked), None when none is marked."""
    states = [_state(latest.get(calls.get(seat, "")), claim.text) for seat, claim in group.members]
    if all(s is None for s in states):
        return None
    if all(s == "real" for s in states):
        return "real"
    if all(s == "false" for s in states):
        return "false"
    return "mixed"


def claims_view(cmap: ClaimMap, calls: Mapping[str, str],
                latest: Mapping[str, VerdictLine | Verdict] | None = None) -> list[dict[str, Any]]:
    """Each group, most seats first: id, text, seats, their calls, each member's wording, the code
    it points at, and its judgement from ``latest`` (each call's latest line)."""
    latest = latest or {}
    return [{"id": g.id, "text": g.text, "seats": list(g.seats), "calls": [calls[s] for s in g.seats if s in calls],
             "claims": [{"seat": seat, "call": calls.get(seat), "text": c.text} for seat, c in g.members],
             "refs": list(g.refs), "judgement": judgement(g, calls, latest)} for g in cmap.groups]


@dataclass(frozen=True)
class PanelClaims:
    """A panel's claims as stored now: its answered seats' calls (by seat key) and the map."""

    panel: str
    calls: dict[str, str]
    map: ClaimMap

    def marks(self, wanted: Iterable[tuple[str, str]]) -> list[Mark]:
        """Each (group id, judgement) as a mark on every seat of the group, in its own wording; 400
        for an id that is no group of this panel."""
        out: list[Mark] = []
        for group_id, verdict in wanted:
            group = self.map.find(group_id)
            if group is None:
                raise BadRequest(f"no claim {group_id!r} on panel {self.panel} (GET /bench/panels/{self.panel} "
                                 "lists its claims)")
            for seat in group.seats:
                texts = tuple(dict.fromkeys(c.text for s, c in group.members if s == seat))
                out.append(Mark(self.calls[seat], texts, verdict))
        return out


async def panel_claims(db: Reader, panel_id: str, *, access: Access) -> PanelClaims:
    """The claims of a panel the caller may see (404 unknown, 403 outside its collections)."""
    answered = await panels.answers(db, panel_id, access=access)
    return PanelClaims(panel_id, {seat: call for seat, (call, _) in answered.items()},
                       claim_map({seat: text for seat, (_, text) in answered.items()}))


async def panel_view(db: Reader, panel_id: str, *, access: Access) -> dict[str, Any]:
    """One panel to judge: ``store.panels.detail`` (the panel, every seat with its answer, verdict
    and history), its prompt's attachments by name, its ``claims`` (``claims_view``, judged from
    the seats' latest lines) and ``merged`` (the merger's seat, or None)."""
    out = await panels.detail(db, panel_id, access=access)
    seats = out["seats"]
    answered = {s["key"]: s for s in seats if s["status"] == "ok" and s["key"] != "merger" and s["answer"]}
    calls = {key: s["call"] for key, s in answered.items()}
    latest = await verdicts.latest_of(db, calls.values())
    out["panel"]["attachments"] = attachments.names(out["panel"]["prompt"])
    out["claims"] = claims_view(claim_map({key: s["answer"] for key, s in answered.items()}), calls, latest)
    merger = next((s for s in seats if s["key"] == "merger"), None)
    out["merged"] = None if merger is None else {k: merger[k] for k in ("call", "alias", "status", "answer")}
    return out


async def judge(db: Database, judged: Judged, *, access: Access) -> tuple[Verdict, bool]:
    """Record a verdict (replacing the call's last one whole) and mark the claim groups it names,
    on every seat that made each, in one transaction."""
    marks: list[Mark] = []
    if judged.claims:
        panel = await panels.panel_of(db, judged.verdict.call)
        if panel is None:
            if await verdicts.call_target(db, judged.verdict.call) is None:
                raise NotFound(f"no call with id {judged.verdict.call!r}")
            raise BadRequest("claims are marked on panel seats only; this call has none")
        marks = (await panel_claims(db, panel, access=access)).marks(judged.claims)
    return await verdicts.record(db, judged.verdict, access=access, marks=marks)


async def mark_claim(db: Database, panel_id: str, group_id: str, verdict: str, *,
                     access: Access) -> tuple[dict[str, Any], list[str]]:
    """Mark one group real, false or none on every seat that made it (one transaction). Returns the
    group as ``claims_view`` shows it, with its seats' new verdicts (``verdicts``: call -> latest
    line), and the calls that got a new line."""
    found = await panel_claims(db, panel_id, access=access)
    marks = found.marks([(group_id, verdict)])
    recorded = await verdicts.mark(db, marks, access=access)
    group = found.map.find(group_id)
    assert group is not None  # marks() refused an unknown id
    latest = {call: v for call, (v, _) in recorded.items()}
    view = claims_view(ClaimMap(found.map.seats, (group,)), found.calls, latest)[0]
    view["verdicts"] = {call: v.as_dict() for call, v in latest.items()}
    return view, [call for call, (_, written) in recorded.items() if written]


__all__ = ["Judged", "PanelClaims", "claim_map", "claims_view", "judge", "judgement", "mark_claim", "panel_claims",
           "panel_view"]
