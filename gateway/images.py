"""Images as each dialect sends them, made into the canonical ``Image``: an http(s) URL or a
``data:image/<type>;base64,`` URL. The gateway never fetches an image; the upstream does.

Shared by every dialect: OpenAI ``image_url`` parts, Anthropic ``image`` blocks, Responses
``input_image``, Gemini ``inlineData`` / ``fileData`` and Ollama's raw base64 ``images``.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from benchwarmers_mcp.errors import BadRequest, Unsupported
from benchwarmers_mcp.messages import Image

MEDIA_TYPE = re.compile(r"^image/[a-z0-9][a-z0-9.+-]{0,40}$")
# The first bytes of each image format an upstream model can read.
SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def parse_image_url(url: Any, where: str = "image_url.url") -> Image:
    """An http(s) URL or a base64 data URL of an image; anything else is a 400."""
    if not isinstance(url, str):
        raise BadRequest(f"{where} must be a string")
    if url.startswith(("http://", "https://")):
        return Image(url)
    if url.startswith("data:image/") and ";base64," in url:
        return Image(url)
    if url.startswith("data:"):
        raise Unsupported(f"{where}: only images are accepted (data:image/<type>;base64,...), not "
                          f"{url[5:].split(';', 1)[0] or 'untyped data'}")
    raise BadRequest(f"{where}: an image must be an http(s) URL or a data:image/<type>;base64 URL")


def from_base64(data: Any, media_type: Any, where: str) -> Image:
    """Base64 bytes plus their media type, as a data URL. Non-image media (PDF, audio) is refused."""
    if not isinstance(media_type, str) or not media_type:
        raise BadRequest(f"{where}: the media type is missing")
    media_type = media_type.strip().lower()
    if not media_type.startswith("image/"):
        raise Unsupported(f"{where}: {media_type} is not supported; only images can be sent to a panel "
                          "(no PDFs, audio or other files)")
    if not MEDIA_TYPE.match(media_type):
        raise BadRequest(f"{where}: {media_type!r} is not a valid image media type")
    if not isinstance(data, str) or not data.strip():
        raise BadRequest(f"{where}: the image data must be a non-empty base64 string")
    return Image(f"data:{media_type};base64,{data.strip()}")


def sniff(data: str) -> str | None:
    """The image type from the first bytes of base64 data, or None when unknown."""
    head = re.sub(r"\s+", "", data[:64])
    head = head[: len(head) // 4 * 4]
    try:
        raw = base64.b64decode(head, validate=True)
    except (binascii.Error, ValueError):
        return None
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return next((kind for magic, kind in SIGNATURES if raw.startswith(magic)), None)


def from_raw_base64(data: Any, where: str) -> Image:
    """Ollama's ``images``: raw base64 (a data URL is accepted too), the type sniffed from the bytes."""
    if isinstance(data, str) and data.startswith("data:"):
        return parse_image_url(data, where)
    if not isinstance(data, str) or not data.strip():
        raise BadRequest(f"{where} must be a non-empty base64 string")
    kind = sniff(data.strip())
    if kind is None:
        raise BadRequest(f"{where}: not a PNG, JPEG, GIF, WebP or BMP image (the first bytes say otherwise)")
    return from_base64(data, kind, where)
