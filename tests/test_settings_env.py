"""Every setting the environment gives is read by one parser (``settings.VARIABLES``), and a value
that cannot be used is refused before anything is made or bound: `benchwarmers serve` prints one
line naming the variable, the value (masked when it may hold a secret) and what is accepted, and
exits 2 (1 for a folder that cannot be used). Each variable of the table is tried with a bad value
here, in-process (``BENCH_SCHEDULER_TICK=abc`` through a real process: ``e2e/test_start_settings.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchwarmers_mcp import settings as settings_module
from benchwarmers_mcp.cli import main as cli_main
from benchwarmers_mcp.cli import server
from benchwarmers_mcp.settings import BadSettings, Settings

PASSWORD = "Hunter2-Secret"
FILE = "{file}"  # a file where a folder should be, made by the test

# variable: (a bad value, the exit code, words the line must hold); the value is quoted in it too,
# but for a secret (the admin token is never quoted; a database URL's password is masked)
BAD: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "BENCHWARMERS_HOME": (FILE, 1, ("is a file", "BENCHWARMERS_HOME")),
    "BENCHWARMERS_CONFIG": (FILE, 1, ("is a file", "BENCHWARMERS_CONFIG")),
    "BENCH_BIND": ("not..an..address", 2, ("not an address",)),
    "BENCH_PORT": ("abc", 2, ("a port number from 1 to 65535",)),
    "BENCHWARMERS_ADMIN_TOKEN": ("short", 2, ("shorter than 16",)),
    "BENCHWARMERS_PUBLIC_URL": ("http://[bench.example", 2, ("http(s)://host[:port]",)),
    "BENCH_ALLOWED_HOSTS": ("good.example, bad host!", 2, ("host names", "'bad host!'")),
    "BENCH_ALLOWED_ORIGINS": ("https://app.example, *", 2, ("origins like", "never allowed")),
    "BENCHWARMERS_REQUIRE_KEYS": ("ture", 2, ("on or off",)),
    "BENCH_SEAT_TIMEOUT": ("soon", 2, ("seconds above 0",)),
    "BENCH_SEAT_WAIT": ("-3", 2, ("seconds above 0",)),
    "BENCH_ROUTE_FIRST_TOKEN": ("-1", 2, ("seconds above 0",)),
    "BENCH_ROUTE_TURN_TIMEOUT": ("inf", 2, ("seconds above 0",)),
    "BENCH_KEEP_ALIVE_TIMEOUT": ("nan", 2, ("seconds above 0",)),
    "BENCH_HEAD_TIMEOUT": ("0", 2, ("seconds above 0",)),
    "BENCH_BODY_TIMEOUT": ("2 minutes", 2, ("seconds above 0",)),
    "BENCH_CATALOG_MODELS_DEV_URL": ("ftp://models.example/api.json", 2, ("http(s):// URL",)),
    "BENCH_CATALOG_OPENROUTER_URL": ("openrouter.ai/api/v1/models", 2, ("http(s):// URL",)),
    "BENCH_CATALOG_FREELLMAPI_URL": ("http://[feed", 2, ("http(s):// URL",)),
    "BENCH_SCHEDULER_TICK": ("abc", 2, ("seconds from 0.1",)),
    "BENCHWARMERS_DATABASE_URL": (f"host=db user=bench password={PASSWORD}", 2,
                                  ("PostgreSQL URL", "SQLite file", "keyword/value", "password=***")),
}
SECRETS = {"BENCHWARMERS_ADMIN_TOKEN", "BENCHWARMERS_DATABASE_URL"}


def test_every_variable_has_a_bad_value_tried() -> None:
    assert sorted(BAD) == sorted(v.name for v in settings_module.VARIABLES)


def _serve(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], env: dict[str, str]) -> tuple[int, str]:
    """``benchwarmers serve`` in-process with ``env`` as its whole BENCH*/BENCHWARMERS* environment,
    which must refuse before it binds; its exit code and stderr."""
    for name in list(os.environ):
        if name.startswith(("BENCH_", "BENCHWARMERS_")):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def bound(settings: Settings) -> None:
        raise AssertionError(f"it went on to bind: {settings!r}")

    monkeypatch.setattr(server, "bind_socket", bound)
    code = cli_main.main(["serve"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_is_one_line_naming_it(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    value, code, words = BAD[name]
    if value == FILE:
        (tmp_path / "a-file").write_text("not a folder")
        value = str(tmp_path / "a-file")
    home = tmp_path / "data"
    env = {"BENCHWARMERS_HOME": str(home), "BENCHWARMERS_CONFIG": str(tmp_path / "config"), name: value}
    exited, err = _serve(monkeypatch, capsys, env)
    lines = err.strip().splitlines()
    assert exited == code and len(lines) == 1 and "Traceback" not in err, err
    line = lines[0]
    assert line.startswith("benchwarmers: ") and name in line, line
    for word in words:
        assert word in line, (word, line)
    if name in SECRETS:
        assert PASSWORD not in line and "'short'" not in line, line
    elif name not in ("BENCHWARMERS_HOME", "BENCHWARMERS_CONFIG"):
        assert repr(value.strip())[1:-1] in line or repr(value.split(",")[-1].strip())[1:-1] in line, line
    assert not home.exists() and not (tmp_path / "config").exists(), "nothing was made before the refusal"


def test_every_refusal_is_said_at_once() -> None:
    with pytest.raises(BadSettings) as caught:
        Settings.from_env({"BENCH_SCHEDULER_TICK": "abc", "BENCH_PORT": "70000", "BENCHWARMERS_REQUIRE_KEYS": "maybe"})
    assert caught.value.problems == [
        "BENCH_PORT must be a port number from 1 to 65535, not '70000'",
        "BENCHWARMERS_REQUIRE_KEYS must be on or off (1, true, yes or on; 0, false, no or off), not 'maybe'",
        "BENCH_SCHEDULER_TICK must be a number of seconds from 0.1 up, not 'abc'",
    ]


def test_good_values_are_read_as_before() -> None:
    s = Settings.from_env({"BENCH_SCHEDULER_TICK": "0.2", "BENCH_PORT": " 9000 ", "BENCHWARMERS_REQUIRE_KEYS": "Off",
                           "BENCH_CATALOG_OPENROUTER_URL": "", "BENCH_CATALOG_FREELLMAPI_URL": "https://feed.example/x",
                           "BENCH_ALLOWED_HOSTS": "a.example, b.example:8443", "BENCHWARMERS_ADMIN_TOKEN": "   ",
                           "BENCHWARMERS_PUBLIC_URL": "https://bench.example.com", "BENCH_SEAT_TIMEOUT": "1.5"},
                          home=Path("/nowhere"))
    assert (s.scheduler_tick, s.port, s.require_keys, s.seat_timeout) == (0.2, 9000, False, 1.5)
    assert s.catalog_openrouter_url == "" and s.catalog_freellmapi_url == "https://feed.example/x"
    assert s.catalog_models_dev_url == "https://models.dev/api.json", "unset: the default"
    assert s.allowed_hosts == ("a.example", "b.example:8443") and s.admin_token == ""  # spaces only: set, too short
    assert Settings.from_env({"BENCHWARMERS_REQUIRE_KEYS": "yes"}).require_keys
    assert Settings.from_env({"BENCHWARMERS_ADMIN_TOKEN": ""}).admin_token is None
