"""What masking provider keys costs on the hot path, in-process: a whole answer (1 KB of text and a
tool call) masked, and a streamed answer of the same text masked piece by piece (20 characters a
piece, the tail that may start a key held back), with an endpoint's key and one header value.

    python benchmarks/masking_cost.py [--rounds 2000]

Prints microseconds per answer and per stream piece, and the same with nothing to mask (what a
call without a key pays: nothing).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from benchwarmers_mcp.messages import Answer, Finish, TextDelta, ToolCall  # noqa: E402
from benchwarmers_mcp.upstream.masking import Secrets, StreamMask  # noqa: E402

TEXT = ("Here is a careful answer about the function, which returns a stale value when the cache is "
        "shared across sessions; see the notes below. ") * 8
ANSWER = Answer(TEXT, (ToolCall("call_1", "search", '{"query": "stale cache sessions", "limit": 5}'),))


def per(fn, rounds: int) -> float:
    """Median microseconds of one ``fn()`` over five batches of ``rounds``."""
    batches = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            fn()
        batches.append((time.perf_counter() - start) / rounds * 1e6)
    return statistics.median(batches)


def stream(secrets: Secrets) -> None:
    mask = StreamMask(secrets)
    for i in range(0, len(TEXT), 20):
        mask.feed(TextDelta(TEXT[i:i + 20]))
    mask.feed(Finish())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    secrets = Secrets.for_endpoint("openai", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56", {"OpenAI-Organization": "org-x7Y8z9"})
    pieces = len(range(0, len(TEXT), 20))
    whole = per(lambda: secrets.answer(ANSWER), args.rounds)
    streamed = per(lambda: stream(secrets), args.rounds // 10)
    print(f"whole answer ({len(TEXT)} chars + a tool call)   {whole:7.2f} us")
    print(f"streamed answer ({pieces} pieces)               {streamed:7.2f} us  ({streamed / pieces:.2f} us a piece)")
    print(f"nothing to mask (no key): Secrets is empty, bool {bool(Secrets.for_endpoint(None, None, {}))}: "
          "the caller skips masking altogether")


if __name__ == "__main__":
    main()
