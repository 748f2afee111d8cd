"""The npm package installs both commands the Python package does (issue 31.12): ``benchwarmers``
and ``bench``, each the same program, with the licence in the package. Packed by the real
``npm pack`` and installed from the tarball by ``npm install -g --prefix`` (offline: it has no
dependencies), then run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchwarmers_mcp import __version__
from tests.kits.ports import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("npm")]
ROOT = Path(__file__).resolve().parents[2]


def npm() -> str:
    path = shutil.which("npm")
    assert path, "npm is needed for the package tests (the CI installs node and npm)"
    return path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("npm")
    packed = subprocess.run([npm(), "pack", str(ROOT), "--json", "--pack-destination", str(work)],
                            capture_output=True, text=True, timeout=300, check=True, cwd=work)
    [about] = json.loads(packed.stdout)
    files = {f["path"] for f in about["files"]}
    assert {"bin/benchwarmers.js", "bin/bench.js", "package.json", "LICENSE"} <= files, files
    prefix = work / "prefix"
    subprocess.run([npm(), "install", "-g", "--prefix", str(prefix), "--offline", "--no-audit", "--no-fund",
                    str(work / about["filename"])], capture_output=True, text=True, timeout=300, check=True, cwd=work)
    return prefix / "bin"


def run(program: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWARMERS_", "BENCH_"))}
    env["BENCHWARMERS_PYTHON"] = sys.executable
    return subprocess.run([str(program), *args], capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


def test_package_json_names_both_commands() -> None:
    package = json.loads((ROOT / "package.json").read_text())
    assert package["bin"] == {"benchwarmers": "bin/benchwarmers.js", "bench": "bin/bench.js"}
    for script in package["bin"].values():
        assert os.access(ROOT / script, os.X_OK) and (ROOT / script).read_text().startswith("#!/usr/bin/env node")


@pytest.mark.parametrize("name", ["benchwarmers", "bench"])
def test_the_installed_package_runs_both(installed: Path, name: str) -> None:
    program = installed / name
    assert program.exists(), sorted(p.name for p in installed.iterdir())
    version = run(program, "--version")
    assert (version.returncode, version.stdout.strip()) == (0, f"benchwarmers {__version__}")
    nobody = run(program, "status", "--url", f"http://127.0.0.1:{free_port()}")
    assert nobody.returncode == 3 and "no Benchwarmers server at" in nobody.stderr
