"""What masking provider keys costs on the hot path, in-process: a whole answer (1 KB of text and a
tool call) masked, and a streamed answer of the same text masked piece by piece (20 characters a
piece, the tail that may be part of a key held back), with an endpoint's key and one header value;
for an API key of 40 characters, a sign-in token of 300 (masking looks for a run of 12 characters
of a secret anywhere in it, in any case, so its cost grows with the secret's length), and the key
itself in the answer, upper-cased (the rare case where something is found and masked).

    python benchmarks/masking_cost.py [--rounds 2000] [--quick]

Prints microseconds per answer and per stream piece, and the same with nothing to mask (what a
call without a key pays: nothing).
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from benchwarmers_mcp.messages import Answer, Finish, TextDelta, ToolCall  # noqa: E402
from benchwarmers_mcp.upstream.masking import Secrets, StreamMask  # noqa: E402

KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56"
_RNG = random.Random(3)
TOKEN = "ya29." + "".join(_RNG.choice(string.ascii_letters + string.digits + "-_") for _ in range(295))
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


def stream(secrets: Secrets, text: str) -> None:
    mask = StreamMask(secrets)
    for i in range(0, len(text), 20):
        mask.feed(TextDelta(text[i:i + 20]))
    mask.feed(Finish())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="100 rounds: seconds, for CI (tests/e2e/test_benchmarks_quick.py)")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 100
    echoed = TEXT[:500] + KEY.upper() + TEXT[500 + len(KEY):]
    cases = [("API key, 40 chars", KEY, TEXT), ("sign-in token, 300 chars", TOKEN, TEXT),
             ("API key, in the answer upper-cased", KEY, echoed)]
    for name, key, text in cases:
        secrets = Secrets.for_endpoint("openai", key, {"OpenAI-Organization": "org-x7Y8z9"})
        answer = Answer(text, ANSWER.tool_calls)
        pieces = len(range(0, len(text), 20))
        whole = per(lambda: secrets.answer(answer), args.rounds)  # noqa: B023 (run before the next case)
        streamed = per(lambda: stream(secrets, text), args.rounds // 10)  # noqa: B023
        print(f"{name}: whole answer ({len(text)} chars + a tool call) {whole:7.2f} us; streamed ({pieces} pieces) "
              f"{streamed:7.2f} us ({streamed / pieces:.2f} us a piece)")
    print(f"nothing to mask (no key): Secrets is empty, bool {bool(Secrets.for_endpoint(None, None, {}))}: "
          "the caller skips masking altogether")


if __name__ == "__main__":
    main()
