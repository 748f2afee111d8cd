"""Shadow seats: in route mode, another member answers the same turn in the background, for
evaluation (opt-in per collection: ``bench settings learning --shadow core:on``; off by default).

The shadow starts once the turn's member has committed, with the next eligible member that is
not resting. Its answer never reaches the agent: it goes to the store only (``shadow_calls``),
under a call id of its own (``<conversation>.s<turn>``), unjudged, for a later verdict, which
then counts toward that member's rating on the collection's route calls. It is one upstream call
through the model caller like any other, so it is paced (rate limits, quotas, rests) and counted
in the ledger (purpose ``shadow``). A shadow that fails is recorded as failed; it never touches
the turn.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from benchwarmers_mcp.context import CallInfo, Context
from benchwarmers_mcp.errors import BenchError, ProviderError, UpstreamTimeout
from benchwarmers_mcp.messages import Ask, ModelRequest
from benchwarmers_mcp.providers.convert import CHAT_NAMES, ToolNames
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.ratings import ShadowRecord

log = logging.getLogger("benchwarmers.shadow")


def shadow_call(conversation: str, turn: int) -> str:
    return f"{conversation}.s{turn}"


async def enabled(ctx: Context, collection: Collection) -> bool:
    return collection.name in (await rating_store.learning_settings(ctx.db)).shadow


@dataclass
class Shadow:
    """What a turn's shadow needs: the turn, who may shadow it, and how its request is built."""

    ask: Ask
    collection: Collection
    conversation: str
    turn: int
    pool: list[ModelRecord]  # the turn's eligible members, best first
    build: Callable[[ModelRecord], ModelRequest]
    timeout: float
    started: bool = False

    def start(self, ctx: Context, member: ModelRecord) -> None:
        """Once per turn, after ``member`` committed: the shadow runs in the app's task group."""
        if self.started:
            return
        self.started = True
        ctx.spawn(self._run, ctx, member, name=f"shadow of {self.conversation}.{self.turn}")

    async def _run(self, ctx: Context, member: ModelRecord) -> None:
        resting = await ctx.resting()
        model = next((m for m in self.pool if m.alias != member.alias and m.alias not in resting), None)
        if model is None:
            return
        with anyio.CancelScope(shield=True):
            try:
                await rating_store.record_shadow(ctx.db, await self._answer(ctx, model))
            except Exception:
                log.exception("shadow of %s.%s by %s failed", self.conversation, self.turn, model.alias)

    async def _answer(self, ctx: Context, model: ModelRecord) -> ShadowRecord:
        request = self.build(model)
        request = ToolNames.of(request, CHAT_NAMES).request(request)
        record = ShadowRecord(shadow_call(self.conversation, self.turn), self.conversation, self.turn, model.alias,
                              self.collection.qualified, "ok")
        began = time.monotonic()
        try:
            answer = await ctx.caller.complete(model, request, timeout=self.timeout,
                                               info=CallInfo("route", "shadow", self.ask.key_name))
            record.answer = answer.text.strip()
            record.tool_calls = [{"name": c.name, "arguments": c.arguments} for c in answer.tool_calls]
            if answer.usage:
                record.tokens_in, record.tokens_out = answer.usage.input_tokens, answer.usage.output_tokens
            if not (record.answer or record.tool_calls):
                record.status = "empty"
        except UpstreamTimeout as e:
            record.status, record.error = "timeout", e.message
        except (ProviderError, BenchError) as e:
            record.status, record.error = "error", e.message
        record.seconds = time.monotonic() - began
        return record
