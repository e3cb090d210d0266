"""The TRON judge: what one transaction pays one ad order. Pure: the verifier asks TronGrid and
hands the answers in; nothing here does I/O.

Only what the chain settled counts: a solidified, successful transaction. USDT counts only as
the `Transfer` logs the official contract emitted to the shop (never the call data, which says
what the sender asked for, not what happened; never another token calling itself USDT). TRX
counts only as a top-level `TransferContract` to the shop. Amounts are integers in base units
(sun, USDT micros); TRX becomes USDT micros at the order's locked rate, rounded down.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Any, Literal

from tronpy.keys import to_base58check_address, to_hex_address

USDT_MAINNET = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
# keccak256("Transfer(address,address,uint256)")
TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
# Time TronGrid answered "not found" before the hash is refused.
NOT_FOUND_LIMIT = dt.timedelta(minutes=15)
# The chain is public: a payment made before the order was approved is someone else's.
APPROVAL_SLACK = dt.timedelta(seconds=120)
SUN_PER_TRX = 1_000_000

Coin = Literal["usdt", "trx"]
RejectReason = Literal[
    "not_found", "failed", "wrong_token", "wrong_recipient", "before_approval", "bad_body"
]


@dataclass(frozen=True)
class Order:
    id: int
    pay_to: str
    accepts_usdt: bool
    accepts_trx: bool
    approved_at: dt.datetime
    # USDT per TRX, locked at approval; None when TRX is not accepted.
    trx_rate: Decimal | None


@dataclass(frozen=True)
class Claim:
    tx_hash: str
    # Summed time TronGrid answered "not found" (time it could not be asked does not count).
    not_found_seconds: float


@dataclass(frozen=True)
class Credit:
    coin: Coin
    # In the coin's base units: sun, or USDT micros.
    amount: int
    micros: int
    sender: str
    block_time: dt.datetime


@dataclass(frozen=True)
class Wait:
    reason: Literal["not_found", "not_solidified"]


@dataclass(frozen=True)
class Reject:
    reason: RejectReason
    detail: str = ""


Verdict = Credit | Wait | Reject


def judge(
    tx: dict[str, Any],
    info: dict[str, Any],
    solid: dict[str, Any],
    order: Order,
    claim: Claim,
    now: dt.datetime,
    *,
    usdt_contract: str = USDT_MAINNET,
) -> Verdict:
    """`tx` and `info`: `wallet/gettransactionbyid` and `wallet/gettransactioninfobyid`;
    `solid`: `walletsolidity/gettransactioninfobyid`; all with `visible: true`, `{}` when
    TronGrid does not know the hash. `now` is for the caller's bookkeeping symmetry and kept
    for deadlines the judge may grow; the not-found clock is `claim.not_found_seconds`."""
    del now
    if not tx or not info:
        if claim.not_found_seconds >= NOT_FOUND_LIMIT.total_seconds():
            return Reject("not_found", "TronGrid has not known this hash for 15 minutes")
        return Wait("not_found")
    if not solid:
        return Wait("not_solidified")
    try:
        return _settled(tx, info, order, usdt_contract)
    except (KeyError, TypeError, ValueError, IndexError) as error:
        # Not a body java-tron writes: never credit what cannot be read.
        return Reject("bad_body", f"{type(error).__name__}: {error}"[:200])


def _settled(tx: dict[str, Any], info: dict[str, Any], order: Order, usdt: str) -> Verdict:
    result = (tx.get("ret") or [{}])[0].get("contractRet")
    receipt = (info.get("receipt") or {}).get("result")
    if result != "SUCCESS" or info.get("result") == "FAILED" or receipt not in (None, "SUCCESS"):
        return Reject("failed", str(result or info.get("resMessage") or receipt))
    block_time = dt.datetime.fromtimestamp(int(info["blockTimeStamp"]) / 1000, dt.UTC)
    shop = _raw(order.pay_to)
    contract = tx["raw_data"]["contract"][0]
    if contract["type"] == "TransferContract":
        verdict = _trx(contract["parameter"]["value"], order, shop, block_time)
    else:
        verdict = _usdt(info.get("log") or [], order, shop, _raw(usdt), block_time)
    if isinstance(verdict, Credit) and block_time < order.approved_at - APPROVAL_SLACK:
        return Reject("before_approval", f"block time {block_time.isoformat()}")
    return verdict


def _trx(value: dict[str, Any], order: Order, shop: bytes, block_time: dt.datetime) -> Verdict:
    if not order.accepts_trx or order.trx_rate is None:
        return Reject("wrong_token", "TRX, and this order takes USDT only")
    recipient = _raw(value["to_address"])
    if recipient != shop:
        return Reject("wrong_recipient", _b58(recipient))
    sun = value["amount"]
    if isinstance(sun, bool) or not isinstance(sun, int) or sun <= 0:
        return Reject("bad_body", f"amount {sun!r}")
    micros = int((Decimal(sun) * order.trx_rate).to_integral_value(rounding=ROUND_FLOOR))
    return Credit("trx", sun, micros, _b58(_raw(value["owner_address"])), block_time)


def _usdt(
    logs: list[dict[str, Any]], order: Order, shop: bytes, usdt: bytes, block_time: dt.datetime
) -> Verdict:
    transfers = [
        log
        for log in logs
        if _raw(log["address"]) == usdt
        and len(log.get("topics") or []) == 3
        and str(log["topics"][0]).lower() == TRANSFER_TOPIC
    ]
    if not transfers:
        return Reject("wrong_token", "no Transfer of the official USDT contract")
    if not order.accepts_usdt:
        return Reject("wrong_token", "USDT, and this order takes TRX only")
    to_shop = [log for log in transfers if _raw(log["topics"][2]) == shop]
    if not to_shop:
        return Reject("wrong_recipient", _b58(_raw(transfers[0]["topics"][2])))
    paid = sum(int(str(log["data"]), 16) for log in to_shop)
    if paid <= 0:
        return Reject("wrong_recipient", "nothing paid to the shop")
    return Credit("usdt", paid, paid, _b58(_raw(to_shop[0]["topics"][1])), block_time)


def _raw(address: Any) -> bytes:
    """Any form an address comes in, as its 21 bytes: base58check `T...`, hex `41...`, the bare
    20 bytes of a non-visible log address, or a 32-byte topic word."""
    text = str(address).strip()
    if text.startswith("T"):
        return bytes.fromhex(to_hex_address(text))
    text = text.lower().removeprefix("0x")
    if len(text) == 64:
        text = text[24:]
    if len(text) == 40:
        text = "41" + text
    raw = bytes.fromhex(text)
    if len(raw) != 21 or raw[0] != 0x41:
        raise ValueError(f"not a TRON address: {text[:50]!r}")
    return raw


def _b58(raw: bytes) -> str:
    return str(to_base58check_address(raw))
