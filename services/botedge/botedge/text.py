"""Text for messages sent with `parse_mode=HTML`: what every feature's words go through, and
the short forms of amounts and hashes they show."""

from __future__ import annotations

from botedge.words import Speech, msg
from shared.units import decimal_text

BOTH_COINS = msg("ads.both_coins", "USDT (TRC-20) or TRX")


def escape_html(text: str) -> str:
    """The four characters Telegram's HTML parser reads, escaped; nothing else."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def short_hash(tx_hash: str) -> str:
    return f"{tx_hash[:8]}…{tx_hash[-6:]}"


def money(say: Speech, amount: str, currency: str) -> str:
    """An amount in the language's digits, with its currency (Telegram writes Stars with its
    star)."""
    return f"{say.digits(amount)} {'⭐' if currency == 'XTR' else currency}"


def usdt(say: Speech, micros: int) -> str:
    return money(say, decimal_text(micros), "USDT")


def coins(say: Speech, accepts_usdt: bool, accepts_trx: bool) -> str:
    """The coins an ad slot or order takes."""
    if accepts_usdt and accepts_trx:
        return say(BOTH_COINS)
    return "USDT (TRC-20)" if accepts_usdt else "TRX"
