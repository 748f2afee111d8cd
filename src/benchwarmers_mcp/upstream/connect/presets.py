"""The connect table: every provider you can sign in to, one ``Preset`` each.

Adding a provider is one entry in ``PRESETS``:

1. ``id`` (the endpoint name it is saved as, and what ``bench endpoint connect <id>`` takes),
   ``name``, ``base_url`` and ``api`` (how its models are called: ``chat``, ``responses`` or
   ``ollama``), ``kind`` (``provider``, ``aggregator`` or ``local``).
2. ``flows``, first the one offered by default: ``key`` (PKCE; the exchange hands back an ordinary
   API key), ``oauth`` (authorization code with PKCE S256: access and refresh tokens), ``device``
   (RFC 8628: a code typed on any device) or ``local`` (a runtime on this machine, found by asking
   it). Give each flow what it needs: ``authorize_url`` and ``token_url`` for ``key`` and
   ``oauth``, ``device_url`` and ``token_url`` for ``device``, ``revoke_url`` when the provider can
   revoke (sign-out calls it), ``scope``, ``authorize_params`` the provider wants beyond the
   standard ones, and ``client_id`` when the provider publishes one for apps like this (else the
   user registers an app and gives its id once: ``needs_client_id``).
3. ``free_tier``: what its free tier is known to limit, and ``docs``: where that and the URLs
   come from. ``unverified``: the facts here that were not checked against the provider (they
   come from the reference system's table, ``docs/PROVIDERS.md`` says which), so a user knows
   what to set if the provider differs.

Every URL and the client id can be replaced without a code change by an environment variable
``BENCH_CONNECT_<ID>_<FIELD>`` (``BENCH_CONNECT_HUGGINGFACE_CLIENT_ID``,
``BENCH_CONNECT_GITHUB_DEVICE_URL``...; ``Settings.connect_env`` carries them): how a user points a
preset at a provider's new address, and how the tests point every preset at fakes on loopback.
Nothing here touches the network.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from benchwarmers_mcp.errors import BadRequest, NotFound

FLOWS = ("key", "oauth", "device", "local")
BROWSER_FLOWS = ("key", "oauth")  # the ones that end on this server's callback route
ENV_PREFIX = "BENCH_CONNECT_"
# the fields an environment variable may replace (the rest are the preset's nature, not an address)
SETTABLE = ("base_url", "authorize_url", "token_url", "device_url", "revoke_url", "models_url", "client_id",
            "scope")


@dataclass(frozen=True)
class Preset:
    id: str
    name: str
    base_url: str
    api: str
    kind: str
    flows: tuple[str, ...]
    free_tier: str
    docs: str
    authorize_url: str = ""
    token_url: str = ""
    device_url: str = ""
    revoke_url: str = ""
    models_url: str = ""  # a model listing other than ``<base_url>/models`` ('' : the API's own)
    client_id: str = ""
    scope: str = ""
    authorize_params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)  # sent on every call (never a secret)
    device_json: bool = False  # the device endpoint takes a JSON body (RFC 8628 says a form)
    client_from_callback: bool = False  # the provider issues the client id on the first sign-in's callback
    unverified: tuple[str, ...] = ()

    @property
    def needs_client_id(self) -> bool:
        """An oauth or device flow needs a client id the user must give (none is published)."""
        return not self.client_id and any(f in ("oauth", "device") for f in self.flows)

    def flow(self, asked: str | None) -> str:
        """The flow to run: the one asked for, or the preset's first; a clear 400 otherwise."""
        chosen = asked or self.flows[0]
        if chosen not in self.flows:
            raise BadRequest(f"{self.name} signs in with {' or '.join(self.flows)}, not {chosen!r}")
        return chosen

    def describe(self) -> dict[str, object]:
        """The preset as the admin API shows it (every field is public)."""
        out: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update(flows=list(self.flows), unverified=list(self.unverified), needs_client_id=self.needs_client_id,
                   authorize_params=dict(self.authorize_params), headers=dict(self.headers))
        return out


APP_HEADERS = {"HTTP-Referer": "https://github.com/WendellResearch-AI/benchwarmers", "X-Title": "Benchwarmers"}

PRESETS: dict[str, Preset] = {p.id: p for p in (
    Preset(
        "openrouter", "OpenRouter", "https://openrouter.ai/api/v1", "chat", "aggregator", ("key",),
        free_tier="models ending ':free': about 20 requests a minute, and 50 a day (1,000 a day once the "
                  "account has bought $10 of credits)",
        docs="openrouter.ai/docs/use-cases/oauth-pkce; openrouter.ai/docs/api-reference/limits",
        authorize_url="https://openrouter.ai/auth", token_url="https://openrouter.ai/api/v1/auth/keys",
        headers=APP_HEADERS,  # some free models answer only apps that name themselves
    ),
    Preset(
        "nanogpt", "NanoGPT", "https://api.nano-gpt.com/api/v1", "chat", "aggregator", ("key",),
        free_tier="not known here: see the provider's pricing page",
        docs="docs.nano-gpt.com (oauth-pkce)",
        authorize_url="https://nano-gpt.com/auth", token_url="https://nano-gpt.com/api/v1/auth/keys",
        scope="api.use models.read",
        unverified=("base_url", "authorize_url", "token_url", "the key exchange's field names (OpenRouter's)"),
    ),
    Preset(
        "huggingface", "Hugging Face", "https://router.huggingface.co/v1", "chat", "aggregator",
        ("oauth", "device"),
        free_tier="a small monthly allowance of inference credits on a free account (Inference Providers)",
        docs="huggingface.co/docs/hub/oauth; huggingface.co/docs/inference-providers/pricing",
        authorize_url="https://huggingface.co/oauth/authorize", token_url="https://huggingface.co/oauth/token",
        device_url="https://huggingface.co/oauth/device", scope="openid inference-api",
        unverified=("device_url",),
    ),
    Preset(
        "pollinations", "Pollinations", "https://gen.pollinations.ai/v1", "chat", "aggregator", ("oauth", "device"),
        free_tier="not known here: its tiers are measured in pollen; see its BRING_YOUR_OWN_POLLEN notes",
        docs="the pollinations repository (BRING_YOUR_OWN_POLLEN)",
        authorize_url="https://enter.pollinations.ai/authorize", token_url="https://enter.pollinations.ai/api/oauth/token",
        device_url="https://enter.pollinations.ai/api/device/code", device_json=True,
        unverified=("base_url", "authorize_url", "token_url", "device_url"),
    ),
    Preset(
        "chatgpt", "ChatGPT plan", "https://api.openai.com/v1", "responses", "provider", ("oauth",),
        free_tier="the plan's own usage limits (messages per window, set by the plan), not API pricing",
        docs="developers.openai.com (Sign in with ChatGPT, token sharing for open-source apps)",
        authorize_url="https://auth.openai.com/api/accounts/authorize",
        token_url="https://auth.openai.com/api/accounts/oauth/token",
        client_id="dynamic_agent_client", client_from_callback=True,
        scope="openid profile email offline_access resource.invoke chatgpt.tokens.use.direct",
        authorize_params={"resource": "https://api.openai.com/v1"},
        unverified=("authorize_url", "token_url", "client_id", "client_from_callback", "scope"),
    ),
    Preset(
        "github", "GitHub Models", "https://models.github.ai/inference", "chat", "provider", ("device",),
        free_tier="per-model rate tiers (for a free account about 10-15 requests a minute and 50-150 a "
                  "day) and a cap on tokens per request",
        docs="docs.github.com (GitHub Models rate limits; device flow for GitHub Apps)",
        device_url="https://github.com/login/device/code", token_url="https://github.com/login/oauth/access_token",
        models_url="https://models.github.ai/catalog/models",
    ),
    Preset(
        "ollama", "Ollama on this machine", "http://127.0.0.1:11434", "ollama", "local", ("local",),
        free_tier="your own machine: no limits but its memory; its cloud models need `ollama signin` once",
        docs="github.com/ollama/ollama/blob/main/docs/api.md (/api/tags)",
    ),
)}


def env_names(preset_id: str) -> dict[str, str]:
    """The environment variable that replaces each settable field of a preset."""
    return {name: f"{ENV_PREFIX}{preset_id.upper()}_{name.upper()}" for name in SETTABLE}


def presets(env: Mapping[str, str] | None = None) -> dict[str, Preset]:
    """Every preset with the environment's replacements applied (``BENCH_CONNECT_<ID>_<FIELD>``)."""
    if not env:
        return dict(PRESETS)
    out = {}
    for pid, preset in PRESETS.items():
        changed: dict[str, Any] = {name: env[var].strip() for name, var in env_names(pid).items()
                                   if (env.get(var) or "").strip()}
        out[pid] = replace(preset, **changed) if changed else preset
    return out


def find(preset_id: str, env: Mapping[str, str] | None = None) -> Preset:
    table = presets(env)
    found = table.get(preset_id.strip().lower())
    if found is None:
        raise NotFound(f"no sign-in preset {preset_id!r}; presets: {', '.join(table)} "
                       "(any other OpenAI-compatible API: paste its key with bench endpoint add)")
    return found


__all__ = ["BROWSER_FLOWS", "FLOWS", "PRESETS", "Preset", "env_names", "find", "presets"]
