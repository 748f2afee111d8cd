"""``bench ask`` and ``bench verdict``: ask a collection, then judge each seat.

``ask`` streams the chat completion, so each seat's section reaches stdout the moment that seat
finishes and the progress line can count them; the seats table (call, seat, model, status,
seconds) goes to stderr at the end.
"""

from __future__ import annotations

import argparse
import base64
import mimetypes
import re
import sys
from pathlib import Path
from typing import Any

import anyio

from benchwarmers_mcp.cli.console import Progress, note, read_piped_stdin, server_note, show_json
from benchwarmers_mcp.cli.remote import CliError, Remote, UsageError, dumps, given
from benchwarmers_mcp.cli.tables import table
from benchwarmers_mcp.client import PanelUpdate

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}
ANSWERED = ("ok",)


def fenced(title: str, text: str) -> str:
    """A file as a fenced block titled with its name; the fence outgrows any backticks inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    lang = Path(title).suffix.lstrip(".")
    return f"{title}:\n{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


def read_attachment(name: str) -> tuple[str | None, dict[str, Any] | None]:
    """(text block, None) for a text file, (None, image part) for an image."""
    path = Path(name)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UsageError(f"-f {name}: {e.strerror or e}") from None
    kind = IMAGE_TYPES.get(path.suffix.lower())
    if kind:
        url = f"data:{kind};base64,{base64.b64encode(data).decode('ascii')}"
        return None, {"type": "image_url", "image_url": {"url": url}}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        guess = mimetypes.guess_type(name)[0] or "binary"
        raise UsageError(f"-f {name}: not a UTF-8 text file ({guess}); attach text or png/jpeg/gif/webp images") \
            from None
    return fenced(name, text), None


async def build_prompt(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]]]:
    """The words, then piped stdin (as the prompt itself, or a block after the words), then each file."""
    words = " ".join(args.prompt).strip()
    wants_stdin = words in ("", "-")
    piped = await read_piped_stdin()
    if words == "-":
        words = ""
    if wants_stdin and piped is None:
        raise UsageError(no_prompt(args.collection))
    chunks = [words] if words else []
    if piped and piped.strip():
        chunks.append(piped.strip("\n") if not words else fenced("stdin", piped))
    images = []
    for name in args.file or ():
        block, image = read_attachment(name)
        if block:
            chunks.append(block)
        if image:
            images.append(image)
    text = "\n\n".join(chunks).strip()
    if not text and not images:
        raise UsageError(no_prompt(args.collection))
    return text, images


def no_prompt(first: str) -> str:
    """What to do when there is no prompt: the one word given may have been meant as the prompt."""
    shown = " ".join(first.split())[:60]
    if not shown:
        return 'bench ask takes a collection, then the prompt: bench ask <collection> "Review this" ' \
               "(bench collections lists them), or pipe the prompt in"
    return (f'bench ask takes a collection, then the prompt: bench ask <collection> "{shown}" (here {shown!r} was '
            "read as the collection; bench collections lists them), or pipe the prompt in")


def collection_model(name: str, args: argparse.Namespace) -> str:
    name = name.strip().removeprefix("bench/")
    if not name:
        raise UsageError("name a collection: bench ask <collection> \"...\"; bench collections lists them")
    if args.merged:
        name = f"{name.split(':')[0]}:merged"
    elif args.all:
        name = f"{name.split(':')[0]}:all"
    return f"bench/{name}"


def nominees(values: list[str] | None) -> list[str]:
    return [n.strip() for v in values or () for n in v.split(",") if n.strip()]


async def request_body(args: argparse.Namespace) -> dict[str, Any]:
    text, images = await build_prompt(args)
    content: Any = text if not images else [{"type": "text", "text": text}, *images]
    messages = [{"role": "system", "content": args.system}] if args.system else []
    messages.append({"role": "user", "content": content})
    body: dict[str, Any] = {"model": collection_model(args.collection, args), "messages": messages,
                            "stream": not args.json}
    chosen = nominees(args.with_)
    if chosen:
        body["with"] = chosen
    return body


async def ask(args: argparse.Namespace, remote: Remote) -> int:
    body = await request_body(args)
    if args.json:
        reply = await remote.post("/v1/chat/completions", body)
        print(dumps(reply))
        page_link(remote, reply.get("bench") or {})
        return _exit_for(reply.get("bench") or {})
    bench = await stream_answers(remote, body)
    seats_table(bench)
    page_link(remote, bench)
    return _exit_for(bench)


def page_link(remote: Remote, bench: dict[str, Any]) -> None:
    """The panel's page on the server (``<server>/panels/<id>``: its answers and verdicts), on stderr."""
    if bench.get("panel"):
        sys.stdout.flush()
        note(f"panel page: {remote.url.rstrip('/')}/panels/{bench['panel']}")


async def stream_answers(remote: Remote, body: dict[str, Any]) -> dict[str, Any]:
    """Write each section to stdout as it arrives; return the final ``bench`` field."""
    progress = Progress(body["model"])

    async def show(update: PanelUpdate) -> None:
        if update.done is not None:
            progress.seats_done(update.done)
        if update.text:
            progress.clear()
            sys.stdout.write(update.text)
            sys.stdout.flush()

    failure: CliError | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(progress.run)
        try:
            bench = await remote.panel(body, show)
        except CliError as e:
            failure = e
        tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return bench


def seats_table(bench: dict[str, Any]) -> None:
    seats = list(bench.get("seats") or [])
    merger = bench.get("merger")
    rows = [(s.get("call"), s.get("seat"), s.get("alias"), s.get("status"), s.get("seconds")) for s in seats]
    if merger:
        rows.append((merger.get("call"), "merger", merger.get("alias"), merger.get("status"), merger.get("seconds")))
    sys.stdout.flush()
    note("")
    table(("call", "seat", "model", "status", "seconds"), rows, sys.stderr)
    server_note(bench)
    for skipped in bench.get("skipped") or ():
        note(f"not asked: {skipped.get('alias')} ({skipped.get('why')})")
    if any(s.get("status") in ("ok", "empty") for s in seats):
        note('judge each answer once checked: bench judge (one key a seat), or bench verdict <call> '
             '--useful|--not-useful [--real "..."] [--false "..."]')


def _exit_for(bench: dict[str, Any]) -> int:
    statuses = [s.get("status") for s in bench.get("seats") or ()]
    if statuses and not any(s in ANSWERED for s in statuses):
        note("no seat answered (see the status column); nothing to judge")
        return 1
    return 0


JUDGEMENTS = ("real", "false", "none")


def claim_marks(values: list[str] | None) -> list[dict[str, str]]:
    """``--claim ID=real`` (repeatable) as the verdict's ``claims``; bad usage for any other form."""
    out = []
    for value in values or ():
        group, _, judgement = value.partition("=")
        if not group.strip() or judgement.strip() not in JUDGEMENTS:
            raise UsageError(f"--claim {value!r}: give a claim's id and real, false or none, e.g. --claim 3f9c2a1b=false "
                             "(bench panel show <panel> lists the ids)")
        out.append({"id": group.strip(), "judgement": judgement.strip()})
    return out


async def verdict(args: argparse.Namespace, remote: Remote) -> int:
    body = {"call": args.call, "useful": args.useful,
            **given(note=args.note, real=args.real, false=args.false, claims=claim_marks(args.claim))}
    reply = await remote.post("/bench/verdict", body)
    if show_json(args, reply):
        return 0
    judged = "useful" if args.useful else "not useful"
    if reply.get("written", True):
        print(f"recorded: {args.call} {judged}")
    else:
        print(f"unchanged: {args.call} already has this verdict")
    return 0
