"""``bench panels`` and ``bench panel show``: the panels to judge, and one panel whole.

Both read the gateway's routes (``GET /bench/panels``, ``GET /bench/panels/<id>``,
``GET /bench/conversations/<id>``) with ``BENCHWARMERS_KEY``, so a scoped gateway key sees only its
own collections' panels, as everywhere else. The shared formatting of a panel (who asked, a seat's
line, a seat's claims) is here too: ``bench judge`` (``cmd_judge.py``) shows panels the same way.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO
from urllib.parse import quote

from benchwarmers_mcp.cli.console import note, show_json
from benchwarmers_mcp.cli.remote import Remote, UsageError, given
from benchwarmers_mcp.cli.tables import ago, table

SOURCES = ("dashboard", "cli", "gateway", "mcp")
ANSWERED = ("ok", "empty")  # a seat that can be judged (the server's own rule: store/verdicts.ANSWERED)
INDENT = "    "


def bare(collection: str | None) -> str | None:
    return None if not collection else collection.strip().removeprefix("bench/")


def list_params(args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """The list's query from the command's filters (a filter left out is not sent)."""
    return given(collection=bare(args.collection), source=args.source, model=args.model, **extra)


def asked_by(panel: dict[str, Any]) -> str:
    """``gateway (OpenAI/Python 2.3.0), key my-app``: where it came from, the caller's product, the key."""
    text = panel.get("source") or "unknown"
    if panel.get("client"):
        text += f" ({panel['client']})"
    key = panel.get("asked_by")
    if key and key not in ("local", text):
        text += f", key {key}"
    return text


def verdict_word(useful: Any, owed: bool = False) -> str:
    if owed:
        return "owed"
    return "-" if useful is None else ("useful" if useful else "not useful")


def tokens(seat: dict[str, Any]) -> str:
    got, sent = seat.get("tokens_in"), seat.get("tokens_out")
    return "-" if got is None and sent is None else f"{got or 0}→{sent or 0}"


def seat_line(seat: dict[str, Any]) -> str:
    """``member2 (beta) · p….member2 · ok · 1.2 s · 120→340 tokens · owed``."""
    verdict = seat.get("verdict") or {}
    word = verdict_word(verdict.get("useful", seat.get("useful")), bool(seat.get("owed")))
    return (f"{seat.get('key')} ({seat.get('alias')}) · {seat.get('call')} · {seat.get('status')} · "
            f"{seat.get('seconds')} s · {tokens(seat)} tokens · {word}")


def indented(text: str, out: TextIO) -> None:
    for line in (text or "").splitlines() or [""]:
        out.write(f"{INDENT}{line}".rstrip() + "\n")


def seat_claims(detail: dict[str, Any], call: str) -> list[tuple[dict[str, Any], str]]:
    """The claim groups a seat's answer is in, each with the seat's own wording, in the map's order."""
    out = []
    for group in detail.get("claims") or ():
        for member in group.get("claims") or ():
            if member.get("call") == call:
                out.append((group, str(member.get("text"))))
                break
    return out


def claim_state(seat: dict[str, Any], text: str) -> str:
    verdict = seat.get("verdict") or {}
    if text in (verdict.get("real") or ()):
        return "real"
    if text in (verdict.get("false") or ()):
        return "false"
    return ""


def claim_line(number: int, group: dict[str, Any], text: str, seat: dict[str, Any]) -> str:
    others = [s for s in group.get("seats") or () if s != seat.get("key")]
    said = f"also {', '.join(others)}" if others else "only this seat"
    state = claim_state(seat, text)
    return f"{number}. {text}  [{said}; {group.get('id')}]" + (f"  marked {state}" if state else "")


def history_lines(seat: dict[str, Any]) -> list[str]:
    lines = []
    for line in seat.get("history") or ():
        parts = [verdict_word(line.get("useful")) if line.get("useful") is not None else "claims marked",
                 f"by {line.get('key_name')}", ago(line.get("at"))]
        if line.get("note"):
            parts.append(f"note: {line['note']}")
        if line.get("real"):
            parts.append("real: " + "; ".join(line["real"]))
        if line.get("false"):
            parts.append("false: " + "; ".join(line["false"]))
        lines.append(" · ".join(parts))
    return lines


def panel_head(detail: dict[str, Any], out: TextIO) -> None:
    """The panel's id, collection, when, who asked, attachments and prompt."""
    p = detail["panel"]
    out.write(f"panel {p['id']} · {p.get('collection')} · {p.get('shape')} · reply {p.get('reply')} · "
              f"{ago(p.get('at'))}\n")
    out.write(f"asked by {asked_by(p)}\n")
    if p.get("pruned_at"):
        out.write(f"prompt and answers pruned {ago(p['pruned_at'])} (bench settings retention); verdicts kept\n")
    if p.get("attachments"):
        out.write(f"attachments: {', '.join(p['attachments'])}\n")
    if p.get("system"):
        out.write("system:\n")
        indented(p["system"], out)
    out.write("prompt:\n")
    indented(p.get("prompt") or "", out)


def claims_map(detail: dict[str, Any], out: TextIO) -> None:
    """The agreement map: the claims several seats made, then those only one made (where to look first)."""
    groups = list(detail.get("claims") or ())
    if not groups:
        out.write("claims: none found in the answers\n")
        return
    for title, chosen in (("claims several seats made", [g for g in groups if len(g.get("seats") or ()) > 1]),
                          ("claims only one seat made (look here first)",
                           [g for g in groups if len(g.get("seats") or ()) == 1])):
        if not chosen:
            continue
        out.write(f"{title}:\n")
        for g in chosen:
            judged = f"  {g['judgement']}" if g.get("judgement") else ""
            out.write(f"{INDENT}{g.get('id')}  {g.get('text')}  [{', '.join(g.get('seats') or ())}]{judged}\n")


async def panels(args: argparse.Namespace, remote: Remote) -> int:
    """``bench panels``: newest first, with each panel's seats owed a verdict."""
    params = list_params(args, owed="1" if args.owed else None, before=args.before,
                         limit=str(args.limit) if args.limit else None)
    reply = await remote.get("/bench/panels", params)
    if show_json(args, reply):
        return 0
    rows = [(p["id"], ago(p.get("at")), p.get("collection"), asked_by(p),
             f"{p.get('owed', 0)} owed of {len(p.get('seats') or ())}", p.get("prompt_preview"))
            for p in reply.get("panels") or ()]
    table(("panel", "asked", "collection", "asked by", "seats", "prompt"), rows)
    total = reply.get("owed_total", 0)
    if not rows:
        note("no panels" + (" owed a verdict" if args.owed else "") + " here")
    note(f"{total} seat{'s' if total != 1 else ''} owed a verdict" + (" (bench judge judges them, one key a seat)"
                                                                    if total else ""))
    if reply.get("next"):
        note(f"more: add --before {reply['next']}")
    if rows:
        note("one panel whole: bench panel show <panel>")
    return 0


async def panel_show(args: argparse.Namespace, remote: Remote) -> int:
    """``bench panel show <id>``: a panel, or a route conversation (``r...``), whole."""
    ident = args.id.strip()
    if not ident:
        raise UsageError("name a panel: bench panel show <panel id> (bench panels lists them)")
    if ident.startswith("r"):
        return await conversation_show(args, remote, ident)
    detail = await remote.get(f"/bench/panels/{quote(ident, safe='')}")
    if show_json(args, detail):
        return 0
    out = sys.stdout
    panel_head(detail, out)
    seats = list(detail.get("seats") or ())
    out.write("\n")
    table(("seat", "model", "call", "status", "seconds", "tokens", "verdict"),
          [(s.get("key"), s.get("alias"), s.get("call"), s.get("status"), s.get("seconds"), tokens(s),
            verdict_word((s.get("verdict") or {}).get("useful"), bool(s.get("owed")))) for s in seats], out)
    for seat in seats:
        out.write(f"\n── {seat_line(seat)}\n")
        if seat.get("status") in ANSWERED:
            indented(seat.get("answer") or "", out)
        else:
            out.write(f"{INDENT}(no answer: {seat.get('error') or seat.get('status')})\n")
        history = history_lines(seat)
        if history:
            out.write("  verdicts, oldest first:\n")
            for line in history:
                out.write(f"{INDENT}{line}\n")
    out.write("\n")
    claims_map(detail, out)
    out.flush()
    return 0


async def conversation_show(args: argparse.Namespace, remote: Remote, ident: str) -> int:
    detail = await remote.get(f"/bench/conversations/{quote(ident, safe='')}")
    if show_json(args, detail):
        return 0
    out, c = sys.stdout, detail["conversation"]
    out.write(f"route conversation {c['id']} · {c.get('collection')} · {c.get('turns')} turn(s) · "
              f"{ago(c.get('last_at'))}\nasked by {asked_by(c)}\n")
    for t in detail.get("turns") or ():
        tried = ", ".join(str(x.get("alias", x)) if isinstance(x, dict) else str(x) for x in t.get("tried") or ())
        verdict = t.get("verdict") or {}
        out.write(f"\n── turn {t.get('turn')} · {t.get('alias') or '-'} · {t.get('call') or '-'} · {t.get('status')} · "
                  f"{t.get('seconds')} s · {tokens(t)} tokens · {verdict_word(verdict.get('useful'))}"
                  + (f" · tried first: {tried}" if tried else "") + "\n")
        if t.get("prompt"):
            out.write("  asked:\n")
            indented(t["prompt"], out)
        out.write("  answered:\n")
        indented(t.get("answer") or t.get("error") or "", out)
    out.flush()
    return 0


__all__ = ["ANSWERED", "SOURCES", "asked_by", "claim_line", "claims_map", "history_lines", "list_params", "panel_head",
           "panel_show", "panels", "seat_claims", "seat_line"]
