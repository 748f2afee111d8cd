"""Issue 30, item 4: claims judged once. ``engine.claims`` splits each seat's answer into claims and
groups the same claim across seats, offline and deterministically.

The splitting rules are checked on small answers; the grouping on the fixed set of panels with
labelled groups (``tests/data/claims``, scored by ``tests/kits/claimset.py``), pairwise precision and
recall over all of it, not on one example; determinism across seat order and across processes; and
any text at all, from hypothesis.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from benchwarmers_mcp.engine import claims, code_refs
from benchwarmers_mcp.engine.claims import Claim, ClaimMap, GroupingPolicy, group, group_claims, split
from benchwarmers_mcp.engine.code_refs import refs_of
from tests.kits import claimset

ROOT = Path(__file__).resolve().parents[1]

# Measured on the set as committed (benchmarks/claims.py): all 16 panels precision 0.947, recall 0.866;
# the 4 held-out panels 0.947 and 0.947. The floors leave room for a change in wording to move a pair or
# two (one pair is ~0.5% of the 187 labelled pairs) but fail a change that loses a kind of evidence:
# without line and symbol evidence recall falls to 0.51, without the same-seat rule precision to 0.87.
PRECISION_FLOOR = 0.9
RECALL_FLOOR = 0.8
HELD_OUT_FLOOR = 0.8


def texts(answer: str) -> list[str]:
    return [c.text for c in split(answer)]


# ---- splitting ----------------------------------------------------------------------------------

def test_bullets_numbered_items_and_nested_items_are_claims_and_headings_are_not() -> None:
    answer = ("## Findings\n\n"
              "1. `refresh()` drops the lock before writing the value.\n"
              "2. `_evict()` deletes from the dict while iterating over it.\n"
              "   - which raises `RuntimeError` on the first eviction\n"
              "* `maxsize` is never enforced.\n"
              "+ A bullet that names no code but says enough words to count.\n")
    assert texts(answer) == [
        "`refresh()` drops the lock before writing the value.",
        "`_evict()` deletes from the dict while iterating over it.",
        "which raises `RuntimeError` on the first eviction",
        "`maxsize` is never enforced.",
        "A bullet that names no code but says enough words to count.",
    ]


def test_an_item_that_only_introduces_its_sub_items_passes_its_text_and_file_down() -> None:
    answer = ("## Review of `store/db.py`\n\n"
              "- **In `cache.py`:**\n"
              "  - `get()` returns stale values after `refresh()`.\n"
              "  - line 10 compares with `<` instead of `<=`.\n"
              "- **Race condition in `TTLCache.refresh()`**\n"
              "  - the lock is released before the write\n")
    found = split(answer)
    assert [c.text for c in found] == [
        "In `cache.py`: `get()` returns stale values after `refresh()`.",
        "In `cache.py`: line 10 compares with `<` instead of `<=`.",
        "Race condition in `TTLCache.refresh()`: the lock is released before the write",
    ]
    # the nearest file names the bare line: the label's, not the heading's
    assert "line:cache.py:10" in found[1].refs
    assert "symbol:ttlcache.refresh" in found[2].refs  # a label's symbols go down too
    # the span is the sub-item's own text
    assert answer[found[2].span[0]:found[2].span[1]] == "the lock is released before the write"


def test_a_fence_is_no_claim_but_its_marked_comment_is_and_its_file_name_is_kept() -> None:
    answer = ("1. `open()` leaks its connection. Fix:\n\n"
              "   ```python title=\"store/db.py\"\n"
              "   def open(self):\n"
              "       conn = connect()  # BUG: never closed on the error path\n"
              "       for row in rows: print(row.value)  # an ordinary comment\n"
              "   ```\n\n"
              "Suggested rewrite of `find_users`:\n\n"
              "```sql\n"
              "-- FIXME: the name is interpolated into the query\n"
              "```\n")
    found = split(answer)
    assert [c.text for c in found] == ["`open()` leaks its connection. Fix:",
                                       "BUG: never closed on the error path",
                                       "FIXME: the name is interpolated into the query"]
    assert "file:store/db.py" in found[0].refs  # the fence's file name is the item's reference
    assert "file:store/db.py" in found[1].refs
    assert "symbol:find_users" in found[2].refs  # the paragraph that introduced the fence
    assert answer[found[1].span[0]:found[1].span[1]] == "# BUG: never closed on the error path"


def test_prose_sentences_are_claims_only_when_they_point_at_code() -> None:
    answer = ("I looked at the whole module. Some context first, with no code in it.\n\n"
              "The main concern: this races. The timeout is `None` on line 7, so the call can hang. "
              "That blocks the worker. Use a finite value such as `timeout=10`. "
              "Separately, `close()` is a no-op.\n\n"
              "Everything else looks fine to me.\n")
    found = split(answer)
    assert [c.text for c in found] == [
        # the lead-in, the claim, what it means and its fix are one claim
        "The main concern: this races. The timeout is `None` on line 7, so the call can hang. "
        "That blocks the worker. Use a finite value such as `timeout=10`.",
        "Separately, `close()` is a no-op.",
    ]
    assert found[0].refs == ("line:7", "symbol:timeout")


def test_an_opening_line_naming_the_file_is_context_and_a_colon_introduces() -> None:
    answer = ("Findings for `server/upload.js`, most serious first.\n\n"
              "- line 12 joins `req.body.filename` onto the upload folder\n\n"
              "Here is what I found in `routes/orders.js`:\n\n"
              "- line 14: `Order.findById()` is not awaited\n")
    found = split(answer)
    assert [c.text for c in found] == ["line 12 joins `req.body.filename` onto the upload folder",
                                       "line 14: `Order.findById()` is not awaited"]
    assert "line:upload.js:12" in found[0].refs
    assert "line:orders.js:14" in found[1].refs  # the nearer file, the one the label names


def test_table_rows_are_claims_and_a_line_column_gives_lines() -> None:
    answer = "| Line | Problem |\n|------|---------|\n| 12 | `name` is interpolated |\n| 30 | no commit |\n"
    found = split(answer)
    assert [c.text for c in found] == ["12 — `name` is interpolated", "30 — no commit"]
    assert [c.refs for c in found] == [("line:12", "symbol:name"), ("line:30",)]


def test_code_references_are_normalised_keys() -> None:
    assert refs_of("see ./Store/DB.py:123 and `Cache.get()`, `self._lock`, `None`, src/app.ts#L5-L9, "
                   "`privileged: true`, user_id, findById and value(s)") == (
        "file:src/app.ts", "file:store/db.py", "line:app.ts:5-9", "line:db.py:123",
        "symbol:_lock", "symbol:cache.get", "symbol:findbyid", "symbol:privileged", "symbol:user_id")
    assert refs_of("lines 10-12 and L42") == ("line:10-12", "line:42")
    assert refs_of("lines 10-12", context=("file:store/db.py",)) == ("file:store/db.py", "line:db.py:10-12")
    # a backticked file is a file, not a symbol; r.json() is a call, not a file
    assert refs_of("`cache.py` and `r.json()`") == ("file:cache.py", "symbol:r.json")
    # lines in other languages
    assert refs_of("Zeile 3, ligne 4, línea 5, 第 6 行") == ("line:3", "line:4", "line:5", "line:6")


def test_non_english_punctuation_ends_sentences_and_an_answer_may_have_no_claims() -> None:
    assert texts("第 3 行 `DEBUG` 是字符串。第 4 行 `SECRET_KEY` 默认为 dev。") == [
        "第 3 行 `DEBUG` 是字符串。", "第 4 行 `SECRET_KEY` 默认为 dev。"]
    assert texts("Voici mes remarques sur `docker-compose.yml` :\n\n1. Le mot de passe est en clair (ligne 6).\n") \
        == ["Le mot de passe est en clair (ligne 6)."]
    assert split("I reviewed the settings and found nothing to change. Nice work keeping it short.") == []
    assert split("") == [] and split("\n\n   \n") == []


def test_spans_are_in_order_and_hold_the_claims_words() -> None:
    for panel in claimset.load():
        for seat, answer in panel.answers.items():
            found = split(answer)
            starts = [c.span[0] for c in found]
            assert starts == sorted(starts), (panel.name, seat)
            for c in found:
                start, end = c.span
                assert 0 <= start < end <= len(answer)
                # the text ends with the claim's own words (a label it sits under comes first)
                last_word = [w for w in re.findall(r"\w+", c.text)][-1]
                assert last_word in answer[start:end], (panel.name, seat, c.text)


# ---- grouping -----------------------------------------------------------------------------------

def test_the_same_claim_worded_differently_is_one_group_and_different_claims_on_one_line_are_not() -> None:
    answers = {
        "member1": "- users.py:12: the query is built with an f-string, so `name` can inject SQL.\n"
                   "- users.py:12: `SELECT *` hands `password_hash` to every caller.\n",
        "member2": "- The query in `find_users` (users.py:12) interpolates `name`: a textbook injection.\n",
        "member3": "- `password_hash` leaks through `SELECT *` on users.py:12.\n"
                   "- users.py:27: `delete_user()` never commits.\n",
    }
    found = ClaimMap.of(answers)
    assert [(g.seats, len(g.members)) for g in found.groups] == [
        (("member1", "member2"), 2), (("member1", "member3"), 2), (("member3",), 1)]
    assert "inject" in found.groups[0].text and "password_hash" in found.groups[1].text
    assert [g.text for g in found.lone()] == ["users.py:27: `delete_user()` never commits."]
    assert found.shared() == found.groups[:2]
    assert found.find(found.groups[1].id) is found.groups[1] and found.find("nope") is None


def test_the_same_words_about_another_place_are_another_claim() -> None:
    files = {"member1": "- users.py:12 builds the query with an f-string, so `name` can inject SQL.\n",
             "member2": "- orders.py:12 builds the query with an f-string, so `name` can inject SQL.\n",
             "member3": "- In `users.py`, line 12 of it builds the query with an f-string: `name` can inject SQL.\n"}
    assert [g.seats for g in group(files)] == [("member1", "member3"), ("member2",)]
    lines = {"member1": "- worker.py:12: a blocking call inside the coroutine stalls the event loop.\n",
             "member2": "- worker.py:30: a blocking call inside the coroutine stalls the event loop.\n",
             "member3": "- worker.py:14: a blocking call inside the coroutine stalls the event loop.\n"}
    assert [g.seats for g in group(lines)] == [("member1", "member3"), ("member2",)]  # 12 and 14: near


def test_a_bare_line_is_the_line_of_the_file_next_to_it_not_of_a_file_named_in_passing() -> None:
    answer = ("### docker-compose.yml\n\n"
              "- **Secret in plain text** (line 6): move the password to a Docker secret or an untracked `.env` "
              "file.\n"
              "- line 12 of `upload.js` joins a name like `../../app/config.js` onto the folder.\n"
              "- In `nginx.conf` the alias on line 5 lacks a slash.\n")
    assert [[r for r in c.refs if r.startswith("line:")] for c in split(answer)] == [
        ["line:docker-compose.yml:6"], ["line:upload.js:12"], ["line:nginx.conf:5"]]


def test_one_seat_saying_a_thing_twice_shares_a_group_but_its_two_claims_do_not() -> None:
    answers = {
        "member1": "## session.ts\n\n"
                   "- `logout()` clears the cookie (line 60) but never deletes the session from `sessions`.\n"
                   "- `verifyToken()` compares tokens with `===` (line 30), which is not constant-time.\n\n"
                   "## Summary\n\n"
                   "- Delete the session in `logout()` (line 60).\n",
        "member2": "- `logout()` leaves the session valid on the server (session.ts:60).\n",
    }
    first, second = group(answers)
    assert first.seats == ("member1", "member2") and len(first.members) == 3
    assert second.seats == ("member1",) and "constant-time" in second.text


def test_claims_from_an_extractor_group_on_their_references_alone() -> None:
    """The optional extractor model hands in claims of its own; they group like split ones."""
    by_seat = {
        "a": [Claim("Le mot de passe est en clair", (0, 10), ("line:compose.yml:6", "symbol:database_url"))],
        "b": [Claim("Credentials are committed", (5, 20), ("line:compose.yml:6", "symbol:database_url")),
              Claim("The port is public", (30, 40), ("line:compose.yml:9", "symbol:ports"))],
    }
    groups = group_claims(by_seat)
    assert [g.seats for g in groups] == [("a", "b"), ("b",)]
    assert groups[0].refs == ("line:compose.yml:6", "symbol:database_url")


def test_the_wire_form_is_plain_data() -> None:
    panel = claimset.load()[0]
    wire = ClaimMap.of(panel.answers).as_dict()
    assert json.loads(json.dumps(wire)) == wire
    assert set(wire[0]) == {"id", "text", "seats", "refs", "members"}
    assert set(wire[0]["members"][0]) == {"seat", "text", "span"}
    seats_of_members = sorted({m["seat"] for g in wire for m in g["members"]})
    assert seats_of_members == sorted(s for s in panel.answers if split(panel.answers[s]))


def test_groups_come_most_seats_first_then_by_first_appearance() -> None:
    for panel in claimset.load():
        groups = group(panel.answers)
        keys = [(-len(g.seats), min(c.span[0] for _, c in g.members)) for g in groups]
        assert keys == sorted(keys), panel.name


# ---- determinism --------------------------------------------------------------------------------

def test_seat_order_changes_nothing_not_even_the_ids() -> None:
    rng = random.Random(30)
    for panel in claimset.load():
        expected = ClaimMap.of(panel.answers).as_dict()
        for _ in range(3):
            seats = list(panel.answers)
            rng.shuffle(seats)
            assert ClaimMap.of({s: panel.answers[s] for s in seats}).as_dict() == expected, panel.name


def test_ids_are_short_and_distinct_and_do_not_depend_on_seat_names() -> None:
    panel = claimset.load()[9]  # the long answer, which says some things twice
    groups = group(panel.answers)
    ids = [g.id for g in groups]
    assert len(set(ids)) == len(ids) and all(len(i) == 10 and int(i, 16) >= 0 for i in ids)
    renamed = group({f"seat-{k}": panel.answers[s] for k, s in enumerate(sorted(panel.answers))})
    assert sorted(g.id for g in renamed) == sorted(ids)


def test_the_same_answers_give_the_same_map_in_another_process_with_another_hash_seed() -> None:
    """Nothing may hang on set or dict order of strings: two processes with different hash seeds."""
    program = ("import json, sys\nfrom benchwarmers_mcp.engine.claims import ClaimMap\n"
               "from tests.kits import claimset\n"
               "print(json.dumps([ClaimMap.of(p.answers).as_dict() for p in claimset.load()]))\n")
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True,
                              check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0]) == [ClaimMap.of(p.answers).as_dict() for p in claimset.load()]


# ---- the fixed set ------------------------------------------------------------------------------

def test_the_fixed_set_is_what_the_tests_claim_it_is() -> None:
    panels = claimset.load()  # every snippet is in its answer exactly once, or this raises
    assert len(panels) >= 12
    assert all(3 <= len(p.answers) <= 5 for p in panels)
    assert {p.split for p in panels} == {"tune", "held-out"}
    for p in panels:
        labelled = [(seat, start) for members in p.gold for seat, start, _ in members]
        assert len(labelled) == len(set(labelled)), f"{p.name}: a claim in two groups"
        assert {seat for seat, _ in labelled} <= set(p.answers)
    about = " ".join(p.about for p in panels)
    for kind in ("Python", "JavaScript", "SQL", "config", "French", "German", "Chinese", "no claims", "long"):
        assert kind in about, kind


def test_grouping_precision_and_recall_on_the_fixed_set(capsys: pytest.CaptureFixture[str]) -> None:
    panels = claimset.load()
    lines = []
    for panel in panels:
        t = claimset.score(panel, group(panel.answers))
        lines.append(f"{panel.name:28} {panel.split:8} precision {t.precision:.3f} recall {t.recall:.3f}")
    everything = claimset.evaluate(panels)
    held_out = claimset.evaluate([p for p in panels if p.split == "held-out"])
    summary = (f"all: precision {everything.precision:.3f} recall {everything.recall:.3f} over "
               f"{everything.together_gold} labelled pairs; held out: precision {held_out.precision:.3f} "
               f"recall {held_out.recall:.3f}; splitter found {everything.gold_found}/{everything.gold_claims}")
    with capsys.disabled():
        print("\n" + "\n".join(lines) + "\n" + summary)
    assert everything.precision >= PRECISION_FLOOR, summary
    assert everything.recall >= RECALL_FLOOR, summary
    assert held_out.precision >= HELD_OUT_FLOOR and held_out.recall >= HELD_OUT_FLOOR, summary
    assert everything.gold_found == everything.gold_claims, summary  # the splitter finds every labelled claim


def test_the_evidence_is_what_carries_recall() -> None:
    """The floors above are not met by text overlap alone: without the line and symbol evidence (and the
    same-seat rule) the scores fall below them, so the test would catch their loss."""
    panels = claimset.load()
    words_only = claimset.evaluate(panels, GroupingPolicy(line=0.0, symbol=0.0))
    assert words_only.recall < RECALL_FLOOR
    no_same_seat_rule = claimset.evaluate(panels, GroupingPolicy(same_seat=-10.0))
    assert no_same_seat_rule.precision < claimset.evaluate(panels).precision


# ---- any text -----------------------------------------------------------------------------------

PIECES = list("abcXYZ019 _.:()`*#-+|>[]/\n\t~=，。：") + ["line ", "db.py", "`x()`", "```", "- ", "1. ", "## ",
                                                         "  - ", "| 1 | a |", "|---|---|", "# BUG: x", "**t**"]
MARKDOWN = st.lists(st.sampled_from(PIECES), max_size=120).map("".join)


@hypothesis_settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), MARKDOWN))
def test_any_text_splits_without_error_into_claims_inside_it(answer: str) -> None:
    found = split(answer)
    for c in found:
        assert 0 <= c.span[0] < c.span[1] <= len(answer)
        assert c.text and c.refs == tuple(sorted(set(c.refs)))
    assert split(answer) == found


@hypothesis_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["member1", "member2", "explorer1"]), st.one_of(st.text(max_size=150), MARKDOWN),
                       min_size=1, max_size=3))
def test_any_answers_put_every_claim_in_exactly_one_group(answers: dict[str, str]) -> None:
    groups = group(answers)
    members = [(seat, c.span, c.text) for g in groups for seat, c in g.members]
    expected = [(seat, c.span, c.text) for seat in sorted(answers) for c in split(answers[seat])]
    assert sorted(members) == sorted(expected) and len(set(members)) == len(members)
    assert len({g.id for g in groups}) == len(groups)
    for g in groups:
        assert g.seats == tuple(sorted({seat for seat, _ in g.members}))
        assert g.text in [c.text for _, c in g.members]


def test_the_modules_are_pure() -> None:
    """Standard library only: no model, no network, no numpy, no other part of the product."""
    allowed = {"__future__", "hashlib", "math", "re", "bisect", "collections", "collections.abc", "dataclasses",
               "itertools", "typing"}
    for module in (claims, code_refs):
        source = Path(module.__file__ or "").read_text()
        lines = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
        ours = [line for line in lines if "benchwarmers_mcp" in line]
        assert all("code_refs" in line for line in ours), (module.__name__, ours)
        assert {line.split()[1] for line in lines if line not in ours} <= allowed, (module.__name__, lines)
