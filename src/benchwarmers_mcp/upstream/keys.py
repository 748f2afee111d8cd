"""API keys and sign-in tokens for endpoints. Never in the data folder, never logged, never an argument.

Lookup order for a key named ``openrouter``: ``BENCHWARMERS_KEY_OPENROUTER`` in the environment
(upper case, '-' written '_'), else the keys file ``<config folder>/keys.json`` (mode 0600).

A sign-in (``upstream/connect``) keeps its tokens here as keys are kept: the access token under the
endpoint's key name (what its calls send, like a pasted key), the refresh token under
``<name>.refresh`` (``refresh_name``: a name no user key can take, since key names have no dot).
A write of several names at once (``update``: a renewed pair) is one replacement of the file, made
under an exclusive lock on ``keys.lock`` beside it, so two processes changing different keys
never lose one another's change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one writer is left to the replace being atomic
    fcntl = None  # type: ignore[assignment]

REFRESH_SUFFIX = ".refresh"


def env_name(name: str) -> str:
    return name.upper().replace("-", "_")


def refresh_name(key_name: str) -> str:
    """Where a sign-in's refresh token is kept, beside its access token."""
    return key_name + REFRESH_SUFFIX


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
        self.update({name: value})

    def delete(self, name: str) -> None:
        self.update({name: None})

    def update(self, changes: Mapping[str, str | None]) -> None:
        """Set (a value) or remove (None) several keys in one write, under the file's lock: the
        file is read again inside it, so another process's change made meanwhile is kept."""
        with self._locked():
            self._cache = (None, {})
            data = dict(self._read())
            before = dict(data)
            for name, value in changes.items():
                if value is None:
                    data.pop(name, None)
                else:
                    data[name] = value
            if data != before or not self.path.exists():
                self._write(data)

    def set_all(self, data: dict[str, str]) -> None:
        """Replace the whole keys file (under its lock)."""
        with self._locked():
            self._write(data)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if fcntl is None:  # pragma: no cover
            yield
            return
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing it lets the lock go

    def _write(self, data: dict[str, str]) -> None:
        """The keys file, created with mode 0600 and replaced atomically."""
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)
        self._cache = (None, {})
