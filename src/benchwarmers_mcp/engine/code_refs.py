"""The code a piece of text points at: files, lines and symbols, found in one pass and kept as
normalised keys. Pure: standard library only. ``engine/claims.py`` reads each claim's references here.

    file:store/db.py     a path, lower-cased (``./`` off)
    line:db.py:42-45     a line or range, with its file's name when the text (or, failing that, the
                         heading or item it sits under) ties it to one: the file named right after it
                         (``line 42 of db.py``), else the last one named before it
    line:42              a line tied to no file
    symbol:cache.get     a function, method, identifier or config key (``self.``/``this.`` off): a
                         backticked identifier or the one a backticked snippet starts with, and in
                         prose ``name()``, ``a.b``, ``snake_case`` or ``camelCase``

Lines are read in English (``line 42``, ``lines 10-12``, ``L42``) and a few other languages
(``ligne``, ``Zeile``, ``línea``, ``riga``, ``linha``, ``строка``, ``第 3 行``).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass

_EXT = ("py|pyi|ipynb|js|jsx|mjs|cjs|ts|tsx|sql|ya?ml|toml|json|ini|cfg|conf|env|go|rs|java|kt|rb|php|cs"
        "|c|h|cc|cpp|hpp|sh|bash|zsh|ps1|md|rst|html?|css|scss|vue|svelte|swift|scala|lua|tf|proto|gradle|xml"
        "|lock|txt|j2|tpl")
EXTENSIONS = frozenset(_EXT.replace("?", "").replace("yaml", "yaml|yml").split("|"))  # file name endings
_PATH = re.compile(
    rf"(?<![\w/.@-])((?:[\w.-]+/)*(?:[\w-][\w.-]*\.(?:{_EXT})|Dockerfile|Makefile|Procfile|\.env))(?![\w(-])"
    r"(?:(?::|#L)(\d+)(?:\s?[-–]\s?L?(\d+))?)?", re.I)
# Each pattern below leads with a literal or a set of characters, so one pass over an answer skips ahead
# instead of trying a match at every character; the context a match needs is checked around each hit.
_PATH_HINT = re.compile(rf"\.(?:{_EXT})(?![\w(-])|Dockerfile|Makefile|Procfile", re.I)
_LINE = re.compile(
    r"[LlZzRrс](?:ines?|INES?|ignes?|[íi]neas?|inha|eilen?|ig(?:a|he)|трок\w*|(?<=L)(?=\d))\s*(\d+)"
    r"(?:\s*(?:-|–|—|to|bis|à|a|al)\s*(\d+))?(?![\w.]\w)")
_NEXT_TO = 8  # a file this close after a line names the line's file: "line 12 of `db.py`"
_LINE_CJK = re.compile(r"第\s*(\d+)\s*行|(\d+)\s*行目")
_SYMBOL_HINT = re.compile(r"[.(_A-Z](?:(?<=[a-z][A-Z])|(?<=_)|(?<=[\w$][.(])(?=[\w$)]))")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
_IDENT = r"[A-Za-z_$][\w$]*"
_RUN = re.compile(rf"{_IDENT}(?:\.{_IDENT})*")
_RUN_BACK = re.compile(r"(?:[\w$]|\.(?=[\w$]))*")  # read backwards from a hint: the run's characters before it
_WHOLE = re.compile(rf"^(?:self\.|this\.|cls\.)?({_IDENT}(?:\.{_IDENT})*)(?:\(.*\))?$")
_LEAD = re.compile(rf"^({_IDENT}(?:\.{_IDENT})*)\s*(?:[:=(]|\s\S)")
_NOT_SYMBOLS = frozenset(
    "none true false null nil undefined self this cls and or not in is if else elif for while return def class "
    "function const let var pass async await import from with as try except catch finally raise throw new "
    "select insert update delete drop create alter table index into values where join on set by order group "
    "limit exists default e.g i.e".split())


def _norm_symbol(name: str) -> str | None:
    name = name.lower()
    for prefix in ("self.", "this.", "cls."):
        name = name.removeprefix(prefix)
    parts = name.split(".")
    if all(len(p) <= 1 for p in parts) or name in _NOT_SYMBOLS or len(name) < 2:
        return None
    return name


def _norm_file(path: str) -> str:
    return path.lower().replace("\\", "/").removeprefix("./")


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class Found:
    """The references one piece of text makes by itself."""

    files: tuple[str, ...]  # normalised paths
    bound: tuple[tuple[str, int, int], ...]  # lines cited with their file: (base name, first, last)
    bare: tuple[tuple[int, int], ...]  # lines cited with no file of the text's own: (first, last)
    symbols: tuple[str, ...]


def _span_of(lo: str, hi: str | None) -> tuple[int, int]:
    first, last = int(lo), int(hi) if hi else int(lo)
    return (first, last) if first <= last <= first + 500 else (first, first)


def _in_word(c: str) -> bool:
    return c.isalnum() or c in "_$"


class Refs:
    """Every code reference in a text with its place, found in one pass of each pattern; ``found`` gives
    those inside a span. A path is a file (with its line when ``file.py:12`` says one); a line is
    ``line 42``, ``L42``, ``ligne 6``, ``Zeile 3``, ``第 3 行``; a symbol is a backticked identifier or
    the identifier a backticked snippet starts with, and in prose ``name()``, ``a.b``, ``snake_case``
    or ``camelCase``."""

    def __init__(self, text: str) -> None:
        self.paths: list[tuple[int, str, tuple[int, int] | None]] = []
        bare = list(text)  # the text with its paths blanked, the same length
        end = 0
        for hint in _PATH_HINT.finditer(text):
            start = hint.start()
            while start > end and (_in_word(text[start - 1]) or text[start - 1] in "./-"):
                start -= 1
            m = _PATH.match(text, start)
            if m is None or m.end() <= end:
                continue
            lines = _span_of(m.group(2), m.group(3)) if m.group(2) else None
            self.paths.append((m.start(), _norm_file(m.group(1)), lines))
            bare[m.start():m.end()] = " " * (m.end() - m.start())
            end = m.end()
        self.bare = "".join(bare)
        self.lines = self._lines(self.bare)
        self.symbols = self._symbols(text, self.bare)
        self.starts = ([p[0] for p in self.paths], [ln[0] for ln in self.lines], [sym[0] for sym in self.symbols])

    @staticmethod
    def _lines(bare: str) -> list[tuple[int, int, int, int]]:
        """(where, first, last, where it ends) of each bare line reference."""
        out = []
        for m in _LINE.finditer(bare):
            if m.start() and (_in_word(bare[m.start() - 1]) or bare[m.start() - 1] == "-"):
                continue
            out.append((m.start(), *_span_of(m.group(1), m.group(2)), m.end()))
        if "行" in bare:
            out += [(m.start(), *_span_of(m.group(1) or m.group(2), None), m.end())
                    for m in _LINE_CJK.finditer(bare)]
            out.sort()
        return out

    @staticmethod
    def _symbols(text: str, bare: str) -> list[tuple[int, str]]:
        found: list[tuple[int, str]] = []
        for m in INLINE_CODE.finditer(text):
            code = m.group(1).strip()
            lead = _WHOLE.match(code) or _LEAD.match(code)
            if lead and not _PATH.fullmatch(code):  # `cache.py` is a file, not a symbol
                found.append((m.start(), lead.group(1)))
        done = 0
        backwards = bare[::-1]
        size = len(bare)
        for hint in _SYMBOL_HINT.finditer(bare):
            if hint.start() < done:
                continue
            back = _RUN_BACK.match(backwards, size - hint.start())
            start = hint.start() - (back.end() - back.start() if back else 0)
            run = _RUN.match(bare, start)
            if run is None or (start and bare[start - 1] == "."):
                done = hint.end()
                continue
            done = run.end()
            name, after = run.group(), bare[run.end():run.end() + 4]
            if ("." in name or (after[:1] == "(" and not after.startswith(("(s)", "(es)")))
                    or ("_" in name and not name.strip("_$").isdigit())
                    or (name[0].islower() and name.isascii() and name.isalnum() and not name.islower()
                        and not _in_word(after[:1]))):
                found.append((start, name))
        found.sort()
        names: dict[str, str | None] = {}
        out = []
        for at, name in found:
            norm = names[name] if name in names else names.setdefault(name, _norm_symbol(name))
            if norm:
                out.append((at, norm))
        return out

    def found(self, start: int, end: int) -> Found:
        """The references inside [start, end). A bare ``line 42`` is the line of the file named right
        after it (``line 42 of db.py``), else of the last file named before it in the span."""
        paths, lines, symbols = self.starts
        first, last = bisect_left(paths, start), bisect_left(paths, end)
        files = self.paths[first:last]
        bound = [(_base(path), *span) for _, path, span in files if span]
        bare = []
        for at, lo, hi, stop in self.lines[bisect_left(lines, start):bisect_left(lines, end)]:
            after = bisect_left(paths, stop, first, last)
            if after < last and paths[after] - stop <= _NEXT_TO:
                bound.append((_base(self.paths[after][1]), lo, hi))
            elif (before := bisect_left(paths, at, first, last)) > first:
                bound.append((_base(self.paths[before - 1][1]), lo, hi))
            else:
                bare.append((lo, hi))
        return Found(tuple(path for _, path, _ in files), tuple(bound), tuple(bare),
                      tuple(sorted({name for _, name in self.symbols[bisect_left(symbols, start):
                                                                      bisect_left(symbols, end)]})))


def merged(found: Iterable[Found]) -> Found:
    parts = list(found)
    return Found(tuple(f for p in parts for f in p.files), tuple(b for p in parts for b in p.bound),
                  tuple(b for p in parts for b in p.bare), tuple(sorted({s for p in parts for s in p.symbols})))


def found_in(text: str) -> Found:
    return Refs(text).found(0, len(text))


def keys(found: Found, context: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Normalised keys; ``context`` (the references of the items, labels and headings above, nearest
    first) adds its files and symbols, and its nearest file names a ``line 42`` that the text itself
    does not tie to a file."""
    if not context and not found.files and not found.bare and not found.symbols:
        return ()
    out = {r for r in context if r.startswith(("file:", "symbol:"))}
    out.update("file:" + f for f in found.files)
    where = _base(next((r[5:] for r in context if r.startswith("file:")), ""))
    for base, first, last in (*found.bound, *((where, lo, hi) for lo, hi in found.bare)):
        out.add(f"line:{base + ':' if base else ''}{first}" + (f"-{last}" if last != first else ""))
    out.update("symbol:" + sym for sym in found.symbols)
    return tuple(sorted(out))


def refs_of(text: str, context: Iterable[str] = ()) -> tuple[str, ...]:
    """The normalised code references in ``text``, read under ``context`` (see ``keys``)."""
    return keys(found_in(text), tuple(context))


__all__ = ["EXTENSIONS", "INLINE_CODE", "Found", "Refs", "found_in", "keys", "merged", "refs_of"]
