"""Summarise py-spy's collapsed stacks (``--format raw``): the functions with the most samples,
self and inclusive.

    python benchmarks/stacks.py PROFILE [--top 40] [--grep TEXT]
"""

from __future__ import annotations

import argparse
import collections
import re


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--grep", default="", help="only stacks through a frame containing this text")
    args = parser.parse_args()
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in open(args.profile, encoding="utf-8"):
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
