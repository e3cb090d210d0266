"""Text for messages sent with `parse_mode=HTML`: what every feature's words go through."""

from __future__ import annotations


def escape_html(text: str) -> str:
    """The four characters Telegram's HTML parser reads, escaped; nothing else."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )
