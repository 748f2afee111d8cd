"""What a panel looks like to a caller, whatever the dialect: the markdown content (heading,
a section per seat, a verdict footer), the merged content, and the ``bench`` field."""

from __future__ import annotations

import json
from typing import Any

from benchwarmers_mcp.engine.panel import PanelRun
from benchwarmers_mcp.store.calls import SeatRecord

VERDICT_HINT = 'POST /bench/verdict {"call", "useful": true|false, "note", "real": [...], "false": [...]}'
EMPTY_NOTE = ("_empty reply: usually the model's token budget ran out (a reasoning model spent it thinking), "
              "not incapacity_")


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
        sources = ", ".join(f"{s.alias} {s.status}" for s in run.seats_in_seat_order())
        return (f"{merge.answer}\n\n---\nMerged by {merge.record.alias} (`{merge.record.call}`) from: {sources}. "
                f"Every seat is in `bench`; record a verdict per call: {VERDICT_HINT}\n")
    why = merge.note if merge and merge.note else "the merge did not run"
    return f"_Merged reply unavailable: {why}. Every answer follows._\n\n" + every_answer(run)


def content(run: PanelRun) -> str:
    return merged_content(run) if run.reply == "merged" else every_answer(run)


def bench_field(run: PanelRun, *, include_answers: bool = True) -> dict[str, Any]:
    seats = []
    notes = {seat.key: seat.note for seat in run.seating.seats if seat.note}
    for s in run.seats_in_seat_order():
        entry = s.as_dict()
        if s.seat in notes:
            entry["note"] = notes[s.seat]
        entry["error"] = s.error[-500:]
        if not include_answers:
            entry.pop("answer")
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
        if merge and merge.answer is not None:
            out["reply"] = "merged"
        else:
            out["reply"] = "all"
            out["note"] = merge.note if merge and merge.note else "the merge did not run"
    usage = run.usage
    out["usage"] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    return out


def progress_field(run: PanelRun) -> dict[str, Any]:
    """How far a streamed panel is, as data on each piece (``bench_progress``): its seats, and how
    many are done, so a client counts from numbers, never from the markdown."""
    return {"panel": run.id, "seats": len(run.seating.seats), "done": len(run.seats_done)}


def reply_headers(run: PanelRun, overhead_ms: float) -> dict[str, str]:
    """The headers every panel reply carries, whatever the dialect."""
    return {"X-Bench-Panel": run.id, "X-Bench-Overhead-Ms": f"{overhead_ms:.1f}"}


def seats_header(run: PanelRun) -> str:
    """For dialects with no room in the body (Gemini): the seats as compact JSON."""
    return json.dumps([{"call": s.call, "seat": s.label, "alias": s.alias, "status": s.status}
                       for s in run.seats_in_seat_order()], separators=(",", ":"))
