"""``bench judge``: the inbox in the terminal, one seat at a time, one key each.

The keys are the inbox's everywhere (``benchwarmers_mcp.judge_keys``: the dashboard's "To judge"
page reads the same table). Panels come newest first from ``GET /bench/panels?owed=1`` (a page at
a time, so a panel left with ``n`` is not shown again), each read whole from
``GET /bench/panels/<id>``; the seats shown are the answered ones (errored seats are listed apart:
they cannot be judged useful; with ``--model``, that model's seats alone). A verdict (``u``, ``x``) keeps the seat's note and claim marks as
they are (the server replaces a verdict whole, so they are sent again with it) and moves on to the
next seat owed, then to the next panel. ``c`` asks for a note and for claim marks: each mark is
sent at once (``POST /bench/claims``: on every seat that made the claim); the note goes with the
seat's verdict (at once when it has one). End of input stops as ``q`` does.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Literal, TextIO
from urllib.parse import quote

from benchwarmers_mcp.cli.cmd_panels import (
    ANSWERED,
    asked_by,
    claim_line,
    indented,
    list_params,
    seat_claims,
    seat_line,
)
from benchwarmers_mcp.cli.keys import ESC, KeyReader
from benchwarmers_mcp.cli.remote import Remote, UsageError
from benchwarmers_mcp.judge_keys import BY_ACTION, action_of, legend

PAGE = 20  # panels asked for at a time
Next = Literal["next", "quit"]
_MARK = re.compile(r"(\d+)\s*[=:]?\s*(real|false|none|r|f|n)\b", re.I)
_JUDGEMENT = {"r": "real", "f": "false", "n": "none"}


def parse_marks(text: str, count: int) -> tuple[list[tuple[int, str]], list[str]]:
    """``1 real, 2f 3=none`` as (claim number, judgement) pairs, and what could not be read."""
    marks, problems = [], []
    for token in re.split(r"[,;]\s*|\s+(?=\d)", text.strip()):
        if not token.strip():
            continue
        m = _MARK.fullmatch(token.strip())
        if m is None:
            problems.append(f"{token.strip()!r} is not '<number> real|false|none'")
            continue
        number, word = int(m.group(1)), m.group(2).lower()
        if not 1 <= number <= count:
            problems.append(f"there is no claim {number} (1 to {count})")
            continue
        marks.append((number, _JUDGEMENT.get(word, word)))
    return marks, problems


class Inbox:
    """One session of ``bench judge``."""

    def __init__(self, remote: Remote, args: argparse.Namespace, keys: KeyReader, out: TextIO) -> None:
        self.remote, self.args, self.keys, self.out = remote, args, keys, out
        self.judged = 0
        self.notes: dict[str, str] = {}  # a note typed for a seat not judged yet: sent with its verdict

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    async def run(self) -> int:
        before: str | None = None
        while True:
            page = await self.remote.get("/bench/panels", list_params(self.args, owed="1", limit=str(PAGE),
                                                                      before=before))
            for panel in page.get("panels") or ():
                if await self.judge_panel(panel["id"]) == "quit":
                    return await self.finish()
            before = page.get("next")
            if not before:
                break
        self.say("nothing left to judge here")
        return await self.finish()

    async def finish(self) -> int:
        left = await self.remote.get("/bench/panels", list_params(self.args, owed="1", limit="1"))
        owed = int(left.get("owed_total", 0))  # under the session's filters
        self.say(f"judged {self.judged} seat{'s' if self.judged != 1 else ''}; {owed} still owed"
                 + (" (bench panels --owed lists them)" if owed else ""))
        return 0

    async def detail(self, panel_id: str) -> dict[str, Any]:
        return dict(await self.remote.get(f"/bench/panels/{quote(panel_id, safe='')}"))

    def judgeable(self, detail: dict[str, Any]) -> list[dict[str, Any]]:
        """The panel's seats this session judges: the answered ones (with ``--model``, that model's)."""
        return [s for s in detail["seats"] if s.get("status") in ANSWERED
                and (not self.args.model or s.get("alias") == self.args.model)]

    async def judge_panel(self, panel_id: str) -> Next:
        detail = await self.detail(panel_id)
        seats = self.judgeable(detail)
        if not any(s.get("owed") for s in seats):
            return "next"
        self.head(detail)
        at = next(i for i, s in enumerate(seats) if s.get("owed"))
        self.show(detail, seats, at)
        while True:
            typed = await self.keys.key("key (? for keys): ")
            if typed is None:
                return "quit"
            action = action_of(typed)
            if action is None:
                self.say(f"{'that key' if typed == ESC else repr(typed)} does nothing here; {BY_ACTION['help']} "
                         "lists the keys")
            elif action == "quit":
                return "quit"
            elif action == "next_panel":
                return "next"
            elif action == "help":
                self.say(legend())
            elif action in ("next_seat", "previous_seat"):
                step = 1 if action == "next_seat" else -1
                if 0 <= at + step < len(seats):
                    at += step
                    self.show(detail, seats, at)
                else:
                    self.say("that was the " + ("last" if step > 0 else "first") + " seat of this panel")
            elif action == "note":
                detail, seats = await self.note_and_claims(detail, seats[at])
                self.show(detail, seats, at)
            else:
                detail, seats = await self.verdict(detail, seats[at], action == "useful")
                following = [i for i in (*range(at + 1, len(seats)), *range(at)) if seats[i].get("owed")]
                if not following:
                    self.say(f"panel {panel_id} judged")
                    return "next"
                at = following[0]
                self.show(detail, seats, at)

    def head(self, detail: dict[str, Any]) -> None:
        p = detail["panel"]
        self.say("")
        self.say(f"══ panel {p['id']} · {p.get('collection')} · asked by {asked_by(p)} · {p.get('owed')} owed")
        if p.get("attachments"):
            self.say(f"attachments: {', '.join(p['attachments'])}")
        self.say("prompt:")
        indented(p.get("prompt") or "", self.out)
        errored = [s for s in detail["seats"] if s.get("status") not in ANSWERED]
        if errored:
            self.say("not answered (nothing to judge useful): " + ", ".join(
                f"{s.get('key')} ({s.get('alias')}): {s.get('status')}" for s in errored))
        self.say(f"keys: {legend()}")

    def show(self, detail: dict[str, Any], seats: list[dict[str, Any]], at: int) -> None:
        seat = seats[at]
        self.say("")
        self.say(f"── seat {at + 1} of {len(seats)}: {seat_line(seat)}")
        indented(seat.get("answer") or "", self.out)
        claims = seat_claims(detail, str(seat["call"]))
        if claims:
            self.say("  claims:")
            for n, (group, text) in enumerate(claims, 1):
                self.say(f"    {claim_line(n, group, text, seat)}")
        if seat.get("call") in self.notes:
            self.say(f"  note (sent with the verdict): {self.notes[seat['call']]}")
        elif (seat.get("verdict") or {}).get("note"):
            self.say(f"  note: {seat['verdict']['note']}")

    async def refreshed(self, detail: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        fresh = await self.detail(detail["panel"]["id"])
        return fresh, self.judgeable(fresh)

    async def send_verdict(self, seat: dict[str, Any], useful: bool, note: str | None = None) -> None:
        """The seat's verdict, with its note and claim marks as they stand (a verdict replaces the last whole)."""
        latest = seat.get("verdict") or {}
        chosen = self.notes.pop(seat["call"], None) if note is None else note
        body = {"call": seat["call"], "useful": useful, "note": (latest.get("note") or "") if chosen is None else chosen,
                "real": list(latest.get("real") or ()), "false": list(latest.get("false") or ())}
        reply = await self.remote.post("/bench/verdict", body)
        self.say(f"{seat['call']}: {'useful' if useful else 'not useful'}"
                 + ("" if reply.get("written", True) else " (unchanged)"))

    async def verdict(self, detail: dict[str, Any], seat: dict[str, Any],
                      useful: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        was_owed = bool(seat.get("owed"))
        await self.send_verdict(seat, useful)
        self.judged += was_owed
        return await self.refreshed(detail)

    async def note_and_claims(self, detail: dict[str, Any],
                              seat: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        current = self.notes.get(seat["call"], (seat.get("verdict") or {}).get("note") or "")
        typed = await self.keys.line(f"note for {seat['key']} (Enter keeps {current!r}, '-' clears): ")
        note = current if not typed or not typed.strip() else ("" if typed.strip() == "-" else typed.strip())
        claims = seat_claims(detail, str(seat["call"]))
        if claims:
            marked = await self.keys.line(f"mark claims 1-{len(claims)} (e.g. '1 real, 2 false, 3 none'; "
                                          "Enter for none): ")
            marks, problems = parse_marks(marked or "", len(claims))
            for problem in problems:
                self.say(f"not marked: {problem}")
            for number, judgement in marks:
                group = claims[number - 1][0]
                reply = await self.remote.post("/bench/claims", {"panel": detail["panel"]["id"],
                                                                 "claim": group["id"], "judgement": judgement})
                seats = ", ".join(group.get("seats") or ())
                self.say(f"claim {number} marked {judgement} on {seats}"
                         + ("" if reply.get("written") else " (unchanged)"))
        detail, seats_now = await self.refreshed(detail)
        seat = next(s for s in seats_now if s["call"] == seat["call"])
        useful = (seat.get("verdict") or {}).get("useful")
        if useful is None:
            if note:
                self.notes[seat["call"]] = note
            else:
                self.notes.pop(seat["call"], None)
        elif note != ((seat.get("verdict") or {}).get("note") or ""):
            await self.send_verdict(seat, bool(useful), note)
            detail, seats_now = await self.refreshed(detail)
        return detail, seats_now


async def judge(args: argparse.Namespace, remote: Remote, *, stdin: TextIO | None = None,
                out: TextIO | None = None) -> int:
    """``bench judge``: every seat owed a verdict, newest panel first, one key each."""
    if args.json:
        raise UsageError("bench judge is interactive; bench panels --owed --json lists what is owed")
    keys = KeyReader(stdin or sys.stdin)
    with keys.session():
        return await Inbox(remote, args, keys, out or sys.stdout).run()


__all__ = ["Inbox", "judge", "parse_marks"]
