"""The upstream side: one model call (``caller``), pacing and what failures teach (``pacing``),
what providers say about their limits (``quota``), upstream API keys (``keys``) and an
endpoint's own model listing (``listing``)."""
