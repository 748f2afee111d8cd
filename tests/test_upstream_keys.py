"""Issue 2: the key store: the environment wins over the keys file, which is private to its owner."""

from __future__ import annotations

import os
import stat

from benchwarmers_mcp.upstream.keys import KeyStore


def test_key_store_environment_wins_and_file_is_private(tmp_path):
    keys = KeyStore(tmp_path / "cfg", {"OPEN_ROUTER": "from-env"})
    keys.set("open-router", "from-file")
    keys.set("groq", "gsk-secret")
    assert keys.get("open-router") == "from-env"
    assert keys.get("groq") == "gsk-secret" and keys.source("groq") == "keys file"
    mode = stat.S_IMODE(os.stat(keys.path).st_mode)
    assert mode == 0o600
    keys.delete("groq")
    assert keys.get("groq") is None
