"""The scoring rules, one outcome at a time, on tasks in the reference's shapes."""

from __future__ import annotations

import pytest

from benchwarmers_mcp.suite import scoring
from benchwarmers_mcp.suite.tasks import check_task

EXPLAIN = " The loop bound is compared with <= where the original used <, so it reads one past the end."


def bug(line: int = 177, **extra):
    return check_task({"id": "b", "prompt": "p", "kind": "bug", "score_in": "first_line",
                       "must_find": [{"regex": rf"^\W*fault:\s*line\s*(?:{line})\b", "label": f"fault: line {line}"}],
                       "must_not_claim": ["no fault"], **extra}, "b")


def control():
    return check_task({"id": "c", "prompt": "p", "kind": "control", "score_in": "first_line",
                       "must_find": [{"any_of": ["no fault"]}], "must_not_claim": [{"regex": r"^\W*fault:\s*line"}]},
                      "c")


def claim(truth: bool):
    said, other = ("verdict: true", "verdict: false") if truth else ("verdict: false", "verdict: true")
    return check_task({"id": "k", "prompt": "p", "shape": "claim", "must_find": [{"any_of": [said]}],
                       "must_not_claim": [other], "score_in": "first_line", "min_answer_chars": 10}, "k")


def hand_built(**extra):
    return check_task({"id": "h", "prompt": "Review this", "must_find": ["race in refresh"],
                       "must_not_claim": ["sql injection", "memory leak"], **extra}, "h")


def test_a_bug_found_on_its_line():
    s = scoring.score_answer(bug(), "**FAULT: line 177**\n" + EXPLAIN)
    assert (s.scored, s.outcome, s.found, s.named_line) == (True, "found", True, 177)
    assert (s.chances, s.wrong, s.invented) == (1, 0, 0)


def test_a_bug_named_on_another_line_is_a_wrong_line_and_confidently_wrong():
    s = scoring.score_answer(bug(), "FAULT: line 1\n" + EXPLAIN)
    assert (s.outcome, s.found, s.named_line, s.chances, s.wrong) == ("wrong line", False, 1, 1, 1)


def test_line_numbers_match_whole_numbers_only():
    assert scoring.score_answer(bug(17), "FAULT: line 177\n" + EXPLAIN).outcome == "wrong line"
    assert scoring.score_answer(bug(177), "FAULT: line 17\n" + EXPLAIN).outcome == "wrong line"


def test_a_bug_answered_no_fault_is_missed_not_wrong():
    s = scoring.score_answer(bug(), "NO FAULT\n" + EXPLAIN)
    assert (s.outcome, s.wrong, s.invented, s.chances) == ("missed", 0, 0, 1)


def test_only_the_first_line_counts_with_score_in_first_line():
    s = scoring.score_answer(bug(), "I looked closely at everything here.\nFAULT: line 177\n" + EXPLAIN)
    assert s.outcome == "missed"
    free = bug(score_in=None)
    assert scoring.score_answer(free, "I looked closely.\nFAULT: line 177\n" + EXPLAIN).outcome == "found"


def test_a_control_answered_no_fault_is_clean():
    s = scoring.score_answer(control(), "NO FAULT\n" + EXPLAIN)
    assert (s.outcome, s.chances, s.wrong, s.expects) == ("clean", 1, 0, "clean")


def test_a_control_answered_with_a_fault_is_a_false_alarm():
    s = scoring.score_answer(control(), "FAULT: line 3\n" + EXPLAIN)
    assert (s.outcome, s.invented, s.chances, s.wrong) == ("false alarm", 1, 1, 1)


def test_a_control_answered_off_format_is_missed_not_a_false_alarm():
    s = scoring.score_answer(control(), "The code reads fine to me, with one doubt about naming." + EXPLAIN)
    assert (s.outcome, s.wrong) == ("missed", 0)


def test_true_and_false_claims():
    assert scoring.score_answer(claim(True), "VERDICT: TRUE\nline 3 says so").outcome == "found"
    true_denied = scoring.score_answer(claim(True), "VERDICT: FALSE\nline 3 says not")
    assert (true_denied.outcome, true_denied.wrong, true_denied.chances) == ("missed", 0, 0)
    assert scoring.score_answer(claim(False), "VERDICT: FALSE\nline 3 says not").outcome == "clean"
    fooled = scoring.score_answer(claim(False), "VERDICT: TRUE\nline 3 says so")
    assert (fooled.outcome, fooled.wrong, fooled.chances) == ("false alarm", 1, 1)


def test_invented_claims_respect_the_negation_window():
    task = hand_built()
    text = "The race in refresh is real. There is no SQL injection anywhere in this module, as far as I see."
    s = scoring.score_answer(task, text)
    assert (s.outcome, s.invented, s.chances, s.wrong) == ("found", 0, 2, 0)
    s = scoring.score_answer(task, "The race in refresh is real. Worse, the query has an SQL injection in it.")
    assert (s.outcome, s.invented, s.invented_claims, s.wrong) == ("found", 1, ("sql injection",), 1)


def test_a_negation_in_another_sentence_or_too_far_back_does_not_count():
    task = hand_built()
    other_sentence = "The race in refresh is not small. An SQL injection sits in build_query as well."
    assert scoring.score_answer(task, other_sentence).invented == 1
    far = "No doubt the race in refresh matters, and then beyond that and after a long stretch, an sql injection too."
    assert scoring.score_answer(task, far).invented == 1


@pytest.mark.parametrize("phrase", ["isn't", "doesn't", "never", "without", "cannot"])
def test_negation_words(phrase: str):
    text = f"The race in refresh is real; the code {phrase} leak or open an sql injection here, I checked."
    assert scoring.score_answer(hand_built(), text).invented == 0


def test_a_trap_only_task_is_clean_when_no_trap_is_claimed():
    task = check_task({"id": "t", "prompt": "p", "must_not_claim": ["sql injection"]}, "t")
    assert task.expects == "clean"
    assert scoring.score_answer(task, "Everything here is parameterised; nothing to worry about at all.").outcome == "clean"
    assert scoring.score_answer(task, "This has an SQL injection in the query builder, line 4.").outcome == "false alarm"


@pytest.mark.parametrize(("answer", "reason"), [
    ("NO FAULT", "too short"),
    ("", "too short"),
    ("   \n  ", "too short"),
    ("I'm sorry, but I can't help with reviewing this code.", "refusal"),
    ("I cannot assist with that request, it goes against my guidelines.", "refusal"),
    ("You are out of credits. Add credits to keep using this model.", "notice"),
    ("Rate limit exceeded: free-tier limit reached, please try again later.", "notice"),
])
def test_unusable_answers_are_not_a_score(answer: str, reason: str):
    for task in (bug(), control()):
        s = scoring.score_answer(task, answer)
        assert (s.scored, s.outcome, s.reason) == (False, None, reason)
        assert (s.chances, s.wrong, s.found) == (0, 0, False)


def test_a_long_answer_that_mentions_limits_is_still_scored():
    text = "FAULT: line 177\nThe rate limit check uses <= so one request too many gets through. " * 8
    assert len(text) > scoring.NOTICE_MAX
    assert scoring.score_answer(bug(), text).outcome == "found"


def test_a_short_review_that_mentions_quota_words_is_not_a_notice():
    text = "FAULT: line 177\nThe capacity check is off by one against the api key count."
    assert scoring.score_answer(bug(), text).outcome == "found"


def test_min_answer_chars_is_the_tasks():
    assert scoring.score_answer(claim(True), "TRUE, yes").reason == "too short"  # 9 of the claim's 10
    assert scoring.score_answer(claim(True), "VERDICT: TRUE").outcome == "found"  # 13: enough for a claim
    assert scoring.score_answer(bug(), "FAULT: line 177, see above").reason == "too short"  # 26 of 40


def test_timeouts_and_errors_are_not_a_score():
    for status, reason in (("timeout", "timeout"), ("error", "error")):
        s = scoring.failure(bug(), status, "no answer in 420 s")
        assert (s.scored, s.outcome, s.reason) == (False, None, reason)


def test_format_rules():
    task = hand_built(format={"table": True, "min_rows": 2, "min_chars": 50, "must_not_contain": ["as an ai"]})
    table = ("| where | what |\n|---|---|\n| refresh() | the race in refresh |\n| load() | fine |\n"
             "That is all I found.")
    assert scoring.score_answer(task, table).outcome == "found"
    one_row = "| where | what |\n|---|---|\n| refresh() | the race in refresh |\nThat is all I found here, really."
    s = scoring.score_answer(task, one_row)
    assert (s.outcome, s.detail) == ("missed", "format: 1 table rows, the task wants 2")
    assert scoring.score_answer(task, "As an AI I see the race in refresh, clearly, and nothing more.").outcome == "missed"


def test_must_not_claim_in_table_reads_only_the_rows():
    task = hand_built(must_not_claim_in="table")
    text = ("An SQL injection is what people fear here, but look:\n| where | what |\n|---|---|\n"
            "| refresh() | the race in refresh |")
    assert scoring.score_answer(task, text).invented == 0
    text += "\n| query() | sql injection |"
    assert scoring.score_answer(task, text).invented == 1


def test_table_rows_leave_out_headers_and_rules():
    assert scoring.table_rows("| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |") == ["| 1 | 2 |", "| 3 | 4 |"]
