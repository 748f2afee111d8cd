"""``benchwarmers serve --help`` and ``demo --help`` name every setting the server reads, each with
what it does, its default and an example (issue 31.7): the list is read off ``Settings`` itself,
so a variable added to the settings without words in the help fails here."""

from __future__ import annotations

import re
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from benchwarmers_mcp.cli import main as cli_main
from benchwarmers_mcp.cli import server_help
from benchwarmers_mcp.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
HOME = {"BENCHWARMERS_HOME": "/tmp/bench-help-home", "BENCHWARMERS_CONFIG": "/tmp/bench-help-config"}


def help_of(command: str) -> str:
    out = StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit) as done:
        cli_main.main([command, "--help"])
    assert done.value.code == 0
    return out.getvalue()


def test_every_variable_the_settings_read_has_words_and_no_other() -> None:
    read = server_help.variables()
    assert {"BENCH_PORT", "BENCH_BIND", "BENCHWARMERS_HOME", "BENCHWARMERS_ADMIN_TOKEN"} <= set(read)
    assert sorted(server_help.ABOUT) == sorted(read)


@pytest.mark.parametrize("name", sorted(server_help.ABOUT))
def test_each_example_is_a_value_the_server_takes_for_that_setting(name: str) -> None:
    about = server_help.ABOUT[name]
    default = Settings.from_env(HOME)
    given = Settings.from_env({**HOME, name: about.example})
    assert getattr(given, about.field) != getattr(default, about.field), (name, about.field)


@pytest.mark.parametrize("command", ["serve", "demo", "gateway"])
def test_the_help_names_each_variable_with_its_default_and_an_example(command: str) -> None:
    text = help_of(command)
    shown = [name for name in server_help.variables() if name not in server_help.LEFT_OUT[command]]
    for name in shown:
        block = text.split(f"\n  {name}\n", 1)[1].split("\n  B", 1)[0]
        assert "default: " in block and f"e.g. {name}=" in block and f"benchwarmers {command}" in block, (name, block)
    assert "BENCHWARMERS_KEY_<NAME>" in text and "HTTPS_PROXY" in text and "examples:" in text
    assert "-h, --help" in text
    for name in server_help.LEFT_OUT[command]:
        assert f"\n  {name}\n" not in text and name in text  # named once, as left out
    if command == "gateway":
        assert "--port PORT" in text and "--bind ADDRESS" in text and "default 8123" in text
    else:
        assert "default: 8122" in text.split("\n  BENCH_PORT\n", 1)[1]


def test_cli_md_documents_every_server_setting() -> None:
    doc = (ROOT / "docs" / "CLI.md").read_text()
    section = doc.split("## Server settings", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([A-Z_]+)` \|", section, re.M))
    assert documented == set(server_help.variables())
