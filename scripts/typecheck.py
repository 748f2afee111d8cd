"""Type-check the package strictly: ``python scripts/typecheck.py`` (extra arguments go to mypy).

The package is installed from three folders (``src/benchwarmers_mcp``, ``gateway/``, ``web/`` and
``suite/`` mapped in by ``package-dir``), which mypy cannot follow from the source tree. This
builds the installed layout as a tree of symbolic links under ``build/typecheck`` and runs
``mypy --strict`` on it with the settings in ``pyproject.toml``; errors name the real files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "typecheck"
MAPPED = {"gateway": ROOT / "gateway", "web": ROOT / "web", "suite": ROOT / "suite"}


def build_tree() -> Path:
    package = TREE / "benchwarmers_mcp"
    if TREE.exists():
        shutil.rmtree(TREE)
    package.mkdir(parents=True)
    for entry in (ROOT / "src" / "benchwarmers_mcp").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in MAPPED.items():
        (package / name).symlink_to(folder)
    return package


def main(argv: list[str]) -> int:
    build_tree()
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "-p", "benchwarmers_mcp", *argv]
    env = {**os.environ, "MYPYPATH": str(TREE)}
    done = subprocess.run(command, cwd=TREE, env=env, check=False, capture_output=True, text=True)
    # name the real files, not the links
    for line in (done.stdout + done.stderr).splitlines():
        path, sep, rest = line.partition(":")
        real = (TREE / path).resolve() if sep and path and (TREE / path).exists() else None
        print(f"{real.relative_to(ROOT)}:{rest}" if real and real.is_relative_to(ROOT) else line)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
