"""Task folders: the reference's format read unchanged, bad tasks named with what is wrong, the pack
and the data folder together, prompts with their attached files, drafts and promotion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.suite import library
from benchwarmers_mcp.suite.tasks import TaskProblem, check_task, task_json

REFERENCE_CLAIM = {
    "id": "claim-cache-ttl", "title": "The cache honours its TTL", "why": "a real claim from a review",
    "prompt": "Hypothesis about the attached code: entries expire after ttl seconds. Your first line must be exactly "
              "`VERDICT: TRUE` or `VERDICT: FALSE`. Then quote the line or lines that decide it and explain in at "
              "most five sentences.",
    "shape": "claim", "attach": ["src/cache.py"], "must_find": [{"any_of": ["verdict: true"]}],
    "must_not_claim": ["verdict: false"], "score_in": "first_line", "min_answer_chars": 10,
    "mined_from": "p20260101-120000-ab12.member1", "output": "kept, not read",
}


def write(root: Path, task_id: str, raw: object, fixtures: dict[str, str] | None = None) -> Path:
    folder = root / task_id
    (folder / "fixtures").mkdir(parents=True, exist_ok=True)
    (folder / "task.json").write_text(raw if isinstance(raw, str) else json.dumps(raw))
    for name, text in (fixtures or {}).items():
        (folder / "fixtures" / name).write_text(text)
    return folder


def test_a_reference_task_loads_unchanged_and_round_trips():
    task = check_task(REFERENCE_CLAIM, "claim-cache-ttl")
    assert (task.shape, task.expects, task.min_answer_chars, task.score_in) == ("claim", "find", 10, "first_line")
    assert task.extra == {"output": "kept, not read"}
    again = check_task(task_json(task), "claim-cache-ttl")
    assert again == task


@pytest.mark.parametrize(("raw", "words"), [
    ({"prompt": "p", "must_find": [3]}, "must_find[0]: a clause is a phrase"),
    ({"prompt": "p", "must_find": [{"regex": "(unclosed"}]}, "does not compile"),
    ({"prompt": "p", "must_find": [{"any_of": []}]}, "any_of must be a non-empty list"),
    ({"prompt": "", "must_find": ["x"]}, "prompt: empty"),
    ({"must_find": ["x"]}, "prompt: missing"),
    ({"prompt": "p"}, "needs at least one clause"),
    ({"prompt": "p", "must_find": ["x"], "shape": "quiz"}, "shape: one of claim, seeded, rebench"),
    ({"prompt": "p", "must_find": ["x"], "score_in": "last_line"}, "score_in: only 'first_line'"),
    ({"prompt": "p", "must_find": ["x"], "min_answer_chars": "40"}, "min_answer_chars: must be a whole number"),
    ({"prompt": "p", "must_find": ["x"], "format": {"rows": 3}}, "format: unknown keys rows"),
    ({"prompt": "p", "must_find": ["x"], "attach": ["../etc/passwd"]}, "inside the repository"),
    ({"id": "other", "prompt": "p", "must_find": ["x"]}, "differs from its folder's name"),
    ({"prompt": "p", "must_find": ["x"], "draft": "yes"}, "draft: must be true or false"),
])
def test_a_bad_task_says_what_is_wrong(raw: dict, words: str):
    with pytest.raises(TaskProblem) as caught:
        check_task(raw, "t1")
    assert any(words in p for p in caught.value.problems), caught.value.problems


def test_every_problem_is_listed_at_once():
    with pytest.raises(TaskProblem) as caught:
        check_task({"prompt": 5, "must_find": [1, {"regex": "("}], "shape": "x"}, "t1")
    assert len(caught.value.problems) >= 4


def test_the_catalog_joins_pack_and_data_folder_and_the_data_folder_wins(tmp_path: Path):
    pack, home = tmp_path / "pack", tmp_path / "home"
    write(pack, "shared", {"title": "from the pack", "prompt": "p", "must_find": ["x"]})
    write(pack, "pack-only", {"prompt": "p", "must_find": ["x"]})
    data = library.tasks_dir(home)
    write(data, "shared", {"title": "mine", "prompt": "p", "must_find": ["x"]})
    write(data, "broken", "{not json")
    write(data, "draft-one", {"prompt": "p", "must_find": ["x"], "draft": True})
    catalog = library.catalog_sync(home, pack)
    assert catalog.entry("shared").origin == "data" and catalog.task("shared").title == "mine"
    assert catalog.entry("pack-only").origin == "pack"
    assert catalog.entry("broken").task is None and "not JSON" in catalog.entry("broken").problems[0]
    assert [t.id for t in catalog.live()] == ["pack-only", "shared"]
    with pytest.raises(BadRequest, match="cannot be used"):
        catalog.task("broken")


def test_prompts_attach_fixtures_and_repository_files(tmp_path: Path):
    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "cache.py").write_text("TTL = 30\n")
    data = library.tasks_dir(home)
    write(data, "from-fixture", {"prompt": "Look.", "attach": ["src/cache.py"], "must_find": ["x"]},
          {"cache.py": "TTL = 10\n"})
    write(data, "from-repo", {"prompt": "Look.", "repo": "app", "attach": ["src/cache.py"], "must_find": ["x"]})
    write(data, "missing", {"prompt": "Look.", "attach": ["nope.py"], "must_find": ["x"]})
    catalog = library.catalog_sync(home, tmp_path / "no-pack")
    assert library.prompt_sync(catalog.entry("from-fixture"), {}) == \
        "Look.\n\n===== FILE: src/cache.py =====\nTTL = 10\n"
    assert "TTL = 30" in library.prompt_sync(catalog.entry("from-repo"), {"app": str(repo)})
    with pytest.raises(TaskProblem, match="is not added"):
        library.prompt_sync(catalog.entry("from-repo"), {})
    with pytest.raises(TaskProblem, match="'nope.py' is not in missing/fixtures/"):
        library.prompt_sync(catalog.entry("missing"), {})


def test_written_tasks_are_whole_and_never_overwritten(tmp_path: Path):
    task = check_task({**REFERENCE_CLAIM, "draft": True}, "claim-cache-ttl")
    root = tmp_path / "tasks"
    library.write_sync(root, task, {"src/cache.py": "TTL = 1\n"})
    assert (root / "claim-cache-ttl" / "fixtures" / "src" / "cache.py").read_text() == "TTL = 1\n"
    with pytest.raises(BadRequest, match="exists already"):
        library.write_sync(root, task)
    assert [p.name for p in root.iterdir()] == ["claim-cache-ttl"]  # no staging folder left behind


def test_promote_turns_a_draft_live(tmp_path: Path):
    home = tmp_path / "home"
    write(library.tasks_dir(home), "d1", {"prompt": "p", "must_find": ["x"], "draft": True})
    pack = tmp_path / "pack"
    write(pack, "p1", {"prompt": "p", "must_find": ["x"]})
    assert library.promote_sync(home, "d1", pack).draft is False
    assert library.catalog_sync(home, pack).task("d1").draft is False
    with pytest.raises(BadRequest, match="not a draft"):
        library.promote_sync(home, "d1", pack)
    with pytest.raises(BadRequest, match="not a draft"):
        library.promote_sync(home, "p1", pack)
