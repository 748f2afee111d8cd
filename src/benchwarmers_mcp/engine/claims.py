"""A panel's claims: each seat's answer split into the things it asserts, and the same claim made by
several seats grouped, with which seats made it. Pure and deterministic: standard library only, no
model and no network; the same answers give the same groups, ids and order whatever order the seats
come in. (``suite/claims.py`` is another thing: the suite's claim *tasks*, statements about a
function whose truth is known.)

**Splitting** (``split``) reads the answer as markdown. A claim is

    a list item          bullets and numbered items, nested ones each on their own; an item that
                         only introduces its sub-items (``- In `cache.py`:``, a bold title) is not
                         a claim: its text and code references go to each sub-item
    a table row          each body row; a ``Line`` column's numbers are line references
    a prose sentence     only one that points at code (a path, ``file.py:12``, ``line 42``, ``name()``,
                         ``Class.method``, a backticked identifier), with the sentences after it that
                         point at nothing, start as a fix or a back-reference ("Use ...", "This ...")
                         or name its symbols again; a paragraph's first claim starts with the
                         paragraph (its lead-in); a paragraph ending in ':' introduces what follows
                         and an opening line naming only the file under review is context
    a marked comment     in a code fence (``# BUG: ...``, ``// FIXME ...``); nothing else in a fence
                         is a claim, but a fence's file name is kept as a reference

Headings are not claims; their references (``## store/db.py``) are the context of the claims under
them, so a bare ``line 42`` there means ``db.py`` line 42. A claim keeps its text (emphasis and links
off), its span (``answer[start:end]``) and its code references as normalised keys (``file:store/db.py``,
``line:db.py:42-45``, ``symbol:cache.get``: ``engine/code_refs.py`` reads them).

**Grouping** (``group``) scores pairs of claims from the panel and joins them, best pairs first:

    text        the cosine of their words, each weighted by how rare it is in this panel (lower
                case, light stemming, stop words out, numbers and identifiers kept)
    + line      they cite the same file and line, within ``line_slack`` lines
    + symbol    they name the same function or identifier
    - conflict  they cite lines further apart in one file, or lines of different files: the same words
                about another place are another claim

Two groups join only while the mean score across them stays at ``linkage`` and any pair from one seat
reaches ``same_seat``: a seat's two claims share a group only when they say the same thing twice.
Only pairs that share a word or a reference are scored, so the cost follows the panel's overlap, not
its square. The thresholds are tuned on ``tests/data/claims`` (``benchmarks/claims.py``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from benchwarmers_mcp.engine import claim_words, code_refs
from benchwarmers_mcp.engine.code_refs import INLINE_CODE

# ---- the values ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim:
    """One thing an answer asserts, where it says it, and the code it points at."""

    text: str
    span: tuple[int, int]  # answer[start:end]
    refs: tuple[str, ...] = ()  # normalised keys, sorted: file:..., line:..., symbol:...

    def _of(self, kind: str) -> tuple[str, ...]:
        return tuple(r[len(kind) + 1:] for r in self.refs if r.startswith(kind + ":"))

    @property
    def files(self) -> tuple[str, ...]:
        return self._of("file")

    @property
    def lines(self) -> tuple[str, ...]:
        return self._of("line")

    @property
    def symbols(self) -> tuple[str, ...]:
        return self._of("symbol")


@dataclass(frozen=True, slots=True)
class Group:
    """The same claim as one or more seats made it."""

    id: str  # a short hash of the members' normalised text and references
    text: str  # the member closest to all the others
    seats: tuple[str, ...]  # sorted, each once
    members: tuple[tuple[str, Claim], ...]  # (seat, claim), by seat then place in the answer
    refs: tuple[str, ...]  # every member's, sorted

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "seats": list(self.seats), "refs": list(self.refs),
                "members": [{"seat": seat, "text": c.text, "span": list(c.span)} for seat, c in self.members]}


@dataclass(frozen=True, slots=True)
class ClaimMap:
    """A panel's agreement map: its groups, most seats first, then by first appearance."""

    seats: tuple[str, ...]
    groups: tuple[Group, ...]

    @classmethod
    def of(cls, answers: Mapping[str, str], policy: GroupingPolicy | None = None) -> ClaimMap:
        return cls(tuple(sorted(answers)), tuple(group(answers, policy)))

    def shared(self) -> tuple[Group, ...]:
        return tuple(g for g in self.groups if len(g.seats) > 1)

    def lone(self) -> tuple[Group, ...]:
        """The claims only one seat made: where to look first."""
        return tuple(g for g in self.groups if len(g.seats) == 1)

    def find(self, group_id: str) -> Group | None:
        return next((g for g in self.groups if g.id == group_id), None)

    def as_dict(self) -> list[dict[str, Any]]:
        return [g.as_dict() for g in self.groups]


@dataclass(frozen=True, slots=True)
class GroupingPolicy:
    threshold: float = 0.25  # a pair scoring this much says the same thing
    linkage: float = 0.25  # the mean score two groups must keep across them to join
    same_seat: float = 0.5  # one seat's two claims are one claim said twice (and cite the same lines)
    line: float = 0.3  # same file and line
    line_slack: int = 3  # lines this near count half and never conflict (a def and the line in it)
    line_conflict: float = 1.0  # lines further apart in one file: the same words about another place
    symbol: float = 0.15  # same function or identifier
    file_conflict: float = 1.0  # each cites lines, of different files: another place
    common: float = 0.5  # a word in more than this share of the panel's claims (and in more claims than
    #                       the seats, plus one) is no evidence


# ---- splitting -----------------------------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^`\n]*)$")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_SETEXT = re.compile(r"^[ \t]{0,3}(?:=+|-+)[ \t]*$")
_RULE = re.compile(r"^[ \t]{0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_ITEM = re.compile(r"^([ \t]*)(?:[-*+•]|\d{1,3}[.)])[ \t]+(?=\S)")
_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_BOLD_LINE = re.compile(r"^[ \t]*(\*\*|__)(?:(?!\1).)+\1[ \t]*[:：]?[ \t]*$")
_TABLE_SEP = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{2,}:?[ \t]*\|)+(?:[ \t]*:?-{2,}:?[ \t]*)?$")
_MARKED = re.compile(
    r"((?:#|//|--|/\*|<!--|;)[ \t]*(?:BUG|FIXME|FIX|XXX|HACK|TODO|NOTE|WARNING|WARN|ISSUE|PROBLEM|SECURITY|DANGER)"
    r"\b[ \t]*[:\-–—]?.*?)[ \t]*(?:\*/|-->)?[ \t]*$")
_COMMENT = re.compile(r"^(?:#|//|--|/\*|<!--|;)[ \t]*")
_LINE_HEADER = re.compile(r"^(?:line|lines|ligne|zeile|línea|linea|行)$", re.I)
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s)|[。！？]")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "no.", "fig.", "resp.", "z.b.", "d.h.")
_LABEL_END = (":", "：")


@dataclass(eq=False)
class _Block:
    kind: str  # item | para | row | note
    indent: int
    segments: list[tuple[int, int]]
    context: tuple[str, ...] = ()  # references of the heading, label paragraph or fence above it
    parent: _Block | None = None
    children: int = 0
    row_text: str = ""  # a table row: the text its references are read from


_EMPHASIS = re.compile(r"\*\*|(?<!\w)__(?=\S)|(?<=\S)__(?!\w)|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])")


_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_QUOTES = re.compile(r"(?m)^[ \t]*(?:>[ \t]?)+")


def _clean(raw: str) -> str:
    """Readable text: links to their words, quote marks and emphasis off (not inside inline code)."""
    text = _LINK.sub(r"\1", raw) if "](" in raw else raw
    if ">" in text:
        text = _QUOTES.sub("", text)
    if "*" in text or "_" in text:
        pieces, at = [], 0
        for code in INLINE_CODE.finditer(text) if "`" in text else ():
            pieces += [_EMPHASIS.sub("", text[at:code.start()]), code.group()]
            at = code.end()
        text = "".join(pieces) + _EMPHASIS.sub("", text[at:])
    return " ".join(text.split())


class _Scanner:
    """One pass over the lines: blocks (items, paragraphs, table rows, fence notes) with their
    nesting and the context each sits under."""

    def __init__(self, answer: str, index: code_refs.Refs) -> None:
        self.answer, self.index = answer, index
        self.blocks: list[_Block] = []
        self.items: list[_Block] = []  # open list items, innermost last
        self.para: _Block | None = None  # the paragraph being read
        self.last: _Block | None = None  # the block the previous line went to
        self.heading: tuple[str, ...] = ()
        self.label: tuple[str, ...] = ()  # a paragraph ending in ':' introduces what follows
        self.fence: tuple[str, tuple[str, ...]] | None = None  # closing marker, context of its notes
        self.header: list[str] | None = None  # a table's column names while its rows are read
        self.blank = True

    def run(self) -> list[_Block]:
        pos = 0
        for line in self.answer.splitlines(keepends=True):
            start, pos = pos, pos + len(line)
            self._line(start, line.rstrip("\r\n"))
        self._end_para()
        return self.blocks

    def _line(self, start: int, line: str) -> None:
        if self.fence is not None:
            self._in_fence(start, line)
            return
        quote = _QUOTE.match(line) if ">" in line[:8] else None
        skip = quote.end() if quote else 0
        body, at = line[skip:], start + skip
        if not body.strip():
            self._end_para()
            self.header, self.blank, self.last = None, True, None
            return
        if self._structure(body, at):
            self.blank, self.last = False, None
            return
        self._text(body, at)
        self.blank = False

    def _structure(self, body: str, at: int) -> bool:
        """Fences, headings, rules, tables: lines that are not text. True when ``body`` was one."""
        first = body.lstrip()[:1]
        fence = _FENCE.match(body) if first in ("`", "~") else None
        if fence:
            self._end_para()
            opener = self.items[-1] if self.items and _indent(body) > self.items[-1].indent else None
            info = self._refs([(at + fence.start(2), at + fence.end(2))]) if fence.group(2).strip() else ()
            if opener is not None:  # a fence inside a list item: its file name is the item's reference
                opener.context = info + opener.context
            self.fence = (fence.group(1)[0] * len(fence.group(1)),
                          opener.context if opener else info + self.label + self.heading)
            return True
        para = self.para
        if first in ("=", "-") and para is not None and len(para.segments) == 1 and _SETEXT.match(body):
            self.blocks.remove(para)
            self.para = None
            self._heading(para.segments)
            return True
        if (first == "#" and _HEADING.match(body)) or (
                first in ("*", "_") and self.blank and _indent(body) == 0 and _BOLD_LINE.match(body)):
            self._end_para()
            self._heading([(at, at + len(body))])
            return True
        if first in ("-", "*", "_") and _RULE.match(body):
            self._end_para()
            self.items.clear()
            return True
        if (first in ("|", ":", "-") and para is not None and len(para.segments) == 1 and _TABLE_SEP.match(body)
                and "|" in self._raw(para)):
            self.blocks.remove(para)
            self.para = None
            self.header = [_LINE_HEADER.sub("line", c) for c in _cells(self._raw(para))]
            return True
        if self.header is not None and "|" in body:
            self._end_para()
            cells = _cells(body)
            text = " ".join(f"line {c}" if h == "line" else c for h, c in zip(self.header, cells, strict=False))
            self.blocks.append(_Block("row", 0, [(at, at + len(body))], self.label + self.heading, row_text=text))
            return True
        return False

    def _refs(self, segments: list[tuple[int, int]]) -> tuple[str, ...]:
        return code_refs.keys(code_refs.merged(self.index.found(s, e) for s, e in segments))

    def _heading(self, segments: list[tuple[int, int]]) -> None:
        self.heading = self._refs(segments)
        self.items.clear()
        self.label = ()

    def _in_fence(self, start: int, line: str) -> None:
        assert self.fence is not None
        marker, context = self.fence
        stripped = line.strip()
        if stripped.startswith(marker) and not stripped.strip(marker[0]):
            self.fence = None
            return
        note = _MARKED.search(line)
        if note:
            self.blocks.append(_Block("note", 0, [(start + note.start(1), start + note.end(1))], context))

    def _text(self, body: str, at: int) -> None:
        end = at + len(body.rstrip())
        item = _ITEM.match(body)
        if item:
            self._end_para()
            indent = _indent(item.group(1))
            while self.items and self.items[-1].indent >= indent:
                self.items.pop()
            parent = self.items[-1] if self.items else None
            if parent is not None:
                parent.children += 1
            context = parent.context if parent else self.label + self.heading
            block = _Block("item", indent, [(at + item.end(), end)], context, parent)
            self.blocks.append(block)
            self.items.append(block)
            self.last = block
            return
        text_at = at + _indent(body)
        if self.last is not None:  # no blank line since: the same block goes on
            self.last.segments[-1] = (self.last.segments[-1][0], end)
            return
        owner = next((i for i in reversed(self.items) if _indent(body) > i.indent), None)
        if owner is not None and not owner.children:
            owner.segments.append((text_at, end))
            self.last = owner
            return
        if owner is None:
            self.items.clear()
            self.label = ()
        context = owner.context if owner is not None else self.heading
        self.para = _Block("para", 0, [(text_at, end)], context, owner)
        self.blocks.append(self.para)
        self.last = self.para

    def _end_para(self) -> None:
        para, self.para = self.para, None
        if para is None:
            return
        raw = self._raw(para)
        opening = self.blocks == [para]
        if not opening and not raw.rstrip().endswith(_LABEL_END):
            return
        refs = self._refs(para.segments)
        if opening and refs and all(r.startswith("file:") for r in refs):
            self.blocks.clear()  # an opening line naming the file under review: the context of the rest
            self.heading = refs + self.heading
        elif raw.rstrip().endswith(_LABEL_END):
            self.label = refs + self.heading

    def _raw(self, block: _Block) -> str:
        return " ".join(self.answer[s:e] for s, e in block.segments)


def _indent(text: str) -> int:
    return len(text.expandtabs(4)) - len(text.expandtabs(4).lstrip())


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _sentences(text: str, base: int) -> list[tuple[int, int]]:
    """Sentence spans of one paragraph, inline code masked so its dots do not end a sentence."""
    masked = INLINE_CODE.sub(lambda m: "x" * len(m.group()), text)
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(masked):
        if m.group()[0] == "." and masked[:m.start() + 1].lower().endswith(_ABBREVIATIONS):
            continue
        if text[start:m.end()].strip():
            spans.append((start, m.end()))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        out.append((base + s, base + e))
    return out


def _is_label(text: str) -> bool:
    """An item that introduces its sub-items rather than saying something: ``In `db.py`:``, a title."""
    text = text.strip()
    if text.endswith(_LABEL_END) or _BOLD_LINE.match(text):
        return True
    return len(text.split()) <= 8 and not re.search(r"[.!?;。！？]", INLINE_CODE.sub("", text))


def split(answer: str) -> list[Claim]:
    """The claims of one answer, in the order they appear."""
    claims: list[Claim] = []
    labels: dict[int, str] = {}  # id(item) -> the text of an item that only introduces its sub-items
    refs_by: dict[int, tuple[str, ...]] = {}  # id(item) -> its references
    index = code_refs.Refs(answer)
    for block in _Scanner(answer, index).run():
        raw = " ".join(answer[s:e] for s, e in block.segments)
        span = (block.segments[0][0], block.segments[-1][1])
        context = _inherited(block, labels, refs_by) + block.context  # nearest first
        if block.kind == "para":
            claims += _prose(answer, span, context, index)
            continue
        if block.kind == "row":
            refs = code_refs.keys(code_refs.found_in(block.row_text), context)
        else:
            refs = code_refs.keys(code_refs.merged(index.found(s, e) for s, e in block.segments), context)
        if block.kind != "item":  # a table row or a fence's marked comment
            text = " — ".join(_cells(raw)) if block.kind == "row" else _COMMENT.sub("", raw)
            claims.append(Claim(_clean(text), span, refs))
            continue
        refs_by[id(block)] = refs
        if block.children and _is_label(raw):
            labels[id(block)] = _clean(raw).rstrip(":：").strip()
            continue
        if not refs and len(claim_words.tokens(raw)) < 2:
            continue
        label = labels.get(id(block.parent)) if block.parent is not None else None
        claims.append(Claim(f"{label}: {_clean(raw)}" if label else _clean(raw), span, refs))
    return claims


def _inherited(block: _Block, labels: dict[int, str], refs_by: dict[int, tuple[str, ...]]) -> tuple[str, ...]:
    """What a block takes from the item it sits in: every reference of a label, the files of a claim."""
    if block.parent is None:
        return ()
    refs = refs_by.get(id(block.parent), ())
    return refs if id(block.parent) in labels else tuple(r for r in refs if r.startswith("file:"))


_GOES_ON = re.compile(
    r"^\W*(?:this|that|these|those|which|so|otherwise|then|hence|thus|therefore|instead|use|call|switch|replace"
    r"|add|remove|wrap|move|set|pass|check|validate|keep|prefer|consider|make|return|drop|escape|pin|bind|guard"
    r"|hold|store|delete|rename|avoid|change|put|compare|parse|raise|log|catch|handle|limit|sanitize|sanitise"
    r"|encode|fix|fixing|fixed)\b", re.I)


def _goes_on(sentence: str, refs: tuple[str, ...], before: set[str]) -> bool:
    """Whether a sentence that points at code still belongs to the claim before it: it starts as a fix
    or a back-reference ("Use ...", "This means ..."), or names a symbol the claim named and no other line."""
    if _GOES_ON.match(sentence):
        return True
    lines = {r for r in refs if r.startswith("line:")}
    symbols = {r for r in refs if r.startswith("symbol:")}
    return bool(symbols & before) and lines <= before


def _prose(answer: str, span: tuple[int, int], context: tuple[str, ...], index: code_refs.Refs) -> list[Claim]:
    """A paragraph's claims: each sentence that points at code, with the sentences after it that point
    at nothing or go on about the same thing (and, for the first, the sentences that lead into it)."""
    start, end = span
    found: list[tuple[int, int, set[str], set[str]]] = []  # start, end, references, its own references
    sentences = _sentences(answer[start:end], start)
    for i, (s, e) in enumerate(sentences):
        sentence = answer[s:e]
        if i == len(sentences) - 1 and sentence.rstrip().endswith(_LABEL_END):
            break
        scanned = index.found(s, e)
        own = code_refs.keys(scanned)
        if found and (not own or _goes_on(sentence, own, found[-1][3])):
            found[-1][2].update(code_refs.keys(scanned, context))
            found[-1][3].update(own)
            found[-1] = (found[-1][0], e, found[-1][2], found[-1][3])
        elif own:
            if not found:  # the sentences before the first claim lead into it
                s = start
            found.append((s, e, set(code_refs.keys(scanned, context)), set(own)))
    return [Claim(_clean(answer[s:e]), (s, e), tuple(sorted(refs))) for s, e, refs, _ in found]


# ---- grouping ------------------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class _Item:
    index: int
    seat: str
    claim: Claim
    words: frozenset[str]
    vector: dict[str, float]  # word -> weight, unit length, in sorted word order
    cited: frozenset[str]  # base names of the files whose lines it cites
    lines: tuple[tuple[str, int, int], ...]  # (base name or "", first, last)
    symbols: dict[str, float]  # symbol -> how rare it is in the panel, 0..1
    tails: dict[str, float]  # every dotted tail of its symbols (a.b.c: c, b.c, a.b.c) -> the rarest's rarity


def _parse_lines(keys: Iterable[str]) -> tuple[tuple[str, int, int], ...]:
    out = []
    for key in keys:
        where, _, numbers = key.rpartition(":")
        lo, _, hi = numbers.partition("-")
        if lo.isdigit():
            out.append((where, int(lo), int(hi) if hi.isdigit() else int(lo)))
    return tuple(out)


def _rarity(n: int, df: int, seats: int) -> float:
    """1 for a key no more claims share than there are seats (one claim every seat made), falling to 0
    for one every claim has."""
    free = max(2, seats)
    return 1.0 if df <= free or n <= free else max(0.0, math.log(n / df) / math.log(n / free))


def _tails(symbols: dict[str, float]) -> dict[str, float]:
    tails = dict(symbols)
    for sym, rarity in symbols.items():
        if "." in sym:
            parts = sym.split(".")
            for k in range(1, len(parts)):
                tail = ".".join(parts[k:])
                tails[tail] = max(tails.get(tail, 0.0), rarity)
    return tails


def _items(claims: Mapping[str, Sequence[Claim]], policy: GroupingPolicy) -> tuple[list[_Item], dict[int, float]]:
    """The panel's claims in a fixed order (seat, then place), with their weighted words and references,
    and how rare each cited line number is."""
    ordered = [(seat, c) for seat in sorted(claims) for c in sorted(claims[seat], key=lambda c: (c.span, c.text))]
    tokens = claim_words.Words()
    words = [tokens(c.text) for _, c in ordered]
    n, seats = len(ordered), len(claims)
    df = Counter(chain.from_iterable(words))
    named_df: Counter[str] = Counter()  # symbol -> the claims naming it
    line_df: Counter[int] = Counter()  # line number -> the claims citing it
    refs: list[tuple[list[str], tuple[tuple[str, int, int], ...]]] = []  # each claim's symbols and lines
    nothing: tuple[list[str], tuple[tuple[str, int, int], ...]] = ([], ())
    for _, c in ordered:
        if not c.refs:
            refs.append(nothing)
            continue
        named = [r[7:] for r in c.refs if r.startswith("symbol:")]
        cited = _parse_lines([r[5:] for r in c.refs if r.startswith("line:")])
        refs.append((named, cited))
        if named:
            named_df.update(named)
        if cited:
            line_df.update({lo for _, lo, _ in cited})
    cap = max(seats + 1.0, policy.common * n)  # a claim every seat made, one seat twice
    idf = {w: math.log(1 + n / d) for w, d in df.items() if d <= cap}
    square = {w: x * x for w, x in idf.items()}
    named_rarity = {sym: _rarity(n, d, seats) for sym, d in named_df.items()}
    items = []
    for i, ((seat, claim), keys, (named, lines)) in enumerate(zip(ordered, words, refs, strict=True)):
        kept = sorted([w for w in keys if w in idf])
        norm = math.sqrt(sum(map(square.__getitem__, kept))) or 1.0
        symbols = {sym: named_rarity[sym] for sym in named} if named else {}
        items.append(_Item(i, seat, claim, keys, {w: idf[w] / norm for w in kept},
                           frozenset(f for f, _, _ in lines if f) if lines else frozenset(), lines, symbols,
                           _tails(symbols) if symbols else symbols))
    return items, {line: _rarity(n, d, seats) for line, d in line_df.items()}


def _symbol_evidence(a: _Item, b: _Item) -> float:
    """How rare the rarest function or identifier both name is (a method meets its bare name)."""
    best = 0.0
    for x, y in ((a, b), (b, a)):
        for sym in x.symbols.keys() & y.tails.keys():
            best = max(best, min(x.symbols[sym], y.tails[sym]))
    return best


_SAME, _NEAR, _OTHER = 2, 1, 0  # how two claims' lines compare


def _line_evidence(a: _Item, b: _Item, slack: int, rarity: dict[int, float]) -> tuple[int, float] | None:
    """(_SAME, the line's rarity) when they cite the same line, (_NEAR, half that) within ``slack``
    lines, (_OTHER, 0) when they cite only other lines of one file, None when they cannot be compared."""
    best: tuple[int, float] | None = None
    for fa, lo_a, hi_a in a.lines:
        for fb, lo_b, hi_b in b.lines:
            if fa and fb and fa != fb:
                continue
            weight = max(rarity.get(lo_a, 1.0), rarity.get(lo_b, 1.0))
            if lo_a <= hi_b and lo_b <= hi_a:
                found = (_SAME, weight)
            elif lo_a - slack <= hi_b and lo_b - slack <= hi_a:
                found = (_NEAR, weight / 2)
            else:
                found = (_OTHER, 0.0)
            best = found if best is None else max(best, found)
    return best


class _Scores:
    """Pair scores, each worked out once when first asked for: the cosine of the words plus the
    evidence of the references. The cosines are summed at the start, claim by claim over the postings
    of its words (only pairs that share a word are touched)."""

    def __init__(self, items: list[_Item], policy: GroupingPolicy, rarity: dict[int, float]) -> None:
        self.items, self.policy, self.rarity = items, policy, rarity
        self.known: dict[tuple[int, int], tuple[float, bool]] = {}
        # claim -> the later claims sharing a word with it -> the cosine, summed in the words' order
        self.cosines: list[dict[int, float]] = [{} for _ in items]
        postings: dict[str, list[tuple[int, float]]] = {}  # word -> the later claims that have it
        for item in reversed(items):
            row = self.cosines[item.index]
            get, i = row.get, item.index
            for w, v in item.vector.items():
                posting = postings.get(w)
                if posting is None:
                    postings[w] = [(i, v)]
                    continue
                for j, vj in posting:
                    row[j] = get(j, 0.0) + v * vj
                posting.append((i, v))

    def __call__(self, i: int, j: int) -> tuple[float, bool]:
        """The pair's score, and whether one seat could have said it twice (if both cite lines, the
        same ones)."""
        pair = (i, j) if i < j else (j, i)
        known = self.known.get(pair)
        if known is None:
            known = self.known[pair] = self._score(*pair)
        return known

    def _score(self, i: int, j: int) -> tuple[float, bool]:
        a, b, policy = self.items[i], self.items[j], self.policy
        score = self.cosines[i].get(j, 0.0)
        if a.symbols and b.symbols and not a.tails.keys().isdisjoint(b.tails):
            score += policy.symbol * _symbol_evidence(a, b)
        line = _line_evidence(a, b, policy.line_slack, self.rarity) if a.lines and b.lines else None
        if line is not None and line[0] == _OTHER:
            score -= policy.line_conflict
        elif line is not None:
            score += policy.line * line[1]
        if line is None and a.cited and b.cited and a.cited.isdisjoint(b.cited):
            score -= policy.file_conflict
        return score, line is None or line[0] == _SAME

    def ranked(self) -> list[tuple[float, tuple[int, int]]]:
        """The pairs that reach the threshold, best first: only those whose words alone reach it or
        that share a symbol's name or a line number can."""
        threshold = self.policy.threshold
        pairs = {(i, j) for i, row in enumerate(self.cosines) for j, cosine in row.items() if cosine >= threshold}
        named: dict[str, list[int]] = defaultdict(list)  # symbol -> the claims that name it
        tails: dict[str, list[int]] = defaultdict(list)  # symbol -> the claims naming it or a.b.<it>
        lines: dict[int, list[tuple[int, str]]] = defaultdict(list)  # line -> (claim, its file or "")
        for item in self.items:
            for sym in item.symbols:
                named[sym].append(item.index)
            for tail in item.tails:
                tails[tail].append(item.index)
            for base, lo, hi in item.lines:
                for line in range(lo, min(hi, lo + 50) + 1):
                    lines[line].append((item.index, base))
        for sym, members in named.items():
            pairs.update((x, y) if x < y else (y, x) for x in members for y in tails[sym] if x != y)
        for citing in lines.values():
            if len(citing) > 1:
                pairs.update((x, y) for k, (x, fx) in enumerate(citing) for y, fy in citing[k + 1:]
                             if x != y and (fx == fy or not fx or not fy))
        known, score = self.known, self._score
        best = []
        for pair in pairs:
            found = known.get(pair)
            if found is None:
                found = known[pair] = score(*pair)
            if found[0] >= threshold:
                best.append((-found[0], pair))
        best.sort()
        return [(-s, pair) for s, pair in best]


def group_claims(claims: Mapping[str, Sequence[Claim]], policy: GroupingPolicy | None = None) -> list[Group]:
    """Group claims already split (by ``split`` or by an extractor model): the same claim from several
    seats in one group, each claim in exactly one."""
    policy = policy or GroupingPolicy()
    items, rarity = _items(claims, policy)
    scores = _Scores(items, policy, rarity)
    clusters: dict[int, list[int]] = {i: [i] for i in range(len(items))}
    where = list(range(len(items)))
    for _, (i, j) in scores.ranked():
        a, b = where[i], where[j]
        if a == b or not _may_join(clusters[a], clusters[b], items, scores, policy):
            continue
        keep, gone = min(a, b), max(a, b)
        clusters[keep] = sorted(clusters[keep] + clusters.pop(gone))
        for k in clusters[keep]:
            where[k] = keep
    return _finish([clusters[k] for k in sorted(clusters)], items, scores)


def _may_join(a: list[int], b: list[int], items: list[_Item], scores: _Scores, policy: GroupingPolicy) -> bool:
    """Whether two groups may become one: their mean score across stays at ``linkage`` and every pair
    from one seat is that seat saying the same thing twice."""
    total, known = 0.0, scores.known
    for x in a:
        seat = items[x].seat
        for y in b:
            pair = (x, y) if x < y else (y, x)
            score, twice = known.get(pair) or scores(x, y)
            if seat == items[y].seat and (score < policy.same_seat or not twice):
                return False
            total += score
    return total / (len(a) * len(b)) >= policy.linkage


def _finish(clusters: list[list[int]], items: list[_Item], scores: _Scores) -> list[Group]:
    made: list[tuple[tuple[int, int, str], Group]] = []
    taken: set[str] = set()
    known = scores.known
    keys = [" ".join(sorted(item.words)) + "|" + " ".join(item.claim.refs) for item in items]
    contents = ["\n".join(sorted(keys[i] for i in members)) for members in clusters]
    for content, members in sorted(zip(contents, clusters, strict=True)):
        digest = hashlib.blake2b(content.encode(), digest_size=5).hexdigest()
        n = 1
        while digest in taken:  # the same content twice: told apart by its place in the content order
            n += 1
            digest = hashlib.blake2b(f"{content}\n{n}".encode(), digest_size=5).hexdigest()
        taken.add(digest)

        def closeness(i: int, members: list[int] = members) -> tuple[float, int, int]:
            return (sum((known.get((i, j) if i < j else (j, i)) or scores(i, j))[0] for j in members if j != i),
                    -len(items[i].claim.text), -i)

        central = max(members, key=closeness) if len(members) > 1 else members[0]
        seats = tuple(sorted({items[i].seat for i in members}))
        first = min(items[i].claim.span[0] for i in members)
        refs = tuple(sorted({r for i in members for r in items[i].claim.refs}))
        group = Group(digest, items[central].claim.text, seats,
                      tuple((items[i].seat, items[i].claim) for i in members), refs)
        made.append(((-len(seats), first, digest), group))
    return [g for _, g in sorted(made, key=lambda kv: kv[0])]


def group(answers: Mapping[str, str], policy: GroupingPolicy | None = None) -> list[Group]:
    """Split every seat's answer and group the claims: most seats first, then by first appearance."""
    return group_claims({seat: split(text) for seat, text in answers.items()}, policy)


__all__ = ["Claim", "ClaimMap", "Group", "GroupingPolicy", "group", "group_claims", "split"]
