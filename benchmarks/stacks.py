"""Summarise py-spy's collapsed stacks (``--format raw``): the functions with the most samples,
self and inclusive.

    python benchmarks/stacks.py PROFILE [--top 40] [--grep TEXT]
    python benchmarks/stacks.py --quick      the same on a few stacks of its own (CI: it still parses)
"""

from __future__ import annotations

import argparse
import collections
import re
from collections.abc import Iterable

# three stacks in py-spy's raw format (frames root first, ';'-separated, then the sample count)
SAMPLE = """\
<module> (benchwarmers_mcp/__main__.py:3);run (/venv/lib/python3.11/site-packages/uvicorn/main.py:9);\
handle (/repo/src/benchwarmers_mcp/routes.py:40);fetchall (/repo/src/benchwarmers_mcp/store/sqlite.py:400) 7
<module> (benchwarmers_mcp/__main__.py:3);run (/venv/lib/python3.11/site-packages/uvicorn/main.py:9);\
handle (/repo/src/benchwarmers_mcp/routes.py:40) 2
<module> (benchwarmers_mcp/__main__.py:3);select (/usr/lib/python3.11/selectors.py:468) 1
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", nargs="?")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--grep", default="", help="only stacks through a frame containing this text")
    parser.add_argument("--quick", action="store_true", help="summarise a few stacks of its own instead of PROFILE")
    args = parser.parse_args()
    if not args.quick and not args.profile:
        parser.error("PROFILE is required (or --quick)")
    lines: Iterable[str] = SAMPLE.splitlines() if args.quick else open(args.profile, encoding="utf-8")
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = [re.sub(r" \(/.*?/(site-packages|src|gateway)/", " (", f) for f in stack.split(";")]
        if args.grep and not any(args.grep in f for f in frames):
            continue
        total += n
        own[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
    print(f"{total} samples")
    print("-- self --")
    for f, n in own.most_common(args.top):
        print(f"{n / total:6.1%}  {f}")
    print("-- inclusive --")
    for f, n in inclusive.most_common(args.top):
        print(f"{n / total:6.1%}  {f}")


if __name__ == "__main__":
    main()
