"""The inbox's keys: ONE table for every place that judges from the keyboard (``bench judge`` in a
terminal, the dashboard's "To judge" page), so a key means the same thing wherever it is pressed.

    j  next seat            k  previous seat
    u  useful               x  not useful        (then on to the next seat still owed)
    c  note and claims      n  next panel
    q  quit                 ?  these keys

A five-seat panel is judged in five presses (each verdict moves on to the next seat owed; after
the panel's last one, to the next panel), six with an ``n``. Errored seats are listed apart and
take no key: they cannot be judged useful.

Plain data, like ``routes.py``: this module imports nothing of the package, so the CLI (a thin
HTTP client) and the dashboard's page read it without loading the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["next_seat", "previous_seat", "useful", "not_useful", "note", "next_panel", "quit", "help"]


@dataclass(frozen=True)
class Key:
    key: str  # one character, as typed (case matters: ``KeyboardEvent.key`` in a page)
    action: Action
    label: str  # what the key does, in a word or two (shown beside it)


KEYS: tuple[Key, ...] = (
    Key("j", "next_seat", "next seat"),
    Key("k", "previous_seat", "previous seat"),
    Key("u", "useful", "useful"),
    Key("x", "not_useful", "not useful"),
    Key("c", "note", "note and claims"),
    Key("n", "next_panel", "next panel"),
    Key("q", "quit", "quit"),
    Key("?", "help", "keys"),
)

BY_KEY: dict[str, Action] = {k.key: k.action for k in KEYS}
BY_ACTION: dict[Action, str] = {k.action: k.key for k in KEYS}


def action_of(key: str) -> Action | None:
    """The action a typed key stands for, or None for any other key."""
    return BY_KEY.get(key)


def legend(separator: str = "  ") -> str:
    """Every key with its label on one line: ``j next seat  k previous seat  ...``."""
    return separator.join(f"{k.key} {k.label}" for k in KEYS)


def as_dict() -> list[dict[str, str]]:
    """The table as data (for a page's script)."""
    return [{"key": k.key, "action": k.action, "label": k.label} for k in KEYS]


__all__ = ["BY_ACTION", "BY_KEY", "KEYS", "Action", "Key", "action_of", "as_dict", "legend"]
