"""A fresh, non-editable install of the wheel sees the starter pack: built, installed into a new
virtual environment, served from there on an empty data folder and listed with its own ``bench``."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kits.servers import free_port, server_env, wait_healthy
from tests.kits.waits import START

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.e2e
@pytest.mark.xdist_group("wheel")  # builds in the checkout, as .ci/docker.sh up does (test_docker.py)
def test_a_fresh_pip_install_lists_the_starter_pack(tmp_path: Path):
    wheels, venv, home = tmp_path / "wheels", tmp_path / "venv", tmp_path / "home"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, ROOT, cwd=tmp_path)
    [wheel] = wheels.glob("benchwarmers-*.whl")
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel, cwd=tmp_path)
    # The wheel's own dependencies come from this environment's site-packages, listed after the new
    # environment's own (a .pth line adds a folder, not the editable install's finder inside it).
    target = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path).strip())
    (target / "zz_test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    where = run(python, "-c", "import benchwarmers_mcp; print(benchwarmers_mcp.__file__)", cwd=tmp_path)
    assert Path(where.strip()).is_relative_to(venv), where  # the installed copy, not this checkout

    port = free_port()
    env = server_env(home, port)
    with open(tmp_path / "server.log", "wb") as log:
        server = subprocess.Popen([str(python), "-m", "benchwarmers_mcp", "serve"], cwd=tmp_path, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, server)
        listing = json.loads(run(venv / "bin" / "bench", "suite", "list", "--json", "--url", base, cwd=tmp_path,
                                 env={**os.environ, "PYTHONPATH": ""}))
    finally:
        server.terminate()
        server.wait(timeout=START)
    assert listing["counts"]["pack"] >= 30 and listing["counts"]["data"] == 0
    pack = [t for t in listing["tasks"] if t["origin"] == "pack"]
    assert len(pack) >= 30 and {t["shape"] for t in pack} == {"seeded", "claim"}
    assert {t["kind"] for t in pack} >= {"bug", "control", "claim"} and listing["invalid"] == []
    assert not (home / "suite").exists()  # nothing was copied into the data folder to make this work
