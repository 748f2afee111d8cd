"""The single keys that judge a panel, in the dashboard's "To judge" page and ``bench judge``: one
table, read by both (the page renders it and its script takes the keys from what it rendered).

A whole five-seat panel is judged in six presses: Useful or Not useful on each seat (each moves on
to the next seat still owed), then the next panel.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JudgeKey:
    key: str  # the key pressed (a browser's ``KeyboardEvent.key``, a terminal's character)
    action: str  # what it does (the page's and the terminal's name for it)
    label: str  # what the page and the terminal show beside it


KEYS: tuple[JudgeKey, ...] = (
    JudgeKey("j", "next", "next seat"),
    JudgeKey("k", "previous", "previous seat"),
    JudgeKey("u", "useful", "Useful"),
    JudgeKey("n", "not_useful", "Not useful"),
    JudgeKey("c", "open", "open the note and claims"),
    JudgeKey("p", "next_panel", "next panel"),
)
ACTIONS = frozenset(k.action for k in KEYS)

if len({k.key for k in KEYS}) != len(KEYS) or len(ACTIONS) != len(KEYS):
    raise RuntimeError("one key per action, one action per key")


def key_for(action: str) -> str:
    return next(k.key for k in KEYS if k.action == action)


__all__ = ["ACTIONS", "KEYS", "JudgeKey", "key_for"]
