"""The ten mutation kinds and the reference's exclusions, on small sources."""

from __future__ import annotations

import ast
import textwrap

import pytest

from benchwarmers_mcp.suite import mutate

SOURCE = textwrap.dedent('''\
    import logging
    import time

    log = logging.getLogger(__name__)


    def scan(items, limit, step=2):
        total = 0
        if not items:
            return False
        for i in range(limit):
            if items[i] < 0 and i > 1:
                continue
            if items[i] == 9 or step:
                break
            total += items[i]
            total *= 2
            record(items, i)
        tail = items[i:]
        log.info("scanned %d", total)
        time.sleep(1)
        print("done", 3)
        notify(total, limit, flag=1)
        return True
        dead = 1 < 2


    def record(a, b):
        pass


    if __name__ == "__main__":
        scan([1, 2], 5 < 6)
    ''')


def sites(kinds=mutate.ALL_KINDS):
    return mutate.sites(SOURCE, 1, len(SOURCE.splitlines()), kinds)


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if text in line)


@pytest.mark.parametrize(("kind", "where", "becomes"), [
    ("compare", "items[i] < 0", "items[i] <= 0 and i > 1"),
    ("boolop", "items[i] < 0", "items[i] < 0 or i > 1"),
    ("return-bool", "return False", "return True"),
    ("number", "total = 0", "total = 1"),
    ("not", "if not items", "if items:"),
    ("args", "record(items, i)", "record(i, items)"),
    ("off-by-one", "range(limit)", None),
    ("off-by-one", "tail = items[i:]", "items[i + 1:]"),
    ("break-continue", "continue", "break"),
    ("augassign", "total += items", "total -= items[i]"),
    ("augassign", "total *= 2", "total /= 2"),
])
def test_each_kind_plants_one_line_that_still_parses(kind: str, where: str, becomes: str | None):
    line = line_of(where)
    found = [m for m in sites([kind]) if m.line == line]
    assert found, f"no {kind} site on line {line}"
    if becomes is not None:
        assert any(becomes in (m.new_text or "") for m in found), [m.new_text for m in found]
    for m in found:
        mutated = mutate.apply(SOURCE, m)
        ast.parse(mutated)
        before, after = SOURCE.splitlines(), mutated.splitlines()
        assert len(before) == len(after)
        assert [i for i, (a, b) in enumerate(zip(before, after, strict=True), 1) if a != b] == [line]


def test_off_by_one_on_range_takes_one_of_its_two_forms():
    found = [m for m in sites(["off-by-one"]) if m.line == line_of("range(limit)")]
    assert found[0].new_text is not None
    assert "range(limit - 1)" in found[0].new_text or "range(1, limit)" in found[0].new_text


def test_remove_call_deletes_the_line_or_leaves_pass():
    deleted = [m for m in sites(["remove-call"]) if m.line == line_of("record(items, i)")]
    assert deleted and deleted[0].deletes
    mutated = mutate.apply(SOURCE, deleted[0])
    assert len(mutated.splitlines()) == len(SOURCE.splitlines()) - 1
    lonely = "def f(x):\n    g(x)\n"
    [m] = mutate.sites(lonely, 1, 2, ["remove-call"])
    assert mutate.apply(lonely, m) == "def f(x):\n    pass\n"


def test_nothing_is_planted_where_the_reference_says_never():
    lines = {m.line for m in sites()}
    for never in ('log.info("scanned', "time.sleep(1)", 'print("done", 3)', "dead = 1 < 2", "scan([1, 2], 5 < 6)"):
        assert line_of(never) not in lines, never
    notify = [m for m in sites() if m.line == line_of("notify(total")]
    assert notify and all("flag=1" in (m.new_text or "flag=1") for m in notify)  # the keyword argument is left


def test_no_swap_in_commutative_calls():
    source = "def f(a, b):\n    return max(a, b) + min(a, b) + pow(a, b)\n"
    swaps = mutate.sites(source, 1, 2, ["args"])
    assert [m.detail for m in swaps] == ["a, b -> b, a"] and "pow(b, a)" in (swaps[0].new_text or "")


def test_only_the_lines_asked_for():
    assert all(10 <= m.line <= 12 for m in mutate.sites(SOURCE, 10, 12))


def test_a_mutation_that_breaks_or_changes_nothing_is_refused():
    with pytest.raises(mutate.Mutant, match="does not parse"):
        mutate.apply("x = 1\n", mutate.Mutation("number", 1, "x = = 1", "broken"))
    with pytest.raises(mutate.Mutant, match="changes nothing"):
        mutate.apply("x = 1\n", mutate.Mutation("number", 1, "x = 1  # same", "same"))


def test_unknown_kinds_are_refused():
    with pytest.raises(ValueError, match="unknown mutation kinds: swap"):
        mutate.sites(SOURCE, 1, 5, ["swap"])
