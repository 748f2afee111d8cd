"""The upstream side: one model call (``caller``), pacing and what failures teach (``pacing``),
what providers say about their limits (``quota``), upstream API keys and sign-in tokens
(``keys``), an endpoint's own model listing (``listing``), signing in with a provider
(``connect/``) and the adapters of hubs that front other upstreams (``hubs/``)."""
