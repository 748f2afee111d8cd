"""Scoring one answer to one task by the reference's fixed rules. Pure functions, no I/O.

**Not a score** (never 0/N): the call timed out or failed, or the answer is a provider notice
(at most 400 characters, about quotas, credits or availability), a refusal, or shorter than the
task's ``min_answer_chars`` (40 unless the task says otherwise).

Otherwise, with ``score_in: first_line`` only the first non-empty line (lower-cased) is read,
else the whole answer. A ``must_find`` clause is *present* when its phrase (or one of ``any_of``)
is in that text or its regex matches. A ``must_not_claim`` clause is *asserted* when its regex
matches, or its phrase appears with no negation word before it in the same sentence within 60
characters ("there is no SQL injection" does not assert "sql injection").

Outcomes, for a task with something to find (a planted bug, a true claim): ``found`` (every
must_find clause present, the format kept), ``wrong line`` (a bug task answered with another
``FAULT: line``), ``missed``. For a task with nothing to find (a control, a false claim, a trap):
``false alarm`` (a must_not_claim clause asserted), ``clean`` (every must_find clause present),
``missed`` (neither: no verdict given).

**Confidently wrong** is counted per opportunity: a control has one (answering FAULT), a bug one
(a wrong line), a false claim one (answering TRUE), a hand-built task one per trap in its
must_not_claim. A miss is not wrong; a true claim answered FALSE is a miss.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchwarmers_mcp.suite.tasks import Clause, Task

NOTICE_MAX = 400
NEGATION_WINDOW = 60
NEGATION = re.compile(
    r"\b(no|not|never|none|nothing|nobody|neither|nor|without|cannot|lacks?|absent|free of|rather than|instead of)\b"
    r"|n't\b|n’t\b")
SENTENCE_END = re.compile(r"[.!?\n]\s")
FAULT_LINE = re.compile(r"^\W*fault:\s*line\s*(\d+)", re.I | re.M)
VERDICT_PHRASES = frozenset({"no fault", "verdict: true", "verdict: false"})
NOTICE = re.compile(
    r"rate[- ]limit(ed| exceeded| reached)|too many requests|quota (exceeded|exhausted|reached)|out of credits"
    r"|add (more )?credits|insufficient (balance|funds|credits|quota)|upgrade your (plan|account)|payment required"
    r"|free[- ]tier (limit|quota)|daily limit|(model|service|server) is (currently )?(unavailable|overloaded|busy)"
    r"|temporarily unavailable|please try again later", re.I)
REFUSAL = re.compile(
    r"^\W*(?:(?:i'?m|i am) sorry|sorry|i apologi[sz]e|unfortunately)\b.{0,80}?\b(?:can(?:no|')t|can not|unable|won'?t|"
    r"not able|not allowed)\b"
    r"|^\W*(?:i can(?:no|')t|i can not|i'?m unable|i am unable|i won'?t|i will not|i'?m not able)\s+"
    r"(?:help|assist|comply|do that|provide|review|fulfil|complete|answer|engage)", re.I | re.S)
REFUSAL_MAX = 600


@dataclass(frozen=True)
class Score:
    scored: bool
    outcome: str | None  # found | wrong line | missed | clean | false alarm; None when not a score
    reason: str  # not a score: timeout, error, notice, refusal, too short; else what decided it
    expects: str = "find"
    found: bool = False
    invented: int = 0
    invented_claims: tuple[str, ...] = ()
    chances: int = 0  # opportunities to be confidently wrong
    wrong: int = 0  # of those, how many it took
    named_line: int | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"scored": self.scored, "outcome": self.outcome, "reason": self.reason, "expects": self.expects,
                "found": self.found, "invented": self.invented, "invented_claims": list(self.invented_claims),
                "chances": self.chances, "wrong": self.wrong, "named_line": self.named_line, "detail": self.detail}


def not_a_score(task: Task, reason: str, detail: str = "") -> Score:
    return Score(False, None, reason, task.expects, detail=detail[:300])


def failure(task: Task, status: str, message: str) -> Score:
    """A call that brought no answer: a timeout or an error. Never 0/N."""
    return not_a_score(task, "timeout" if status == "timeout" else "error", message)


# ---- the pieces -----------------------------------------------------------------------------

def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def scored_text(task: Task, answer: str) -> str:
    return (first_line(answer) if task.score_in == "first_line" else answer).lower()


def table_rows(answer: str) -> list[str]:
    """The data rows of the markdown tables in an answer (header and rule lines left out)."""
    rows: list[str] = []
    lines = [line.strip() for line in answer.splitlines()]
    for i, line in enumerate(lines):
        if not line.startswith("|") or re.fullmatch(r"\|?[\s:|-]+\|?", line):
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if re.fullmatch(r"\|?\s*:?-{2,}.*", following):
            continue  # the header: the next line is its rule
        rows.append(line)
    return rows


def present(clause: Clause, text: str) -> bool:
    if clause.regex is not None:
        return re.search(clause.regex, text, re.I | re.M) is not None
    return any(p in text for p in clause.phrases)


def negated(text: str, start: int) -> bool:
    """Is there a negation word before ``start``, in the same sentence, within 60 characters?"""
    before = text[max(0, start - NEGATION_WINDOW):start]
    ends = list(SENTENCE_END.finditer(before))
    if ends:
        before = before[ends[-1].end():]
    return NEGATION.search(before) is not None


def asserted(clause: Clause, text: str) -> bool:
    if clause.regex is not None:
        return re.search(clause.regex, text, re.I | re.M) is not None
    for phrase in clause.phrases:
        for m in re.finditer(re.escape(phrase), text):
            if not negated(text, m.start()):
                return True
    return False


def is_verdict(clause: Clause) -> bool:
    """A clause that is the task's other answer (``no fault``, ``verdict: false``), not a trap."""
    if clause.regex is not None:
        return "fault" in clause.regex
    return bool(clause.phrases) and all(p in VERDICT_PHRASES for p in clause.phrases)


def format_problem(task: Task, answer: str) -> str:
    """Why the answer breaks the task's ``format``, or ``""``."""
    f = task.format
    if f.min_chars and len(answer.strip()) < f.min_chars:
        return f"format: {len(answer.strip())} characters, the task wants {f.min_chars}"
    lower = answer.lower()
    for banned in f.must_not_contain:
        if banned.lower() in lower:
            return f"format: contains {banned!r}"
    if f.table or f.min_rows:
        rows = table_rows(answer)
        if not rows:
            return "format: no table"
        if len(rows) < f.min_rows:
            return f"format: {len(rows)} table rows, the task wants {f.min_rows}"
    return ""


def unusable(task: Task, answer: str) -> str | None:
    """Why an answer that came back is still not a score, or None."""
    text = answer.strip()
    if len(text) <= NOTICE_MAX and NOTICE.search(text):
        return "notice"
    if len(text) <= REFUSAL_MAX and REFUSAL.search(text):
        return "refusal"
    if len(text) < task.min_answer_chars:
        return "too short"
    return None


# ---- the score ------------------------------------------------------------------------------

def score_answer(task: Task, answer: str) -> Score:
    """Score one answer that came back."""
    reason = unusable(task, answer)
    if reason is not None:
        return not_a_score(task, reason, answer.strip()[:200])
    text = scored_text(task, answer)
    claims_text = "\n".join(table_rows(answer)).lower() if task.must_not_claim_in == "table" else text
    bad_format = format_problem(task, answer)
    found = not bad_format and all(present(c, text) for c in task.must_find)
    named = FAULT_LINE.search(text)
    line = int(named.group(1)) if named else None
    if task.expects == "find":
        traps = [c for c in task.must_not_claim if not is_verdict(c)]
        invented = tuple(c.text for c in traps if asserted(c, claims_text))
        if found:
            outcome = "found"
        elif task.locates and line is not None and not bad_format:
            outcome = "wrong line"
        else:
            outcome = "missed"
        chances = len(traps) + (1 if task.locates else 0)
        wrong = len(invented) + (1 if outcome == "wrong line" else 0)
    else:
        invented = tuple(c.text for c in task.must_not_claim if asserted(c, claims_text))
        outcome = "false alarm" if invented else "clean" if found else "missed"
        chances, wrong = len(task.must_not_claim), len(invented)
    return Score(True, outcome, bad_format or outcome, task.expects, found, len(invented), invented, chances, wrong,
                 line, bad_format)
