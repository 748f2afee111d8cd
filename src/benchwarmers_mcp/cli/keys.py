"""Single keys from stdin, for ``bench judge``: on a terminal each key counts the moment it is typed
(no Enter: the terminal in cbreak mode for the session, its settings put back after); otherwise a
line at a time, its first character the key, so a script or a test drives the inbox through a pipe
(``printf 'u\\nx\\nq\\n' | bench judge``). A note or a list of claim marks is always a whole line
(the terminal's usual editing back for it). End of input is None: the inbox then stops as on ``q``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import anyio

try:  # POSIX only: elsewhere a terminal is read a line at a time too
    import termios
    import tty
except ImportError:  # pragma: no cover (Windows)
    termios = None  # type: ignore[assignment]
    tty = None  # type: ignore[assignment]

ESC = "\x1b"


class KeyReader:
    """``keys()`` as a context for the session; ``await key()`` one key (None at the end of
    input); ``await line(prompt)`` a whole line (None at the end)."""

    def __init__(self, stream: TextIO | None = None, prompts: TextIO | None = None) -> None:
        self.stream = stream or sys.stdin
        self.prompts = prompts or sys.stderr
        self.interactive = self._isatty()  # a person types here: prompts are shown (never to a pipe)
        self.raw = termios is not None and self.interactive
        self._saved: list[Any] | None = None
        self._ahead = ""  # keys typed faster than they were read (one read, several keys)

    def _isatty(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    @contextmanager
    def session(self) -> Iterator[KeyReader]:
        """The terminal in cbreak mode (keys without Enter, Ctrl-C still an interrupt) while the
        block runs; its settings restored however it ends."""
        if not self.raw:
            yield self
            return
        fd = self.stream.fileno()
        self._saved = termios.tcgetattr(fd)
        try:
            tty.setcbreak(fd, termios.TCSADRAIN)  # keys typed ahead are kept (TCSAFLUSH drops them)
            yield self
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def _prompt(self, text: str) -> None:
        if text and self.interactive:
            self.prompts.write(text)
            self.prompts.flush()

    async def key(self, prompt: str = "") -> str | None:
        """The next key: one typed character on a terminal (a key that sends a sequence, such as an
        arrow, is read whole and given as ``ESC``), the first character of the next non-blank line
        otherwise."""
        self._prompt(prompt)
        if self.raw:
            if not self._ahead:
                data = await anyio.to_thread.run_sync(os.read, self.stream.fileno(), 16)
                if not data:
                    return None
                self._ahead = data.decode("utf-8", "replace")
            if prompt:
                self._prompt("\n")
            if self._ahead.startswith(ESC):  # an arrow or a function key: no key of the inbox's
                self._ahead = ""
                return ESC
            typed, self._ahead = self._ahead[0], self._ahead[1:]
            return typed
        while True:
            raw: str = await anyio.to_thread.run_sync(self.stream.readline)
            if not raw:
                return None
            if raw.strip():
                return raw.strip()[0]

    async def line(self, prompt: str) -> str | None:
        """A whole line, without its line ending (on a terminal: echoed and editable as usual)."""
        self._prompt(prompt)
        if not self.raw or self._saved is None:
            raw = await anyio.to_thread.run_sync(self.stream.readline)
            return None if not raw else raw.rstrip("\r\n")
        fd, typed, self._ahead = self.stream.fileno(), self._ahead, ""  # typed ahead: the line's start
        termios.tcsetattr(fd, termios.TCSADRAIN, self._saved)  # cooked, for the line
        try:
            raw = await anyio.to_thread.run_sync(self.stream.readline)
        finally:
            tty.setcbreak(fd, termios.TCSADRAIN)  # keys typed ahead are kept (TCSAFLUSH drops them)
        return None if not (typed or raw) else (typed + raw).rstrip("\r\n")


__all__ = ["ESC", "KeyReader"]
