"""Signing in with a provider: the presets table (``presets.py``: one entry per provider), the
protocols on the wire (``oauth.py``: PKCE, the code and key exchanges, refresh, revocation, the
device grant, written by Authlib and sent through the app's one outbound client), the flows start
to finish (``flows.py``), a runtime on this machine (``local.py``) and token renewal, once across
processes and replicas (``renewal.py``). Tokens are keys: they live in the key store
(``upstream/keys.py``), never in the store, a log, a reply or an argument list."""
