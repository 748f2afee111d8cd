"""The naming rule: what a user may call a collection, an endpoint, a gateway key or a key in the key
store, said once and in words, so every refusal (the admin API, the CLI, the store itself) reads the
same and says what to do.

Names (collections, endpoints, gateway keys, key names): lower-case letters, digits and dashes,
starting with a letter or digit, 2 to 32 characters (the wire contract's collection and key rule).
Aliases come from served names (``vendor/gpt-4.1-mini`` becomes ``gpt-4.1-mini``), so they also
take dots and underscores, up to 64 characters. Tags are short names, up to 24 characters.

Whatever a caller names to look something up (a collection, an alias, an endpoint, a call id) holds
no control character (``no_control``): a 400, before any store is asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchwarmers_mcp.errors import BadRequest


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    words: str
    others: str  # the characters besides letters and digits, for a suggestion
    longest: int
    example: str


NAME = Rule(re.compile(r"[a-z0-9][a-z0-9-]{1,31}"), "lower-case letters, digits and dashes, starting with a "
            "letter or digit, 2 to 32 characters", "-", 32, "code-review")
ALIAS = Rule(re.compile(r"[a-z0-9][a-z0-9._-]{0,63}"), "lower-case letters, digits, dashes, dots and "
             "underscores, starting with a letter or digit, at most 64 characters", "._-", 64, "gpt-4.1-mini")
TAG = Rule(re.compile(r"[a-z0-9][a-z0-9-]{0,23}"), "lower-case letters, digits and dashes, starting with a "
           "letter or digit, at most 24 characters", "-", 24, "python")


def fits(value: object, rule: Rule = NAME) -> bool:
    return isinstance(value, str) and rule.pattern.fullmatch(value) is not None


def suggestion(value: str, rule: Rule = NAME) -> str | None:
    """A name close to ``value`` that fits the rule (``My Model!`` -> ``my-model``), or None."""
    near = re.sub(f"[^a-z0-9{re.escape(rule.others)}]+", "-", value.strip().lower())
    near = re.sub(r"-{2,}", "-", near).strip(rule.others)[:rule.longest].rstrip(rule.others)
    return near if fits(near, rule) and near != value else None


def problem(what: str, value: object, rule: Rule = NAME) -> str | None:
    """Why ``value`` cannot be a ``what`` (a ``collection name``, an ``alias`` ...), in words; None if it can."""
    if fits(value, rule):
        return None
    article = "an" if what[:1] in "aeiou" else "a"
    if not isinstance(value, str):
        return f"{article} {what} is text: {rule.words} (for example {rule.example})"
    shown = repr(value) if len(value) <= 64 else repr(value[:64]) + "..."
    near = suggestion(value, rule)
    hint = f"; try {near!r}" if near else f" (for example {rule.example})"
    return f"{shown} cannot be {article} {what}: use {rule.words}{hint}"


# Control characters (C0, DEL, C1): free text (a prompt, a note, a model's answer) may hold them and
# is stored exactly; a name, an alias or an id that a caller sends never does.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def control_problem(what: str, value: str) -> str | None:
    """Why ``value`` cannot be a ``what`` for the control character it holds, or None."""
    found = _CONTROL.search(value)
    if found is None:
        return None
    return f"{what} {value[:64]!r} holds a control character (U+{ord(found.group()):04X}): names and ids never do"


def no_control(what: str, value: str) -> str:
    """``value`` when it holds no control character; else a 400 saying so (an identifier a caller
    names: a collection, an endpoint, an alias, a call id)."""
    found = control_problem(what, value)
    if found:
        raise BadRequest(found)
    return value


def check(what: str, value: object, rule: Rule = NAME) -> str:
    """``value`` when it fits the rule; else a 400 saying the rule in words."""
    found = problem(what, value, rule)
    if found:
        raise BadRequest(found)
    assert isinstance(value, str)
    return value


__all__ = ["ALIAS", "NAME", "TAG", "Rule", "check", "control_problem", "fits", "no_control", "problem", "suggestion"]
