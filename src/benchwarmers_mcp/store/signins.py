"""Sign-ins: which endpoints were signed in with a provider, when their tokens end, and the
sign-in flows in progress. Never a token: tokens and refresh tokens live in the keys file
(``upstream/keys.py``); a flow's state is kept here only as its SHA-256, its PKCE verifier and
device code only in the memory of the server that started it.

Tables (migration ``signins_001``): ``signins`` (one row per signed-in endpoint: its preset and
flow, the client id its tokens were issued to, when it signed in, when its token expires and was
last renewed, and whether it ended: a refused renewal) and ``signin_flows`` (one row per flow
started: its status, the code and address a device flow shows, its expiry, and which server holds
its secrets).

Flow statuses: ``pending`` until one of ``done``, ``failed``, ``denied`` (the user said no),
``expired`` (the provider's time ran out) or ``cancelled``. A flow leaves ``pending`` once only
(``finish_flow`` is a conditional update): a callback replayed with a code already used finds it
finished and is refused.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Row, Transaction

FLOW_STATUSES = ("pending", "done", "failed", "denied", "expired", "cancelled")
ALERT = "signin"  # the alert a refused renewal raises (``store/alerts.py``)
SIGNED_OUT_PAUSE = 100 * 365 * 86400.0  # a connection whose sign-in ended rests until it is signed in again


def digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


@dataclass(frozen=True)
class SignIn:
    endpoint: str
    preset: str
    flow: str
    client_id: str = ""
    signed_in_at: float = 0.0
    expires_at: float | None = None
    renewed_at: float | None = None
    renewable: bool = False
    ended_at: float | None = None
    ended_why: str | None = None

    @property
    def ended(self) -> bool:
        return self.ended_at is not None


@dataclass(frozen=True)
class Flow:
    id: str
    preset: str
    flow: str
    endpoint: str
    status: str
    created_at: float
    expires_at: float
    owner: str = ""
    error: str | None = None
    finished_at: float | None = None
    user_code: str | None = None
    verification_uri: str | None = None
    verification_uri_complete: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "preset": self.preset, "flow": self.flow, "endpoint": self.endpoint,
                "status": self.status, "error": self.error, "created_at": self.created_at,
                "expires_at": self.expires_at, "finished_at": self.finished_at, "user_code": self.user_code,
                "verification_uri": self.verification_uri,
                "verification_uri_complete": self.verification_uri_complete}


def _signin(row: Row) -> SignIn:
    return SignIn(row["endpoint"], row["preset"], row["flow"], row["client_id"] or "", row["signed_in_at"],
                  row["expires_at"], row["renewed_at"], bool(row["renewable"]), row["ended_at"], row["ended_why"])


def _flow(row: Row) -> Flow:
    return Flow(row["id"], row["preset"], row["flow"], row["endpoint"], row["status"], row["created_at"],
                row["expires_at"], row["owner"] or "", row["error"], row["finished_at"], row["user_code"],
                row["verification_uri"], row["verification_uri_complete"])


# ---- flows ---------------------------------------------------------------------------------------

async def start_flow(db: Database, flow: Flow, state: str | None) -> None:
    await db.write(
        "INSERT INTO signin_flows (id, preset, flow, endpoint, status, created_at, expires_at, owner, state_hash,"
        " user_code, verification_uri, verification_uri_complete) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (flow.id, flow.preset, flow.flow, flow.endpoint, flow.status, flow.created_at, flow.expires_at, flow.owner,
         digest(state) if state else None, flow.user_code, flow.verification_uri, flow.verification_uri_complete))


async def flow(db: Database, flow_id: str) -> Flow | None:
    row = await db.fetchone("SELECT * FROM signin_flows WHERE id = ?", (flow_id,))
    return None if row is None else _flow(row)


async def flow_by_state(db: Database, state: str) -> Flow | None:
    row = await db.fetchone("SELECT * FROM signin_flows WHERE state_hash = ?", (digest(state),))
    return None if row is None else _flow(row)


async def finish_flow(db: Database, flow_id: str, status: str, now: float, error: str | None = None) -> bool:
    """Move a pending flow to ``status``; False when it had already finished (a replay, a race)."""
    changed = await db.write("UPDATE signin_flows SET status = ?, error = ?, finished_at = ? WHERE id = ?"
                             " AND status = 'pending'", (status, error[:500] if error else None, now, flow_id))
    return changed > 0


async def recent_flows(db: Database, since: float) -> list[Flow]:
    rows = await db.fetchall("SELECT * FROM signin_flows WHERE created_at >= ? ORDER BY created_at", (since,))
    return [_flow(r) for r in rows]


async def forget_flows(db: Database, before: float) -> int:
    """Flows started before ``before`` (their record is all that is left of them)."""
    return await db.write("DELETE FROM signin_flows WHERE created_at < ?", (before,))


# ---- sign-ins ------------------------------------------------------------------------------------

async def save(db: Database, signin: SignIn, connection: str) -> None:
    """A sign-in that just finished: its row (a fresh start), the connection's pause over, and its
    alert cleared, in one transaction."""
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO signins (endpoint, preset, flow, client_id, signed_in_at, expires_at, renewed_at, renewable,"
            " ended_at, ended_why) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, NULL, NULL) ON CONFLICT (endpoint) DO UPDATE"
            " SET preset = excluded.preset, flow = excluded.flow, client_id = excluded.client_id,"
            " signed_in_at = excluded.signed_in_at, expires_at = excluded.expires_at, renewed_at = NULL,"
            " renewable = excluded.renewable, ended_at = NULL, ended_why = NULL",
            (signin.endpoint, signin.preset, signin.flow, signin.client_id, signin.signed_in_at, signin.expires_at,
             int(signin.renewable)))
        await _resume(tx, connection, signin.signed_in_at, "signed in again")
        await log_change(tx, "endpoint.signin", signin.endpoint, {"preset": signin.preset, "flow": signin.flow})


async def _resume(tx: Transaction, connection: str, now: float, why: str) -> None:
    await tx.execute("UPDATE connection_states SET paused_until = NULL, paused_why = NULL, updated_at = ?"
                     " WHERE connection = ? AND paused_until IS NOT NULL", (now, connection))
    await alert_store.clear(tx, (ALERT, "auth"), connection, why, now)


async def get(db: Database, endpoint: str) -> SignIn | None:
    row = await db.fetchone("SELECT * FROM signins WHERE endpoint = ?", (endpoint,))
    return None if row is None else _signin(row)


async def all_signins(db: Database) -> list[SignIn]:
    return [_signin(r) for r in await db.fetchall("SELECT * FROM signins ORDER BY endpoint")]


async def due(db: Database, before: float) -> list[SignIn]:
    """Renewable sign-ins, not ended, whose token expires before ``before``."""
    rows = await db.fetchall("SELECT * FROM signins WHERE renewable = 1 AND ended_at IS NULL AND expires_at IS NOT NULL"
                             " AND expires_at < ? ORDER BY expires_at", (before,))
    return [_signin(r) for r in rows]


async def renewed(db: Database, endpoint: str, expires_at: float | None, now: float, connection: str) -> None:
    """A renewal that worked: the new expiry; a pause the expired token earned ends."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE signins SET expires_at = ?, renewed_at = ? WHERE endpoint = ?",
                         (expires_at, now, endpoint))
        await _resume(tx, connection, now, "its sign-in was renewed")


async def ended(db: Database, signin: SignIn, connection: str, why: str, message: str, detail: dict[str, Any],
                now: float) -> int:
    """A renewal the provider refused: the sign-in ends, its connection is paused until a new one
    (so its calls are refused here, never sent with a dead token), and one ``signin`` alert says
    so; all in one transaction. Returns the alert's id."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE signins SET ended_at = ?, ended_why = ? WHERE endpoint = ?",
                         (now, why[:500], signin.endpoint))
        await limit_store.pause(tx, connection, now + SIGNED_OUT_PAUSE, f"its sign-in ended ({why[:200]})")
        return await alert_store.put(tx, ALERT, connection, message, detail, now)


async def signed_out(db: Database, signin: SignIn, connection: str, now: float, *, pause: bool) -> None:
    """Sign-out: the row goes, its alert is over, and (``pause``: it had tokens) the connection
    rests until a new sign-in, so nothing is sent without a token in the meantime."""
    async with db.transaction() as tx:
        await tx.execute("DELETE FROM signins WHERE endpoint = ?", (signin.endpoint,))
        await alert_store.clear(tx, ALERT, connection, "signed out", now)
        if pause:
            await limit_store.pause(tx, connection, now + SIGNED_OUT_PAUSE,
                                    f"it was signed out (sign in again: bench endpoint connect {signin.preset})")
        await log_change(tx, "endpoint.signout", signin.endpoint, {"preset": signin.preset})


# ---- client ids (public: kept so a user gives one once) --------------------------------------------

CLIENT_PREFIX = "connect.client_id."


async def client_ids(db: Database) -> dict[str, str]:
    rows = await db.fetchall("SELECT name, value FROM settings WHERE name LIKE ?", (CLIENT_PREFIX + "%",))
    return {str(r["name"])[len(CLIENT_PREFIX):]: str(r["value"]) for r in rows
            if str(r["name"]).startswith(CLIENT_PREFIX)}  # LIKE reads '_' as any character


async def set_client_id(db: Database, preset: str, client_id: str) -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE"
                         " SET value = excluded.value", (CLIENT_PREFIX + preset, client_id))
        await log_change(tx, "connect.client_id", preset, {"client_id": client_id})


__all__ = ["ALERT", "FLOW_STATUSES", "Flow", "SignIn", "all_signins", "client_ids", "digest", "due", "ended",
           "finish_flow", "flow", "flow_by_state", "forget_flows", "get", "recent_flows", "renewed", "save",
           "set_client_id", "signed_out", "start_flow"]
