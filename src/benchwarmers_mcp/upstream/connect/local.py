"""The ``local`` flow: a runtime on this machine, found by asking it. Ollama answers ``GET
/api/tags`` on its default port with the models it has pulled; nothing to sign in to."""

from __future__ import annotations

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest, ProviderError
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.upstream.connect.presets import Preset, env_names
from benchwarmers_mcp.upstream.listing import listing

ASK_TIMEOUT = 5.0


async def local_models(ctx: Context, preset: Preset) -> list[str]:
    """The models the runtime at the preset's address lists; a 400 saying how to start it, or where
    to point the preset, when nothing answers there."""
    probe = Endpoint(preset.id, preset.base_url, preset.api, preset.kind)
    try:
        return (await listing(ctx, probe, timeout=ASK_TIMEOUT)).names
    except ProviderError as e:
        raise BadRequest(f"no {preset.name.removesuffix(' on this machine')} answers at {preset.base_url} ({e.message}):"
                         f" start it (ollama serve), or set {env_names(preset.id)['base_url']} to where it"
                         " listens") from None


__all__ = ["ASK_TIMEOUT", "local_models"]
