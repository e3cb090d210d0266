"""Text for messages sent with `parse_mode=HTML`: what every feature's words go through, and
the short forms of amounts and hashes they show."""

from __future__ import annotations

from shared.units import decimal_text


def escape_html(text: str) -> str:
    """The four characters Telegram's HTML parser reads, escaped; nothing else."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def short_hash(tx_hash: str) -> str:
    return f"{tx_hash[:8]}…{tx_hash[-6:]}"


def usdt(micros: int) -> str:
    return f"{decimal_text(micros)} USDT"
