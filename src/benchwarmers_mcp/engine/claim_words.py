"""The words two claims are compared by (``engine/claims.py``): lower case, lightly stemmed and cut
to a prefix, stop words out (English, German, French, Spanish), an identifier kept whole and in
its parts (``findById``: findbyid, find, id), a file's extension never a word of its own."""

from __future__ import annotations

import re
from itertools import chain

from benchwarmers_mcp.engine import code_refs

_STOP = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
either else even ever every few for from further had hadn't has hasn't have haven't having he her here hers
herself him himself his how however i i'd i'll i'm i've if in into is isn't it it's its itself just let let's
like may me might more most much must my myself need no nor not now of off on once one only or other ought our
ours ourselves out over own per please quite rather really same shall she should shouldn't so some still such
than that that's the their theirs them themselves then there there's these they they're this those though
through thus to too under until up upon us use used using very via was wasn't we we're were weren't what
what's when where which while who whom whose why will with within without won't would wouldn't yet you you're
your yours yourself also instead otherwise already always never here's line lines file code see e.g i.e etc
der die das den dem des ein eine einer eines ist sind und oder nicht auch mit für von zu bei auf so sich als
wie wird werden kann le la les un une des du de et est sont en dans pour sur pas que qui au aux ne ce il elle
plus avec à ou se sa son ses leur el los las del por para con una es y lo al
""".split())
_TOKEN = re.compile(r"[\w$]+(?:['’.][\w$]+)*")
_CAMEL_INSIDE = re.compile(r"[a-z][A-Z]")
_CAMEL_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_DOTS = re.compile(r"[._]+")

_PREFIX = 6  # letters a stemmed word is cut to: predictable and predict meet, so do iterate and iteration


def _stem(word: str) -> str:
    """A light stemmer: enough that close, closes, closed and closing meet."""
    n = len(word)
    if n <= 3 or not word.isalpha():
        return word
    if word[-1] == "s":
        if n > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif word[-2] not in "sui":
            word = word[:-1]
        n = len(word)
    last = word[-1]
    if last == "g" and n >= 6 and word.endswith("ing") or last == "d" and n >= 5 and word[-2] == "e":
        word = word[:-3] if last == "g" else word[:-2]
        if word[-1] == word[-2] and word[-1] not in "lsz":
            word = word[:-1]
    elif last == "y" and (n >= 8 and word.endswith("ingly") or n >= 7 and word.endswith("edly")):
        word = word[:-5] if word.endswith("ingly") else word[:-4]
    elif last == "y" and n > 5 and word[-2] == "l":
        word = word[:-2]
    elif last == "n" and n >= 7 and word[-3:] == "ion" and word[-4] in "ts":
        word = word[:-3]
    if word[-1] == "e" and len(word) > 3:
        word = word[:-1]
    if word[-1] == "y" and len(word) > 3:
        word = word[:-1] + "i"
    return word


def _word(word: str) -> tuple[str, ...]:
    """One word's normalised tokens: lower case, stemmed and cut to ``_PREFIX`` letters, stop words out;
    an identifier is kept whole and in parts (``findById`` -> findbyid, find, id)."""
    if word.isalpha():
        if word.islower():  # most words: plain and lower case
            return () if word in _STOP or len(word) < 2 else (_stem(word)[:_PREFIX],)
        if len(word) == 1 or word[1:].islower():  # capitalised: no camel case inside, one part
            lower = word.lower()
            return () if lower in _STOP or len(lower) < 2 else (_stem(lower)[:_PREFIX],)
    word = word.replace("’", "'")
    lower = word.lower()
    if lower in _STOP:
        return ()
    if word.isdigit():
        return (word.lstrip("0") or "0",)
    out = []
    compound = "." in word or "_" in word.strip("_") or bool(_CAMEL_INSIDE.search(word))
    if compound:
        out.append(lower.strip("_"))
        parts = [p.lower() for piece in _DOTS.split(word) for p in _CAMEL_PARTS.findall(piece)]
        parts = [p for p in parts if p not in code_refs.EXTENSIONS]
    elif "'" in word:
        parts = [p for p in lower.split("'") if len(p) > 2]
    else:
        parts = [lower]
    out += [_stem(p)[:_PREFIX] for p in parts if p not in _STOP and (len(p) > 1 or p.isdigit())]
    return tuple(out)


class Words:
    """Texts to token sets, each distinct word normalised once per panel."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[str, ...]] = {}

    def __call__(self, text: str) -> frozenset[str]:
        words = set(_TOKEN.findall(text))
        seen = self.seen
        for word in words.difference(seen):
            seen[word] = _word(word)
        return frozenset(chain.from_iterable(map(seen.__getitem__, words)))


def tokens(text: str) -> frozenset[str]:
    """One text's words as a set, on its own (a panel's texts share one ``Words``)."""
    return Words()(text)


__all__ = ["Words", "tokens"]
