"""The terminal: confirmations, hidden key prompts, piped stdin, and the progress line.

Answers go to stdout, everything else (tables of call ids, notes, prompts, progress) to stderr,
so ``bench ask core "..." > review.md`` keeps only the answers. A prompt or a spinner appears
only where a person can see it: confirmations need stdin to be a terminal, the progress line
needs stderr to be one.
"""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from typing import Any, TextIO

import anyio

from benchwarmers_mcp.cli.remote import CliError, UsageError, dumps

SPINNER = "|/-\\"


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def server_note(reply: dict[str, Any]) -> None:
    """The note a server reply carries (a warning it wants a person to read), when it has one."""
    if reply.get("note"):
        note(f"note: {reply['note']}")


def show_json(args: argparse.Namespace, reply: Any) -> bool:
    """With ``--json``, the server's reply as it came, and the command has nothing more to print."""
    if args.json:
        print(dumps(reply))
    return bool(args.json)


def stdin_is_terminal() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


async def confirm(question: str, yes: bool) -> None:
    """Ask y/N on a terminal; ``--yes`` answers for a script; otherwise refuse (exit 2)."""
    if yes:
        return
    if not stdin_is_terminal():
        raise UsageError(f"{question} Refusing without a confirmation: stdin is not a terminal; "
                         "pass --yes to answer for a script")
    answer = await anyio.to_thread.run_sync(_ask_line, f"{question} [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise CliError("cancelled; nothing changed")


def _ask_line(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return sys.stdin.readline()


async def read_key(endpoint: str, *, from_stdin: bool, skip: bool) -> str | None:
    """An API key from stdin (``--key-stdin``) or a hidden prompt; never from an argument."""
    if from_stdin:
        text: str = (await anyio.to_thread.run_sync(sys.stdin.read)).strip()
        if not text:
            raise UsageError("--key-stdin: stdin was empty; pipe the key in, e.g. "
                             f"`pass show {endpoint} | bench endpoint add {endpoint} ... --key-stdin`")
        if "\n" in text:
            raise UsageError("--key-stdin: stdin has more than one line; send the key alone")
        return text
    if skip:
        return None
    if not stdin_is_terminal():
        note(f"no key for {endpoint}: stdin is not a terminal, so nothing was asked; send one with "
             f"`bench endpoint key {endpoint} --key-stdin` (or --no-key when the endpoint needs none)")
        return None
    key = await anyio.to_thread.run_sync(getpass.getpass, f"API key for {endpoint} (hidden; Enter for none): ")
    return key.strip() or None


async def read_piped_stdin() -> str | None:
    """Piped stdin as text, or None when stdin is a terminal (nothing was piped)."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return await anyio.to_thread.run_sync(sys.stdin.read)


class Progress:
    """A one-line spinner on stderr while a panel runs; silent unless stderr is a terminal."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.done = 0
        self.started = time.monotonic()
        self._shown = False

    def seats_done(self, done: int) -> None:
        """The server's count of the panel's seats that are done (it only ever grows)."""
        self.done = max(self.done, done)

    def clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False

    def draw(self, tick: int) -> None:
        seconds = time.monotonic() - self.started
        answered = f"{self.done} seat{'s' if self.done != 1 else ''} answered"
        self.stream.write(f"\r\x1b[K{SPINNER[tick % len(SPINNER)]} {self.label} · {answered} · {seconds:.0f}s")
        self.stream.flush()
        self._shown = True

    async def run(self) -> None:
        if not self.enabled:
            return
        tick = 0
        try:
            while True:
                self.draw(tick)
                tick += 1
                await anyio.sleep(0.15)
        finally:
            self.clear()
