"""What a panel and a route turn look like to a caller, whatever face it came through: a panel's
markdown (a heading, a section per seat, a verdict footer; or the merged answer), and the ``bench``
object of both. Wire-neutral: each dialect, MCP and the CLI put these in their own envelopes.

The ``bench`` object is part of the wire contract: its keys, and their order, stay as they are.
"""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.engine.judging import claims_view
from benchwarmers_mcp.engine.merge import lone_claims
from benchwarmers_mcp.engine.panel import PanelRun
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.messages import Usage
from benchwarmers_mcp.store.calls import SeatRecord

VERDICT_HINT = 'POST /bench/verdict {"call", "useful": true|false, "note", "real": [...], "false": [...]}'
ROUTE_VERDICT_HINT = ('optional, once per conversation: POST /bench/verdict {"call": "<call>", "useful": true|false, '
                      '"note": "..."}')
EMPTY_NOTE = ("_empty reply: usually the model's token budget ran out (a reasoning model spent it thinking), "
              "not incapacity_")


# ---- a panel's markdown ------------------------------------------------------------------------

def heading(run: PanelRun) -> str:
    s = run.seating
    line = (f"Bench {run.collection.qualified} {run.id} · {s.members} member{'s' if s.members != 1 else ''}"
            f" + {s.explorers} explorer{'s' if s.explorers != 1 else ''} · explorer shape {s.shape} ({s.shape_by})")
    if run.simulated:
        line += " · simulated models: " + ", ".join(sorted(run.simulated))
    if s.skipped:
        line += "\n\nNot asked: " + "; ".join(f"{k['alias']} ({k['why']})" for k in s.skipped)
    return line + "\n\n"


def section(run: PanelRun, seat: SeatRecord) -> str:
    marker = " (simulated)" if seat.alias in run.simulated else ""
    head = f"## {seat.label} — {seat.alias}{marker}\n`{seat.call}` · {seat.status} · {seat.seconds:.1f}s\n\n"
    if seat.status == "ok":
        body = seat.answer
    elif seat.status == "empty":
        body = EMPTY_NOTE
    else:
        body = f"_error: {seat.error[-300:]}_"
    return head + body + "\n\n"


def footer(run: PanelRun) -> str:
    calls = [s.call for s in run.seats_in_seat_order() if s.status in ("ok", "empty")]
    example = calls[0] if calls else f"{run.id}.member1"
    return (f"---\nRecord a verdict per seat once you have checked it against the real work: "
            f"`POST /bench/verdict` with `{{\"call\": \"{example}\", \"useful\": true, \"note\": \"...\", "
            f"\"real\": [\"...\"], \"false\": [\"...\"]}}`, or `bench verdict {example} --useful`.\n")


def every_answer(run: PanelRun) -> str:
    return heading(run) + "".join(section(run, s) for s in run.seats_in_seat_order()) + footer(run)


def merged_content(run: PanelRun) -> str:
    """The merger's answer with a line naming its sources, or every answer with the reason it fell back."""
    merge = run.merge
    if merge and merge.answer is not None and merge.record is not None:
        seats = run.seats_in_seat_order()
        sources = ", ".join(f"{s.alias} {s.status}" for s in seats)
        lone = lone_claims(merge.claims, seats) if merge.claims else ""
        return (f"{merge.answer}\n\n---\n{lone + chr(10) if lone else ''}Merged by {merge.record.alias} "
                f"(`{merge.record.call}`) from: {sources}. Every seat is in `bench` (and every claim, with who made "
                f"it, in `bench.claims`); record a verdict per call: {VERDICT_HINT}\n")
    why = merge.note if merge and merge.note else "the merge did not run"
    return f"_Merged reply unavailable: {why}. Every answer follows._\n\n" + every_answer(run)


def content(run: PanelRun) -> str:
    """The whole panel's markdown, once the run is done."""
    return merged_content(run) if run.reply == "merged" else every_answer(run)


# ---- the bench object --------------------------------------------------------------------------

def _usage(usage: Usage) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def panel_bench(run: PanelRun) -> dict[str, Any]:
    """A panel's ``bench``: every seat in seat order with its call id, what was skipped, the merge."""
    seats = []
    notes = {seat.key: seat.note for seat in run.seating.seats if seat.note}
    for s in run.seats_in_seat_order():
        entry = s.as_dict()
        if s.seat in notes:
            entry["note"] = notes[s.seat]
        entry["error"] = s.error[-500:]
        if s.alias in run.simulated:
            entry["simulated"] = True
        seats.append(entry)
    out: dict[str, Any] = {
        "panel": run.id, "collection": run.collection.qualified, "shape": run.seating.shape,
        "shape_by": run.seating.shape_by, "seats": seats, "verdict": VERDICT_HINT,
    }
    if run.panel.skipped:
        out["skipped"] = run.panel.skipped
    if run.reply == "merged":
        merge = run.merge
        if merge and merge.record:
            out["merger"] = merge.record.as_dict()
        if merge and merge.claims is not None:  # the agreement map: each claim, its seats, its judgement
            out["claims"] = claims_view(merge.claims, {s.seat: s.call for s in run.seats_done})
        if merge and merge.answer is not None:
            out["reply"] = "merged"
        else:
            out["reply"] = "all"
            out["note"] = merge.note if merge and merge.note else "the merge did not run"
    out["usage"] = _usage(run.usage)
    return out


def turn_bench(turn: RouteTurn) -> dict[str, Any]:
    """A route turn's ``bench``: the conversation, the member and its call id, who failed over, who
    was skipped, the tools left out of the member's request and the tool names it saw shortened."""
    out: dict[str, Any] = {"collection": turn.collection.qualified, "reply": "route",
                           "conversation": turn.conversation, "call": turn.call, "alias": turn.alias,
                           "turn": turn.turn}
    if turn.failed_over:
        out["failed_over"] = list(turn.failed_over)
    if turn.skipped:
        out["skipped"] = turn.skipped
    if turn.dropped_tools:
        out["dropped_tools"] = turn.dropped_tools
    if turn.renamed_tools:
        out["renamed_tools"] = turn.renamed_tools
    out["verdict"] = ROUTE_VERDICT_HINT.replace("<call>", turn.call or "<call>")
    if turn.usage:
        out["usage"] = _usage(turn.usage)
    return out


def progress_field(run: PanelRun) -> dict[str, Any]:
    """How far a streamed panel is, as data on each piece (``bench_progress``): its seats, and how
    many are done, so a client counts from numbers, never from the markdown. ``done`` counts the
    seats relayed so far: a seat that finished meanwhile is counted on its own piece."""
    return {"panel": run.id, "seats": len(run.seating.seats), "done": run.relayed}


def reply_headers(run: PanelRun, overhead_ms: float) -> dict[str, str]:
    """The headers every panel reply carries, whatever the dialect."""
    return {"X-Bench-Panel": run.id, "X-Bench-Overhead-Ms": f"{overhead_ms:.1f}"}


__all__ = ["EMPTY_NOTE", "ROUTE_VERDICT_HINT", "VERDICT_HINT", "content", "every_answer", "footer", "heading",
           "merged_content", "panel_bench", "section", "turn_bench"]
