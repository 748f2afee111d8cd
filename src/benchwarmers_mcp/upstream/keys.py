"""API keys for endpoints. Never in the data folder, never logged, never an argument.

Lookup order for a key named ``openrouter``: ``BENCHWARMERS_KEY_OPENROUTER`` in the environment
(upper case, '-' written '_'), else the keys file ``<config folder>/keys.json`` (mode 0600).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path


def env_name(name: str) -> str:
    return name.upper().replace("-", "_")


class KeyStore:
    def __init__(self, config_dir: Path, env_keys: Mapping[str, str]) -> None:
        self.path = Path(config_dir) / "keys.json"
        self._env = {k.upper(): v for k, v in env_keys.items()}
        self._cache: tuple[tuple[int, int, int] | None, dict[str, str]] = (None, {})

    def _read(self) -> dict[str, str]:
        """The keys file, read again only when it changed (this or another process wrote it)."""
        try:
            st = self.path.stat()
        except OSError:
            return {}
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if self._cache[0] == stamp:
            return self._cache[1]
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        keys = {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
        self._cache = (stamp, keys)
        return keys

    def get(self, name: str | None) -> str | None:
        if not name:
            return None
        return self._env.get(env_name(name)) or self._read().get(name)

    def values(self) -> list[str]:
        """Every key known (the environment's and the keys file's): what logs are masked with."""
        return [v for v in (*self._env.values(), *self._read().values()) if v]

    def has(self, name: str | None) -> bool:
        return self.get(name) is not None

    def source(self, name: str) -> str | None:
        """Where a key comes from ('environment' or 'keys file'), never its value."""
        if env_name(name) in self._env:
            return "environment"
        return "keys file" if name in self._read() else None

    def set(self, name: str, value: str) -> None:
        data = dict(self._read())
        data[name] = value
        self.set_all(data)

    def delete(self, name: str) -> None:
        data = dict(self._read())
        if data.pop(name, None) is not None:
            self.set_all(data)

    def set_all(self, data: dict[str, str]) -> None:
        """Write the keys file, created with mode 0600 and replaced atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)
