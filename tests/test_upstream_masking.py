"""Masking provider keys in upstream text: every spelling of a secret and a secret cut short, a key
cut across stream pieces wherever it is cut (and nothing else changed), the order of pieces kept,
and log records (tracebacks included). ``test_upstream_leaks.py`` runs it against an echoing upstream."""

from __future__ import annotations

import io
import json
import logging
import random

import httpx

from benchwarmers_mcp.messages import AnswerBuilder, Finish, ReasoningDelta, TextDelta, ToolCallDelta
from benchwarmers_mcp.upstream.masking import KeyMaskFilter, Secrets, StreamMask
from tests.fakes.echo_upstream import ECHO_KEY as KEY
from tests.fakes.echo_upstream import ECHO_ORG as ORG
from tests.fakes.echo_upstream import leaks

# -- the masking itself --

def test_a_secret_is_masked_in_every_spelling_and_when_cut_short():
    secrets = Secrets.of([("key echo", KEY), ("key tiny", "abc")])
    text = f"a {KEY} b {json.dumps(KEY)[1:-1]} c {KEY[:20]}"
    masked = secrets.mask(text)
    assert not leaks(masked) and masked.count("[masked key echo]") == 3
    assert secrets.mask("abc abc") == "abc abc", "values too short to be secrets are left alone"
    assert Secrets.of([("key echo", "sk-with/slash+plus=")]).mask("k=sk-with%2Fslash%2Bplus%3D") == \
        "k=[masked key echo]", "the URL-quoted spelling too"
    assert secrets.mask("sk-echo is a prefix") == "sk-echo is a prefix", "a vendor prefix alone is not the key"
    assert secrets.mask(f"https://{KEY.lower()}.test/") == "https://[masked key echo].test/", "a host, lower-cased"
    assert not leaks(Secrets.of([("key", ORG)]).mask(f"{ORG[:15]}"))


def _events_for(text: str, cuts: list[int]) -> list[TextDelta]:
    bounds = [0, *sorted(cuts), len(text)]
    return [TextDelta(text[a:b]) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _joined(mask: StreamMask, events: list) -> tuple[str, list]:
    out = [e for event in events for e in mask.feed(event)] + mask.end()
    return "".join(e.text for e in out if isinstance(e, TextDelta)), out


def test_a_key_cut_across_stream_pieces_is_masked_wherever_it_is_cut():
    secrets = Secrets.of([("key echo", KEY)])
    text = f"so the key is {KEY}, said twice: {KEY}s and so on"
    rng = random.Random(12)
    for _ in range(300):
        cuts = rng.sample(range(1, len(text)), rng.randint(1, 12))
        joined, _ = _joined(StreamMask(secrets), _events_for(text, cuts))
        assert not leaks(joined)
        assert joined == secrets.mask(text), "only the key changed, in place"
    plain = "a stream without any secret in it, streamed in small pieces"
    for _ in range(50):
        joined, _ = _joined(StreamMask(secrets), _events_for(plain, rng.sample(range(1, len(plain)), 8)))
        assert joined == plain


def test_a_held_tail_goes_out_before_a_piece_of_another_kind():
    secrets = Secrets.of([("key echo", KEY)])
    mask = StreamMask(secrets)
    out = [e for event in (TextDelta("Let me check this s"), ToolCallDelta(0, "c1", "save", '{"t": "sk-e'),
                           ToolCallDelta(0, arguments=KEY[4:] + '"}'), ReasoningDelta("done"), Finish())
           for e in mask.feed(event)]
    assert out[0] == TextDelta("Let me check this ") and out[1] == TextDelta("s"), "the held 's' first, in order"
    builder = AnswerBuilder()
    for e in out:
        builder.add(e)
    answer = builder.answer()
    assert answer.text == "Let me check this s" and answer.reasoning == "done"
    assert answer.tool_calls[0].arguments == '{"t": "[masked key echo]"}' and answer.tool_calls[0].name == "save"
    assert isinstance(out[-1], Finish)


def test_the_log_filter_masks_messages_and_tracebacks():
    keys = KeyMaskFilter(lambda: [KEY])
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(keys)
    log = logging.getLogger("tests.masking")
    log.addHandler(handler)
    log.propagate = False
    try:
        try:
            request = httpx.Request("POST", f"https://generativelanguage.test/v1beta/models/x:generate?key={KEY}")
            raise httpx.ConnectError(f"failed to reach {request.url}", request=request)
        except httpx.ConnectError:
            log.exception("calling %s failed", f"https://up.test/?key={KEY}")
        log.warning("plain %s", "words")
    finally:
        log.removeHandler(handler)
    written = stream.getvalue()
    assert "Traceback" in written and "ConnectError" in written and "plain words" in written
    assert not leaks(written)


# -- in any case, and any run of a secret --

def _recased(text: str, rng: random.Random) -> str:
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)


def test_a_secret_is_masked_in_any_case_and_any_run_of_it():
    secrets = Secrets.of([("key echo", KEY), ("header X-Org", ORG)])
    rng = random.Random(7)
    for spelled in (KEY.upper(), KEY.swapcase(), _recased(KEY, rng), KEY[5:19], KEY[-12:].upper(), KEY[9:21].lower(),
                    ORG.upper(), ORG[3:16].swapcase(), json.dumps(KEY.upper())[1:-1]):
        masked = secrets.mask(f"the upstream said: {spelled}!")
        assert not leaks(masked), (spelled, masked)
        assert masked.startswith("the upstream said: [masked ") and masked.endswith("]!"), "only the run changed"
    assert secrets.mask(KEY[3:14].upper()) == KEY[3:14].upper(), "11 characters of a key are not a run of it"
    assert Secrets.of([("key echo", "sk-with/slash+plus=")]).mask("k=SK-WITH%2fSLASH%2bPLUS%3d") == \
        "k=[masked key echo]", "the URL-quoted spelling in any case, its escapes too"
    assert Secrets.of([("key short", "Abc123xyz")]).mask("ABC123XYZ and abc123") == "[masked key short] and abc123", \
        "a secret shorter than a run is masked whole, in any case"
    two = secrets.mask(f"{KEY[:14].upper()}{ORG[-13:]} then {KEY.lower()}{KEY}")
    assert not leaks(two) and two.count("[masked ") == 4, two


def test_a_recased_key_cut_across_stream_pieces_is_masked_wherever_it_is_cut():
    secrets = Secrets.of([("key echo", KEY), ("header X-Org", ORG)])
    rng = random.Random(29)
    for _ in range(300):
        text = (f"so the key is {_recased(KEY, rng)}, then part of it {_recased(KEY[6:20], rng)} and its end "
                f"{KEY[-15:].upper()}; the org {_recased(ORG, rng)}s and so on")
        cuts = rng.sample(range(1, len(text)), rng.randint(1, 20))
        joined, _ = _joined(StreamMask(secrets), _events_for(text, cuts))
        assert not leaks(joined), joined
        assert joined == secrets.mask(text), "only the runs changed, in place"


def test_the_log_filter_masks_a_recased_key():
    keys = KeyMaskFilter(lambda: [KEY])
    record = logging.LogRecord("tests", logging.WARNING, __file__, 1, "upstream said %s and %s", (KEY.upper(), KEY[4:20]),
                               None)
    keys.filter(record)
    assert not leaks(record.getMessage()) and record.getMessage().count("[masked key]") == 2
