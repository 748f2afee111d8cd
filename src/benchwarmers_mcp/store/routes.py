"""Route mode in the store: sticky conversations, the call id of each member that answered one,
and a row per turn. Kept here (not in memory) so a restart or a second process on the same data
folder keeps every conversation on its member.

    route_conversations  one row per conversation: its sticky key, current member, turn count
    route_calls          one call id per member per conversation (``<conversation>.<n>``), for a verdict
    route_turns          one row per turn: who answered, how, how fast, what it cost. Never the prompt.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from benchwarmers_mcp.store.db import Database, Row, Transaction, placeholders
from benchwarmers_mcp.store.limits import rests_now
from benchwarmers_mcp.store.portable import read_text


def new_conversation_id(now: float | None = None) -> str:
    """``r<YYYYMMDD>-<HHMMSS>-<4 hex>`` in UTC."""
    stamp = datetime.fromtimestamp(now or time.time(), UTC).strftime("%Y%m%d-%H%M%S")
    return f"r{stamp}-{secrets.token_hex(2)}"


@dataclass(frozen=True)
class Conversation:
    id: str
    sticky: str
    collection: str
    key_name: str
    alias: str | None
    turns: int
    started_at: float
    last_at: float


@dataclass(frozen=True)
class TurnClaim:
    """A turn about to run: its conversation (as it was before this turn) and its number. ``call``:
    the conversation's member's call id when the claim took that member for the turn too (it was
    eligible and not resting), so the usual sticky turn commits to its member with no second
    transaction. ``member_rests``: the conversation's member rests now (read in the claim)."""

    conversation: Conversation
    turn: int
    new: bool
    call: str | None = None
    member_rests: bool = False


@dataclass(frozen=True)
class MemberCall:
    """The call id a member answers a conversation under (``<conversation>.<n>``), for a verdict."""

    call: str
    conversation: str
    alias: str
    collection: str
    n: int
    at: float


@dataclass
class TurnRecord:
    conversation: str
    turn: int
    status: str
    seconds: float
    call: str | None = None
    alias: str | None = None
    first_token_s: float | None = None
    tool_calls: int = 0
    finish: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    reasoning: int = 0
    tried: list[dict[str, str]] = field(default_factory=list)
    error: str = ""
    key_name: str = "local"
    at: float = field(default_factory=time.time)


def _conversation(row: Row) -> Conversation:
    return Conversation(row["id"], row["sticky"], row["collection"], row["key_name"], row["alias"], row["turns"],
                        row["started_at"], row["last_at"])


_CLAIM_SQL = (  # the conversation, with its member's call id and whether that member rests now
    "SELECT c.*, k.call AS member_call,"
    f" CASE WHEN c.alias IS NOT NULL AND {rests_now('c.alias')} THEN 1 ELSE 0 END AS member_rests"
    " FROM route_conversations c LEFT JOIN route_calls k ON k.conversation = c.id AND k.alias = c.alias"
    " WHERE c.sticky = ? AND c.last_at >= ? ORDER BY c.last_at DESC LIMIT 1")


async def claim_turn(db: Database, sticky: str, collection: str, key_name: str, *, idle_lapse: float,
                     now: float | None = None, eligible: Collection[str] = ()) -> TurnClaim:
    """The live conversation with this sticky key (idle less than ``idle_lapse``), or a new one,
    with the next turn number taken, in one transaction (so two processes never split it). When
    the conversation's member is ``eligible``, does not rest now and has its call id, the member
    is taken too (its last use, as ``assign_member`` does) and the claim carries the call id: the
    usual sticky turn reads who rests in this statement, with none of its own."""
    now = now or time.time()
    async with db.transaction() as tx:
        row = await tx.fetchone(_CLAIM_SQL, (now, now, sticky, now - idle_lapse))
        if row is not None:
            before, rests = _conversation(row), bool(row["member_rests"])
            await tx.execute("UPDATE route_conversations SET turns = turns + 1, last_at = ? WHERE id = ?",
                             (now, before.id))
            usable = before.alias is not None and before.alias in eligible and not rests
            call = row["member_call"] if usable else None
            if call is not None:
                await _used(tx, str(before.alias), now)
            return TurnClaim(before, before.turns + 1, False, None if call is None else str(call), rests)
        while True:
            conv = Conversation(new_conversation_id(now), sticky, collection, key_name, None, 0, now, now)
            if await tx.fetchone("SELECT 1 FROM route_conversations WHERE id = ?", (conv.id,)) is None:
                break
        await tx.execute(
            "INSERT INTO route_conversations (id, sticky, collection, key_name, alias, turns, started_at, last_at)"
            " VALUES (?, ?, ?, ?, NULL, 1, ?, ?)", (conv.id, sticky, collection, key_name, now, now))
        return TurnClaim(conv, 1, True)


async def _used(tx: Transaction, alias: str, now: float) -> None:
    await tx.execute("UPDATE models SET last_used = ? WHERE alias = ? AND (last_used IS NULL OR last_used < ?)",
                     (now, alias, now))


async def assign_member(db: Database, conversation: str, alias: str, collection: str,
                        now: float | None = None) -> str:
    """The member now answers the conversation: its call id (reused, or the next ``.<n>``), the
    conversation's member, and the model's last use, in one commit."""
    now = now or time.time()
    async with db.transaction() as tx:
        row = await tx.fetchone("SELECT call FROM route_calls WHERE conversation = ? AND alias = ?",
                                (conversation, alias))
        if row is not None:
            call = str(row["call"])
        else:
            n = 1 + int(await tx.fetchval("SELECT COUNT(*) FROM route_calls WHERE conversation = ?",
                                          (conversation,)))
            call = f"{conversation}.{n}"
            await tx.execute("INSERT INTO route_calls (call, conversation, alias, collection, n, at)"
                             " VALUES (?, ?, ?, ?, ?, ?)", (call, conversation, alias, collection, n, now))
        await tx.execute("UPDATE route_conversations SET alias = ? WHERE id = ?", (alias, conversation))
        await _used(tx, alias, now)
    return call


async def record_turn(db: Database, turn: TurnRecord) -> None:
    """The turn's row, committed whole even if the turn is cancelled meanwhile (``Database.record``)."""
    await db.record(
        "INSERT INTO route_turns (conversation, turn, call, alias, status, seconds, first_token_s, tool_calls,"
        " finish, tokens_in, tokens_out, reasoning, tried, error, key_name, at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (turn.conversation, turn.turn, turn.call, turn.alias, turn.status, round(turn.seconds, 3),
         None if turn.first_token_s is None else round(turn.first_token_s, 3), turn.tool_calls, turn.finish,
         turn.tokens_in, turn.tokens_out, turn.reasoning, json.dumps(turn.tried), turn.error[-500:],
         turn.key_name, turn.at))


async def turns_of(db: Database, conversation: str | None = None) -> list[dict[str, Any]]:
    """The turn rows of one conversation in turn order (``None``: every conversation's, as written)."""
    if conversation is None:
        rows = await db.fetchall("SELECT * FROM route_turns ORDER BY id")
    else:
        rows = await db.fetchall("SELECT * FROM route_turns WHERE conversation = ? ORDER BY turn, id",
                                 (conversation,))
    return [{**dict(r), "tried": json.loads(r["tried"]), "error": read_text(r["error"], db.dialect)} for r in rows]


async def conversations(db: Database) -> list[Conversation]:
    """Every conversation, oldest first."""
    rows = await db.fetchall("SELECT * FROM route_conversations ORDER BY started_at, id")
    return [_conversation(r) for r in rows]


async def member_calls(db: Database) -> list[MemberCall]:
    """Every member's call id, by conversation, in the order the members joined it."""
    rows = await db.fetchall("SELECT call, conversation, alias, collection, n, at FROM route_calls"
                             " ORDER BY conversation, n")
    return [MemberCall(*r) for r in rows]


async def useful_counts(db: Database, aliases: list[str]) -> dict[str, tuple[int, int]]:
    """Per alias: (useful, judged) from the latest verdict on each of its route calls."""
    if not aliases:
        return {}
    rows = await db.fetchall(
        "SELECT c.alias, SUM(v.useful), COUNT(*) FROM verdicts v"
        " JOIN (SELECT call, MAX(id) AS id FROM verdicts GROUP BY call) last ON last.id = v.id"
        f" JOIN route_calls c ON c.call = v.call WHERE c.alias IN ({placeholders(aliases)}) GROUP BY c.alias",
        list(aliases))
    return {r[0]: (int(r[1] or 0), int(r[2])) for r in rows}
