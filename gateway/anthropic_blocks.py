"""Anthropic's content block types, each with its one rule: what a member gets of it.

Every type Anthropic documents in a request's ``messages`` is accepted (the anthropic SDK's
``ContentBlockParam`` and ``BetaContentBlockParam`` unions, the blocks a response carries that a
client sends back, and what a ``tool_result`` may hold); only a type it does not document is 400.
``tool_use`` and ``tool_result`` are the turns' own (``gateway/anthropic.py``); the rest:

=============================================  ===================================================
``text``                                       its text (a block this table makes into text is
                                               set on lines of its own)
``image``                                      the image (base64 or URL; by file id: 400, nothing
                                               here can fetch an uploaded file)
``document``                                   a plain-text or content source: its text (titled);
                                               a PDF (base64, URL or file id): one line saying
                                               which document was not carried, so the member
                                               knows it is missing (members read text and images)
``search_result``                              its title, source and text
``tool_reference``                             the name of the tool it references: what Claude
                                               Code's tool search (its ToolSearch tool) answers
                                               with; ``deferred`` below offers that tool
``compaction``                                 its summary of the conversation before it (none:
                                               a failed compaction, dropped)
``thinking``, ``redacted_thinking``            dropped: a member's reasoning is its own, and the
                                               signature is one only Anthropic checks
``HOSTED_RECORDS``                             dropped: the record of a tool Anthropic ran
                                               (server tools, its MCP connector, a container
                                               upload); no member ran it, and the model's text
                                               after it says what it found
``SERVER_DIRECTIVES``                          dropped: markers and state only Anthropic's server
                                               reads (a fallback hop, tool additions and
                                               removals, an MCP tool listing, browser state)
=============================================  ===================================================

A tool sent with ``defer_loading: true`` is, on Anthropic's API, out of the model's sight until a
``tool_reference`` names it; ``deferred`` applies the same rule for members (who have no tool
search of their own): such a tool is offered once the conversation references it, so Claude
Code's ``DeferredToolPlaceholder`` never is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from benchwarmers_mcp.errors import BadRequest, Unsupported
from benchwarmers_mcp.gateway import images
from benchwarmers_mcp.messages import Image, Part, Text

REASONING = ("thinking", "redacted_thinking")
HOSTED_RECORDS = ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
                  "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
                  "tool_search_tool_result", "advisor_tool_result", "mcp_tool_use", "mcp_tool_result",
                  "container_upload")
SERVER_DIRECTIVES = ("fallback", "tool_addition", "tool_removal", "mcp_tool_listing", "browser_state")
TURN_BLOCKS = ("tool_use", "tool_result")  # each turn's own: gateway/anthropic.py places them


def _text(block: dict[str, Any], where: str) -> tuple[Part, ...]:
    if not isinstance(block.get("text"), str):
        raise BadRequest(f"{where}.text must be a string")
    return (Text(block["text"]),)


def _image(block: dict[str, Any], where: str) -> tuple[Part, ...]:
    source = block.get("source")
    if not isinstance(source, dict):
        raise BadRequest(f"{where}.source must be an object")
    kind = source.get("type")
    if kind == "base64":
        return (images.from_base64(source.get("data"), source.get("media_type"), where),)
    if kind == "url":
        return (images.parse_image_url(source.get("url"), f"{where}.source.url"),)
    if kind == "file":
        raise Unsupported(f"{where}: images given as uploaded file ids are not supported; send base64 or a URL")
    raise BadRequest(f"{where}.source.type must be base64 or url")


def _document(block: dict[str, Any], where: str) -> tuple[Part, ...]:
    source = block.get("source")
    if not isinstance(source, dict):
        raise BadRequest(f"{where}.source must be an object")
    title = block.get("title") if isinstance(block.get("title"), str) and block.get("title") else None
    kind = source.get("type")
    if kind == "text":
        if not isinstance(source.get("data"), str):
            raise BadRequest(f"{where}.source.data must be a string")
        return (Text(f"\n[document: {title}]\n{source['data']}\n" if title else source["data"]),)
    if kind == "content":
        inner = source.get("content")
        blocks = [{"type": "text", "text": inner}] if isinstance(inner, str) else inner
        if not isinstance(blocks, list):
            raise BadRequest(f"{where}.source.content must be a string or a list of text and image blocks")
        parts = [p for b_where, b in listed(blocks, f"{where}.source") for p in _only(b, b_where, ("text", "image"))]
        return (Text(f"\n[document: {title}]\n"), *parts) if title else tuple(parts)
    if kind in ("base64", "url", "file"):
        named = title or (source.get("url") if kind == "url" else source.get("file_id") if kind == "file" else None)
        what = f"{named!r} " if isinstance(named, str) and named else ""
        media = source.get("media_type") if isinstance(source.get("media_type"), str) else "application/pdf"
        return (Text(f"\n[document {what}({media}): not carried here, as this gateway's members read text and "
                     "images only]\n"),)
    raise BadRequest(f"{where}.source.type must be text, content, base64, url or file")


def _search_result(block: dict[str, Any], where: str) -> tuple[Part, ...]:
    inner = block.get("content")
    if not isinstance(inner, list):
        raise BadRequest(f"{where}.content must be a list of text blocks")
    texts = [p.text for b_where, b in listed(inner, where) for p in _only(b, b_where, ("text",)) if isinstance(p, Text)]
    head = " ".join(str(block.get(k)) for k in ("title", "source") if isinstance(block.get(k), str) and block.get(k))
    return (Text("\n".join(["", f"[search result: {head}]" if head else "[search result]", *texts, ""])),)


def _tool_reference(block: dict[str, Any], where: str) -> tuple[Part, ...]:
    name = block.get("tool_name")
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{where}.tool_name must be a tool's name")
    return (Text(name),)


def _compaction(block: dict[str, Any], where: str) -> tuple[Part, ...]:
    summary = block.get("content")
    if summary is not None and not isinstance(summary, str):
        raise BadRequest(f"{where}.content must be a string or null")
    return (Text(summary),) if summary else ()


def _dropped(block: dict[str, Any], where: str) -> tuple[Part, ...]:
    return ()


RULES: dict[str, Callable[[dict[str, Any], str], tuple[Part, ...]]] = {
    "text": _text, "image": _image, "document": _document, "search_result": _search_result,
    "tool_reference": _tool_reference, "compaction": _compaction,
    **dict.fromkeys(REASONING + HOSTED_RECORDS + SERVER_DIRECTIVES, _dropped),
}


def listed(content: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """A ``content`` (a string, or a list of blocks) as blocks, each with where it is."""
    if isinstance(content, str):
        return [(f"{where}.content", {"type": "text", "text": content})]
    if not isinstance(content, list):
        raise BadRequest(f"{where}.content must be a string or a list of content blocks")
    out = []
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise BadRequest(f"{where}.content[{i}] must be a content block with a type")
        out.append((f"{where}.content[{i}]", block))
    return out


def parts_of(block: dict[str, Any], where: str) -> tuple[Part, ...]:
    """What a member gets of one block that is not a turn's own (``tool_use``, ``tool_result``)."""
    kind = block["type"]
    rule = RULES.get(kind)
    if rule is None:
        if kind in TURN_BLOCKS:
            raise BadRequest(f"{where}: a {kind} block cannot stand here")
        raise BadRequest(f"{where}: unknown content block type {kind!r}")
    return rule(block, where)


def _only(block: dict[str, Any], where: str, kinds: tuple[str, ...]) -> tuple[Part, ...]:
    if block["type"] not in kinds:
        raise BadRequest(f"{where}: only {' and '.join(kinds)} blocks may stand here, not {block['type']!r}")
    return parts_of(block, where)


def result_parts(content: Any, where: str) -> tuple[list[str], list[Image]]:
    """A ``tool_result``'s content: the texts (tool references as the names they reference) and images."""
    texts: list[str] = []
    pictures: list[Image] = []
    if content is None:
        return texts, pictures
    for inner_where, inner in listed(content, where):
        for part in parts_of(inner, inner_where):
            if isinstance(part, Text):
                texts.append(part.text)
            elif isinstance(part, Image):
                pictures.append(part)
    return texts, pictures


def _blocks_in(messages: Any) -> Iterator[dict[str, Any]]:
    """Every block of the raw messages, those inside a tool_result's content too (unchecked: the parse checks)."""
    for m in messages if isinstance(messages, list) else []:
        content = m.get("content") if isinstance(m, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict):
                yield block
                inner = block.get("content")
                yield from (b for b in (inner if isinstance(inner, list) else []) if isinstance(b, dict))


def referenced(messages: Any) -> frozenset[str]:
    """The tool names the conversation's ``tool_reference`` blocks name."""
    return frozenset(b["tool_name"] for b in _blocks_in(messages)
                     if b.get("type") == "tool_reference" and isinstance(b.get("tool_name"), str))


def deferred(tool: dict[str, Any]) -> bool:
    """A tool kept from the model until a ``tool_reference`` names it."""
    return tool.get("defer_loading") is True
