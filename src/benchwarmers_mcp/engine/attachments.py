"""The files and images a stored prompt carries, by name, for the panel page ("the prompt, with
attachments named"). A prompt is kept as text (``Ask.prompt_text``), so each way of attaching is
read back from the marks it leaves:

    ``bench ask -f a.py``      ``a.py:`` then a fenced block (``cli/cmd_ask.fenced``); piped stdin
                               next to words is ``stdin:`` and a fence
    the dashboard's Ask page   ``--- a.py ---`` on a line of its own, then the text (``admin/ask.py``)
    a suite prompt             ``===== FILE: a.py =====``
    an image                   its placeholder, ``[image: data URL, 12 KB]`` or ``[image: https://...]``

Pure: text in, names out, in the order they appear, each once.
"""

from __future__ import annotations

import re

_MARKS = re.compile(
    r"^(?:(?P<fenced>[\w./\\-]+\.\w+|stdin):[ \t]*\n`{3,}"
    r"|---[ \t](?P<dashed>[^\n]{1,200}?)[ \t]---[ \t]*$"
    r"|=====\s*FILE:\s*(?P<banner>[^\n]+?)\s*=====[ \t]*$)"
    r"|\[image: (?P<image>[^\]\n]{1,300})\]", re.M)


def names(prompt: str) -> list[str]:
    """The attachments ``prompt`` names: files by name, images as ``image: <what>``."""
    found: list[str] = []
    for m in _MARKS.finditer(prompt):
        name = m.group("fenced") or m.group("dashed") or m.group("banner")
        found.append(name.strip() if name else f"image: {m.group('image')}")
    return list(dict.fromkeys(found))


__all__ = ["names"]
