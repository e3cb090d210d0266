"""How Telegram measures text: its limits (a message's 4096, a link name's 32, a button's 64)
count UTF-16 code units, so an emoji outside the BMP counts twice."""

from __future__ import annotations


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2
