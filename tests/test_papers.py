"""The project's own papers say what the code does (issue 31.12): the licence the packages name,
AGENTS.md's commands as the CLI parses them, PRIVACY.md's list of outbound requests against every
place the code sends one, SECURITY.md's section naming the sign-ins and hubs as built,
ROUTE.md and RATINGS.md on shadow seats as built, USAGE.md's table with every page the dashboard
registers, and the README's quick start and Limits."""

from __future__ import annotations

import ast
import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from benchwarmers_mcp.cli import client as cli_client
from benchwarmers_mcp.cli import main as cli_main
from benchwarmers_mcp.engine.shadow import shadow_call
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.web.registry import discover

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "src" / "benchwarmers_mcp", ROOT / "gateway", ROOT / "web", ROOT / "suite"]


def read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def code_lines(text: str) -> list[str]:
    """Every command line in the ```bash blocks, comments and continuation pipes left out."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #", 1)[0].strip()
            if line:
                lines.append(line)
    return lines


# ---- the licence -----------------------------------------------------------------------------------

def test_the_licence_is_the_mit_licence_the_packages_name() -> None:
    text = read("LICENSE")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 Wendell Research\n")
    assert "Permission is hereby granted, free of charge" in text and 'THE SOFTWARE IS PROVIDED "AS IS"' in text
    assert tomllib.loads(read("pyproject.toml"))["project"]["license"] == "MIT"
    assert json.loads(read("package.json"))["license"] == "MIT"


# ---- AGENTS.md ---------------------------------------------------------------------------------------

def test_agents_md_covers_what_an_agent_sets_up() -> None:
    text = read("AGENTS.md")
    headings = re.findall(r"^## (.+)$", text, re.M)
    for topic in ("keys", "Install", "data folder", "endpoint", "Collections", "Route mode", "Verdicts"):
        assert any(topic.lower() in h.lower() for h in headings), (topic, headings)
    assert "--key-stdin" in text and "never" in section(text, "## The rules about keys").lower()
    assert "AGENTS.md" in read("README.md")


def _commands(text: str) -> list[list[str]]:
    found = []
    for line in code_lines(text):
        for part in re.split(r"\s+(?:&&|\||>|&)(?:\s+|$)", line):
            part = re.sub(r"<[^<>]+>", "PLACEHOLDER", part)  # <served name>: one argument
            words = shlex.split(part) if part else []
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]  # VAR=value before the command
            if words and words[0] in ("bench", "benchwarmers"):
                found.append(words[1:])
    return found


@pytest.mark.parametrize("paper", ["AGENTS.md", "README.md"])
def test_every_command_in_the_paper_is_one_the_cli_takes(paper: str) -> None:
    commands = _commands(read(paper))
    assert len(commands) >= 8
    for args in commands:
        if not args or args[0] in cli_main.SERVER_COMMANDS or args[0] in ("--version", "-v"):
            cli_main.server_parser().parse_args(args or ["serve"])
        else:
            try:
                cli_client.build_parser().parse_args(args)
            except SystemExit as e:
                raise AssertionError(f"{paper}: the CLI refuses {' '.join(args)!r}") from e


# ---- PRIVACY.md and SECURITY.md ---------------------------------------------------------------------

# Every module that sends a request out of the machine, and the PRIVACY.md row that says so. The
# clients of our own server (client.py: the CLI and stdio MCP) and the constructor of the shared
# outbound client (app.py) and the transport under it send nothing of their own.
OUTBOUND = {
    "src/benchwarmers_mcp/providers/http.py": "Model calls",
    "src/benchwarmers_mcp/upstream/listing.py": "Model listings",
    "src/benchwarmers_mcp/catalog/feeds.py": "Catalog refresh",
    "suite/rebench.py": "Real-bug tasks",
    "src/benchwarmers_mcp/upstream/connect/oauth.py": "Sign-ins",
    "src/benchwarmers_mcp/upstream/hubs/base.py": "Hub admin APIs",
}
OWN_SERVER = {"src/benchwarmers_mcp/client.py", "src/benchwarmers_mcp/app.py",
              "src/benchwarmers_mcp/upstream/transport.py"}  # the sockets under the shared client
SENDS = re.compile(r"\b(?:client|_http)\.(get|post|put|send|stream|request)\(|httpx\.(AsyncClient|Client|get|post|"
                   r"stream)\(|urlopen\(|open_connection\(|create_connection\(")


def test_privacy_md_names_every_place_the_code_sends_a_request() -> None:
    senders = set()
    for folder in SOURCES:
        for path in folder.rglob("*.py"):
            if "pack" in path.parts:
                continue  # the suite's starter pack: review tasks, not the product's code
            if SENDS.search(path.read_text(encoding="utf-8")):
                senders.add(path.relative_to(ROOT).as_posix())
    assert senders - OWN_SERVER == set(OUTBOUND), "a new outbound request: say it in PRIVACY.md and here"
    privacy = read("PRIVACY.md")
    rows = {m.group(1) for m in re.finditer(r"^\| \*\*(.+?)\*\* \|", privacy, re.M)}
    assert set(OUTBOUND.values()) <= rows
    defaults = Settings.from_env({"BENCHWARMERS_HOME": "/tmp/unused"})
    assert defaults.catalog_models_dev_url in privacy and defaults.catalog_openrouter_url in privacy
    assert "BENCH_CATALOG_FREELLMAPI_URL" in privacy and "telemetry" in privacy


def test_the_transport_that_sends_them_is_the_shared_client() -> None:
    tree = ast.parse((ROOT / "src/benchwarmers_mcp/app.py").read_text())
    made = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "AsyncClient"]
    assert len(made) == 1  # one outbound client, the one PRIVACY.md describes (no redirects followed)
    assert "follow_redirects=False" in ast.unparse(made[0])


def test_security_md_names_sign_ins_and_hubs_and_points_to_privacy_md() -> None:
    leaves = section(read("docs/SECURITY.md"), "## What leaves the machine")
    assert "PRIVACY.md" in leaves
    assert "provider sign-ins, only when you start one" in leaves and "a hub's admin API" in leaves
    assert "no provider sign-in pages" not in leaves and "Keys, not sign-ins" not in read("README.md")


# ---- ROUTE.md and RATINGS.md ---------------------------------------------------------------------------

def test_route_md_and_ratings_md_both_describe_shadow_seats_as_built() -> None:
    route, ratings = read("docs/ROUTE.md"), read("docs/RATINGS.md")
    for text in (route, ratings):
        assert not re.search(r"[Ss]hadows?[^.]*\bnot (yet )?built", text)
        assert "<conversation>.s<turn>" in text and "shadow_calls" in text and "bench settings learning --shadow" in text
        assert "never reaches the agent" in text or "never sees that answer" in text
    assert shadow_call("r20261130-101500-ab12", 4) == "r20261130-101500-ab12.s4"
    assert "## Shadow seats" in route and "(ROUTE.md#shadow-seats)" in ratings
    args = cli_client.build_parser().parse_args(["settings", "learning", "--shadow", "core:on"])
    assert args.section == "learning"


# ---- USAGE.md ---------------------------------------------------------------------------------------------

def test_usage_md_has_a_row_for_every_page_and_the_scheduler() -> None:
    table = section(read("docs/USAGE.md"), "## Pages")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| \*\*(.+?)\*\*.*$", table, re.M)}
    pages = discover()
    assert len(pages) >= 13
    for page in pages:
        assert page.title in rows, f"USAGE.md's page table has no row for {page.title}"
        if page.path != "/" and f"(`{page.path}`)" not in rows[page.title]:
            assert page.title in ("Collections", "Quotas", "Logs", "Settings", "Info"), page.title
    assert "(`/health-checks`)" in rows["Health"]
    template = (ROOT / "web" / "templates" / "settings.html").read_text()
    assert ">Scheduler</h2>" in template and "scheduler" in rows["Settings"].lower()


# ---- the README -----------------------------------------------------------------------------------------

def test_the_quick_start_makes_and_enters_a_virtual_environment_in_one_line() -> None:
    quick = section(read("README.md"), "## Quick start")
    [line] = code_lines(quick.split("```", 2)[0] + "```" + quick.split("```", 2)[1] + "```")
    steps = [s.strip() for s in line.split("&&")]
    assert steps[0].startswith("python3 -m venv ") and steps[1].startswith(". ") and steps[1].endswith("/bin/activate")
    assert steps[2] == "python -m pip install ." and steps[3] == "benchwarmers demo"
    assert "externally-managed-environment" in quick


def test_the_suite_time_is_the_measured_one() -> None:
    readme = " ".join(read("README.md").split())
    said = readme[readme.index("The whole test suite"):readme.index('python -m pip install -e ".[test]"')]
    assert "measured: 562 s in CI, and about 35 minutes on a 2-core machine" in said, said
    assert not re.search(r"about \d+ minutes\)|SUITE_TIME", said), said


def test_the_readme_has_a_limits_section_and_the_papers_in_its_table() -> None:
    readme = read("README.md")
    limits = section(readme, "## Limits")
    assert len(re.findall(r"^- \*\*", limits, re.M)) >= 6
    for page in ("AGENTS.md", "PRIVACY.md", "LICENSE"):
        assert f"({page})" in readme
