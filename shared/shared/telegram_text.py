"""How Telegram measures text: its limits (a message's 4096, a link name's 32, a button's 64)
count UTF-16 code units, so an emoji outside the BMP counts twice."""

from __future__ import annotations

import html
import re

# A message's text, and a file's caption.
TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# What Telegram's HTML reads: these tags, and the four named entities and numeric ones.
_TAGS = frozenset(
    {
        "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler",
        "a", "tg-emoji", "code", "pre", "blockquote",
    }
)  # fmt: skip
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)((?:\s+[A-Za-z-]+(?:=\"[^\"]*\")?)*)\s*>")
_BARE_AMP = re.compile(r"&(?!(?:lt|gt|amp|quot|#\d{1,7}|#x[0-9A-Fa-f]{1,6});)")


def html_problem(text: str) -> str | None:
    """Why Telegram would refuse `text` with parse_mode HTML, or None: an unsupported or
    unclosed tag, a `<` that opens no tag, a `&` that starts no entity."""
    opened: list[str] = []
    place = 0
    for tag in _TAG.finditer(text):
        problem = _bare(text[place : tag.start()])
        if problem:
            return problem
        place = tag.end()
        closing, name = tag.group(1) == "/", tag.group(2).lower()
        if name not in _TAGS:
            return f"<{name}> is not a tag Telegram reads; write &lt; for a plain <"
        if closing:
            if not opened or opened[-1] != name:
                return f"</{name}> closes no open <{name}>"
            opened.pop()
            continue
        if name == "a" and 'href="' not in tag.group(3):
            return '<a> needs href="..."'
        opened.append(name)
    problem = _bare(text[place:])
    if problem:
        return problem
    if opened:
        return f"<{opened[-1]}> is never closed"
    return None


def _bare(plain: str) -> str | None:
    if "<" in plain:
        return "a < that opens no tag: write &lt;"
    if _BARE_AMP.search(plain):
        return "an & that starts no entity: write &amp;"
    return None


def entities_read(text: str) -> str:
    """What is left of a text in Telegram's HTML once its tags and entities are read: what its
    limits count."""
    return html.unescape(_TAG.sub("", text))


def has_tags(text: str) -> bool:
    """Whether a plain text holds something Telegram's HTML would read as a tag."""
    return any(tag.group(2).lower() in _TAGS for tag in _TAG.finditer(text))
