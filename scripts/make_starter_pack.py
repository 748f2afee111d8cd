"""Regenerate the suite's starter pack (``suite/pack/``) from this interpreter's standard library.

    python scripts/make_starter_pack.py [--seed 17] [--out suite/pack] [--pairs 12] [--claims 8]

Bug/control pairs are planted in functions of pure-Python standard library modules, read from
the running interpreter's own source files and frozen into the tasks; claims (half true, half
false) are about functions whose code is frozen into each task's fixtures. The same seed on the
same Python version writes the same bytes. The code is the Python Software Foundation's, under
the PSF License Agreement: the script copies that licence beside the pack.
"""

from __future__ import annotations

import argparse
import ast
import json
import platform
import random
import shutil
import sys
import sysconfig
from dataclasses import replace
from pathlib import Path

from benchwarmers_mcp.suite import claims, library, mine, plant
from benchwarmers_mcp.suite.tasks import Task

MODULES = ("textwrap.py", "shlex.py", "fnmatch.py", "difflib.py", "calendar.py", "colorsys.py", "statistics.py",
           "ipaddress.py", "base64.py", "quopri.py", "urllib/parse.py", "html/__init__.py", "configparser.py",
           "gettext.py", "fractions.py", "string.py", "glob.py", "posixpath.py", "ntpath.py", "json/decoder.py",
           "json/encoder.py", "heapq.py", "bisect.py", "pprint.py", "reprlib.py", "copy.py", "graphlib.py",
           "netrc.py", "mimetypes.py", "argparse.py", "inspect.py", "dataclasses.py")
GENERATED = ("manifest.json", "NOTICE", "LICENSE-PSF.txt")


def stdlib_files() -> list[tuple[str, str]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return [(rel, (root / rel).read_text(encoding="utf-8")) for rel in MODULES if (root / rel).is_file()]


def make_pairs(files: list[tuple[str, str]], count: int, seed: int, version: str) -> list[Task]:
    rng = random.Random(seed)
    order = list(files)
    rng.shuffle(order)
    tasks: list[Task] = []
    for i, (rel, text) in enumerate(order):
        if len(tasks) >= 2 * count:
            break
        found = plant.choose([(rel, text)], count=1, seed=seed * 1000 + i, hard=False, id_prefix="std",
                             label_of=lambda r: f"Lib/{r}", meta={"origin": "python-stdlib", "python": version})
        for pair in found:
            tasks += [replace(pair.bug, draft=False), replace(pair.control, draft=False)]
    return tasks


def make_claims(files: list[tuple[str, str]], count: int, seed: int, version: str,
                taken: set[str]) -> list[tuple[Task, dict[str, str]]]:
    rng = random.Random(seed + 1)
    units = [(rel, text, u) for rel, text in files for u in plant.function_units(rel, text) if u.key not in taken]
    rng.shuffle(units)
    out: list[tuple[Task, dict[str, str]]] = []
    for rel, text, unit in units:
        if len(out) >= count:
            break
        truth = len(out) % 2 == 0
        tree = ast.parse(text)
        func = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and n.lineno >= unit.first and n.name == unit.name.rsplit(".", 1)[-1])
        names = sorted({n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))})
        code = "\n".join(text.splitlines()[unit.first - 1:unit.last]) + "\n"
        claim = claims.pick(claims.candidates(func, unit.name, code, names), truth, rng)
        if claim is None:
            continue
        fixture = f"{Path(rel).with_suffix('').as_posix()}/{unit.name}.py"
        task_id = f"std-claim-{plant.slug(Path(rel).stem, 20)}-{plant.slug(unit.name, 30)}-{'true' if truth else 'false'}"
        statement = (f"{claim.statement} (The attached code is `{unit.name}`, lines {unit.first}-{unit.last} of "
                     f"`Lib/{rel}` in the Python {version} standard library.)")
        task = mine.claim_task(task_id, statement, truth, (fixture,), draft=False,
                               why=f"a {claim.kind} claim whose truth is read from the code's syntax tree",
                               source={"origin": "python-stdlib", "python": version, "rel": f"Lib/{rel}",
                                       "function": unit.name, "lines": [unit.first, unit.last],
                                       "claim": claim.kind},
                               title=f"{'True' if truth else 'False'} claim about {unit.name} ({Path(rel).name})")
        out.append((task, {fixture: code}))
        taken.add(unit.key)
    return out


NOTICE = """\
The starter pack's code comes from the standard library of Python {version} ({implementation}),
read from the interpreter that generated the pack (scripts/make_starter_pack.py, seed {seed}).
Bug tasks hold that code with one planted fault; control and claim tasks hold it unchanged.

That code is Copyright (c) the Python Software Foundation and is used under the PSF License
Agreement for Python, whose text is in LICENSE-PSF.txt beside this file. The planted faults are
deliberate changes made for testing reviewers and are not part of Python.
"""


def write_pack(out: Path, seed: int, pairs: int, claim_count: int) -> list[str]:
    version = platform.python_version()
    files = stdlib_files()
    for child in sorted(out.iterdir()) if out.exists() else []:
        if child.is_dir() and (child / "task.json").exists():
            shutil.rmtree(child)
        elif child.name in GENERATED:
            child.unlink()
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    for task in make_pairs(files, pairs, seed, version):
        library.write_sync(out, task)
        written.append(task.id)
    taken = {f"{t.source['rel'].removeprefix('Lib/')}::{t.source['function']}" for t in
             (library.read_entry(out / i, "pack").task for i in written) if t is not None and t.source}
    for task, fixtures in make_claims(files, claim_count, seed, version, taken):
        library.write_sync(out, task, fixtures)
        written.append(task.id)
    licence = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    if licence.is_file():
        shutil.copyfile(licence, out / "LICENSE-PSF.txt")
    (out / "NOTICE").write_text(NOTICE.format(version=version, implementation=platform.python_implementation(),
                                              seed=seed), encoding="utf-8")
    manifest = {"python": version, "seed": seed, "tasks": sorted(written)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "suite" / "pack")
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--claims", type=int, default=8)
    args = parser.parse_args(argv)
    written = write_pack(args.out, args.seed, args.pairs, args.claims)
    print(f"{len(written)} tasks in {args.out} (Python {platform.python_version()}, seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
