"""The dashboard's static files (``web/static/``, shipped in the wheel), served by this server only.

Each file is read once, at start, with its gzip and a content hash; pages link ``/static/<name>?v=
<hash>``, which may be cached for a year (a new version is a new URL). Names are looked up in
that table, never joined onto a path, so nothing outside the folder can be asked for.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.web.security import HEADERS

ROOT = Path(__file__).parent / "static"
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".svg": "image/svg+xml", ".txt": "text/plain; charset=utf-8", "": "text/plain; charset=utf-8"}
YEAR = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes | None
    media_type: str
    tag: str


def _load(path: Path) -> Asset:
    body = path.read_bytes()
    squeezed = gzip.compress(body, 9, mtime=0)
    media = TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return Asset(body, squeezed if len(squeezed) < len(body) * 0.9 else None, media,
                 hashlib.sha256(body).hexdigest()[:12])


class Assets:
    def __init__(self, root: Path = ROOT) -> None:
        self.files = {p.relative_to(root).as_posix(): _load(p) for p in sorted(root.rglob("*")) if p.is_file()}

    def url(self, name: str) -> str:
        asset = self.files.get(name)
        if asset is None:
            raise KeyError(f"no static file {name!r} in web/static")
        return f"/static/{name}?v={asset.tag}"

    def response(self, request: Request, name: str) -> Response:
        asset = self.files.get(name)
        if asset is None:
            return Response(f"no static file {name[:100]!r}\n", 404, media_type="text/plain", headers=HEADERS)
        headers = {**HEADERS, "ETag": f'"{asset.tag}"', "Vary": "Accept-Encoding",
                   "Cache-Control": YEAR if request.query_params.get("v") == asset.tag else "no-cache"}
        if request.headers.get("if-none-match") == f'"{asset.tag}"':
            return Response(status_code=304, headers=headers)
        body = asset.body
        if asset.gzipped is not None and "gzip" in (request.headers.get("accept-encoding") or ""):
            body, headers["Content-Encoding"] = asset.gzipped, "gzip"
        return Response(body, media_type=asset.media_type, headers=headers)
