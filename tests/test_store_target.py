"""What may name the store, and its password never shown: a ``postgresql://`` URL that reads one way
only or the path of a SQLite file is opened; anything else (libpq's ``host=... password=...``, a URL
whose password's ``/``, ``@``, ``?`` or ``#`` is not percent-encoded, another scheme, a line break)
is refused before any file is made, with the password masked; and a password in any form (the URL's
user part, encoded or not, a ``password=`` parameter, a keyword/value string, quoted or not) is
``***`` wherever the store is named: ``/api/status``, ``bench status`` and the Info page, on both
backends (the start-up line: ``e2e/test_start_store_target.py``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchwarmers_mcp.settings import BadSettings, Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store.db import StoreUnavailable, describe_target, mask_url
from tests.kits.cli import run_in_process
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback

SECRET = "Hunter2-Secret"


def pieces(password: str) -> list[str]:
    """The password's runs of letters, digits and dashes, four characters or longer: what must not show."""
    import re

    return [p for p in re.split(r"[^A-Za-z0-9-]", password) if len(p) >= 4]


@pytest.mark.parametrize(("target", "shown"), [
    (f"postgresql://bench:{SECRET}@db:5432/bw", "postgresql://bench:***@db:5432/bw"),
    (f"postgresql://bench:pa/{SECRET}@db/bw", "postgresql://bench:***@db/bw"),  # '/' not percent-encoded
    (f"postgresql://bench:pa@{SECRET}@db/bw", "postgresql://bench:***@db/bw"),  # '@'
    (f"postgresql://bench:pa#{SECRET}@db/bw", "postgresql://bench:***@db/bw"),  # '#'
    (f"postgresql://bench:pa?{SECRET}@db/bw", "postgresql://bench:***@db/bw"),  # '?'
    (f"postgres://:{SECRET}@db/bw", "postgres://:***@db/bw"),
    (f"postgresql://bench:pa%2F{SECRET}@db/bw?sslmode=require&password={SECRET}&sslpassword={SECRET}x",
     "postgresql://bench:***@db/bw?sslmode=require&password=***&sslpassword=***"),
    (f"host=db user=bench password={SECRET} dbname=bw", "host=db user=bench password=*** dbname=bw"),
    (f"host=db password = '{SECRET} with spaces' user=bench", "host=db password = *** user=bench"),
    (f"host=db password='{SECRET}", "host=db password=***"),  # a quote never closed
    (f"postgresql:bench:{SECRET}@db/bw", "postgresql:bench:***@db/bw"),  # no '//'
    (f"mysql://root:{SECRET}@db/bw", "mysql://root:***@db/bw"),
    ("C:\\data\\bench.db", "C:\\data\\bench.db"), ("/data/a:b@c.db", "/data/a:b@c.db"),  # paths
])
def test_a_password_is_masked_in_any_form(target: str, shown: str) -> None:
    assert mask_url(target) == shown
    where = describe_target(target)
    assert not any(p in repr(where) for p in pieces(SECRET)), where


@pytest.mark.parametrize(("target", "why"), [
    (f"host=db user=bench password={SECRET} dbname=bw", "keyword/value"),
    (f"dbname=bw password={SECRET}", "keyword/value"),
    (f"postgresql://bench:pa/{SECRET}@db/bw", "percent-encoded"),
    (f"postgresql://bench:p@{SECRET}@db/bw", "percent-encoded"),
    (f"postgresql://bench:p?{SECRET}@db/bw", "percent-encoded"),
    (f"postgresql://bench:{SECRET}@db:99999/bw", "port"),
    (f"postgresql:bench:{SECRET}@db/bw", "postgresql://"),
    (f"mysql://root:{SECRET}@db/bw", "not a PostgreSQL URL"),
    (f"sqlite://bench:{SECRET}@/data/bench.db", "not a PostgreSQL URL"),
    (f"/data/bench.db\npassword={SECRET}", "control character"),
])
def test_what_is_neither_a_url_nor_a_path_is_refused(target: str, why: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a refused string must never become a file here
    with pytest.raises(StoreUnavailable) as caught:
        Database(target)
    assert why in caught.value.message and SECRET not in caught.value.message
    with pytest.raises(BadSettings) as bad:
        Settings.from_env({"BENCHWARMERS_DATABASE_URL": target}, home=tmp_path / "data")
    (line,) = bad.value.problems
    assert line.startswith("BENCHWARMERS_DATABASE_URL must be a PostgreSQL URL") and "SQLite file" in line
    assert why in line and SECRET not in line and "\n" not in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", [
    "postgresql://bench:pa%2Fss%40w%3Ford%23@db.internal:6543/bw?sslmode=require",
    "postgresql://bench:pa:ss@db/bw", "postgres://db/bw", "postgresql:///bw?host=/run/postgresql",
    "/data/bench.db", "relative/bench.db", "C:\\data\\bench.db", "/data/with=sign/bench.db",
])
def test_a_url_that_reads_one_way_and_a_path_are_accepted(target: str) -> None:
    assert Settings.from_env({"BENCHWARMERS_DATABASE_URL": target}, home=Path("/nowhere")).store_target == target


def test_an_encoded_password_is_described_by_its_parts() -> None:
    where = describe_target("postgresql://bench:pa%2Fss%40w@db.internal:6543/bw")
    assert (where["host"], where["port"], where["database"], where["user"]) == ("db.internal", 6543, "bw", "bench")
    assert where["url"] == "postgresql://bench:***@db.internal:6543/bw"


@pytest.mark.backends
def test_the_store_is_named_without_its_password(settings: Settings, home: Path, tmp_path: Path, net: Loopback,
                                                 store_backend: str) -> None:
    """PostgreSQL by a URL whose password is percent-encoded (the test cluster trusts loopback: a
    password is accepted and unused); SQLite by the path of a file outside the data folder."""
    password = "p%40ss%2Fw0rd-Sh0uld-never-show"
    if store_backend == "postgresql":
        assert settings.database_url is not None
        settings = replace(settings, database_url=settings.database_url.replace("postgres@", f"postgres:{password}@"))
    else:
        settings = replace(settings, database_url=str(tmp_path / "elsewhere.db"))
    gateway = serve_gateway(net, settings)
    with net.client(base_url=gateway) as http:
        status, info = http.get("/api/status"), http.get("/info")
    printed = run_in_process(net, gateway, "status")
    assert status.status_code == 200 and info.status_code == 200 and printed.returncode == 0, printed.stderr
    shown = [status.text, info.text, printed.stdout + printed.stderr]
    for text in shown:
        assert "w0rd-Sh0uld-never-show" not in text and "p@ss" not in text and "p%40ss" not in text, text
    store = status.json()["store"]
    if store_backend == "postgresql":
        assert store["url"].startswith("postgresql://postgres:***@127.0.0.1:")
        assert all("postgres:***@127.0.0.1" in text for text in shown)
    else:
        assert store["path"] == str(tmp_path / "elsewhere.db") and (tmp_path / "elsewhere.db").exists()
        assert all(str(tmp_path / "elsewhere.db") in text for text in shown), "Info names the store it opened"
        assert not (home / "benchwarmers.db").exists(), "the data folder's own file is not the store"
