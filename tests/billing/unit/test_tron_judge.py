"""The TRON judge on bodies shaped as java-tron writes them (`visible: true`)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tronpy.keys import to_base58check_address

from billing.tron_judge import (
    TRANSFER_TOPIC,
    USDT_MAINNET,
    Claim,
    Credit,
    Order,
    Reject,
    Wait,
    judge,
)


def address(byte: int) -> str:
    return str(to_base58check_address(bytes([0x41]) + bytes([byte]) * 20))


SHOP, PAYER, ELSEWHERE, FAKE_USDT, ROUTER = (address(b) for b in (0x11, 0x22, 0x33, 0x44, 0x55))
APPROVED = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
HASH = "ab" * 32
NOW = APPROVED + dt.timedelta(hours=1)


def order(*, usdt: bool = True, trx: bool = True) -> Order:
    return Order(1, SHOP, usdt, trx, APPROVED, Decimal("0.2475") if trx else None)


def word(addr: str) -> str:
    """A 32-byte topic word: 12 zero bytes and the address's 20."""
    from tronpy.keys import to_hex_address

    return "0" * 24 + to_hex_address(addr)[2:]


def transfer_log(amount: int, to: str = SHOP, token: str = USDT_MAINNET) -> dict[str, Any]:
    return {
        "address": token,
        "topics": [TRANSFER_TOPIC, word(PAYER), word(to)],
        "data": f"{amount:064x}",
    }


def at(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def trx_bodies(
    to: str = SHOP, sun: int = 100_000_000, when: dt.datetime = NOW, ret: str = "SUCCESS"
) -> tuple[dict[str, Any], dict[str, Any]]:
    tx = {
        "ret": [{"contractRet": ret}],
        "txID": HASH,
        "raw_data": {
            "contract": [
                {
                    "parameter": {
                        "value": {"amount": sun, "owner_address": PAYER, "to_address": to},
                        "type_url": "type.googleapis.com/protocol.TransferContract",
                    },
                    "type": "TransferContract",
                }
            ],
            "timestamp": at(when),
        },
    }
    info = {
        "id": HASH,
        "blockNumber": 70_000_000,
        "blockTimeStamp": at(when),
        "contractResult": [""],
        "receipt": {"net_usage": 268},
    }
    return tx, info


def usdt_bodies(
    logs: list[dict[str, Any]],
    *,
    called: str = USDT_MAINNET,
    when: dt.datetime = NOW,
    ret: str = "SUCCESS",
) -> tuple[dict[str, Any], dict[str, Any]]:
    tx = {
        "ret": [{"contractRet": ret}],
        "txID": HASH,
        "raw_data": {
            "contract": [
                {
                    "parameter": {
                        "value": {
                            "data": "a9059cbb" + word(SHOP) + f"{999_000_000:064x}",
                            "owner_address": PAYER,
                            "contract_address": called,
                        },
                        "type_url": "type.googleapis.com/protocol.TriggerSmartContract",
                    },
                    "type": "TriggerSmartContract",
                }
            ],
            "fee_limit": 100_000_000,
            "timestamp": at(when),
        },
    }
    info: dict[str, Any] = {
        "id": HASH,
        "fee": 13_844_850,
        "blockNumber": 70_000_000,
        "blockTimeStamp": at(when),
        "contractResult": ["0" * 63 + "1"],
        "contract_address": called,
        "receipt": {"energy_usage_total": 64_285, "net_usage": 345, "result": ret},
        "log": logs,
    }
    if ret != "SUCCESS":
        info.update(result="FAILED", resMessage="REVERT opcode executed")
        info.pop("log")
    return tx, info


def verdict(bodies: tuple[dict[str, Any], dict[str, Any]], o: Order | None = None) -> Any:
    tx, info = bodies
    return judge(tx, info, info, o or order(), Claim(HASH, 0), NOW)


def test_trx_paid__credited_at_the_locked_rate_rounded_down() -> None:
    credit = verdict(trx_bodies(sun=123_456_789))
    # 123.456789 TRX at 0.2475 USDT: 30.555555... USDT, down to the micro.
    assert credit == Credit("trx", 123_456_789, 30_555_555, PAYER, NOW.replace(microsecond=0))


def test_usdt_paid__credited_from_the_official_log() -> None:
    credit = verdict(usdt_bodies([transfer_log(50_000_000)]))
    assert isinstance(credit, Credit)
    assert (credit.coin, credit.amount, credit.micros, credit.sender) == (
        "usdt",
        50_000_000,
        50_000_000,
        PAYER,
    )


def test_reverted_and_out_of_energy__failed() -> None:
    assert verdict(usdt_bodies([], ret="REVERT")) == Reject("failed", "REVERT")
    assert verdict(usdt_bodies([], ret="OUT_OF_ENERGY")) == Reject("failed", "OUT_OF_ENERGY")
    assert verdict(trx_bodies(ret="REVERT")) == Reject("failed", "REVERT")


def test_not_found__waits_then_refused_after_15_minutes_of_not_found() -> None:
    assert judge({}, {}, {}, order(), Claim(HASH, 899), NOW) == Wait("not_found")
    refused = judge({}, {}, {}, order(), Claim(HASH, 900), NOW)
    assert isinstance(refused, Reject) and refused.reason == "not_found"


def test_found_not_yet_solidified__waits_whatever_the_not_found_clock() -> None:
    tx, info = usdt_bodies([transfer_log(5)])
    assert judge(tx, info, {}, order(), Claim(HASH, 10_000), NOW) == Wait("not_solidified")


def test_wrong_recipient__refused_with_the_address() -> None:
    assert verdict(usdt_bodies([transfer_log(5, to=ELSEWHERE)])) == Reject(
        "wrong_recipient", ELSEWHERE
    )
    assert verdict(trx_bodies(to=ELSEWHERE)) == Reject("wrong_recipient", ELSEWHERE)


def test_fake_usdt_contract__wrong_token() -> None:
    fake = verdict(usdt_bodies([transfer_log(50_000_000, token=FAKE_USDT)], called=FAKE_USDT))
    assert isinstance(fake, Reject) and fake.reason == "wrong_token"


def test_sent_before_approval__refused_and_90_s_before__credited() -> None:
    early = verdict(usdt_bodies([transfer_log(5)], when=APPROVED - dt.timedelta(minutes=10)))
    assert isinstance(early, Reject) and early.reason == "before_approval"
    close = verdict(usdt_bodies([transfer_log(5)], when=APPROVED - dt.timedelta(seconds=90)))
    assert isinstance(close, Credit) and close.amount == 5


def test_two_usdt_transfers__summed_and_the_stranger_ignored() -> None:
    logs = [transfer_log(30_000_000), transfer_log(7, to=ELSEWHERE), transfer_log(20_000_000)]
    credit = verdict(usdt_bodies(logs))
    assert isinstance(credit, Credit) and credit.amount == 50_000_000


def test_trx_only_order_paid_in_usdt__wrong_token_and_the_reverse() -> None:
    in_usdt = verdict(usdt_bodies([transfer_log(5)]), order(usdt=False))
    assert isinstance(in_usdt, Reject) and in_usdt.reason == "wrong_token"
    in_trx = verdict(trx_bodies(), order(trx=False))
    assert isinstance(in_trx, Reject) and in_trx.reason == "wrong_token"


def test_usdt_through_a_third_party_contract__the_official_log_credits() -> None:
    router_log = {"address": ROUTER, "topics": ["ff" * 32], "data": "00" * 32}
    credit = verdict(usdt_bodies([router_log, transfer_log(12_000_000)], called=ROUTER))
    assert isinstance(credit, Credit) and credit.amount == 12_000_000


def test_log_address_in_any_form__the_same_contract() -> None:
    from tronpy.keys import to_hex_address

    hex21 = to_hex_address(USDT_MAINNET)
    for form in (hex21, hex21[2:]):
        log = {**transfer_log(9), "address": form}
        credit = verdict(usdt_bodies([log]))
        assert isinstance(credit, Credit) and credit.amount == 9


def test_trc10_named_usdt__wrong_token() -> None:
    tx, info = trx_bodies()
    tx["raw_data"]["contract"][0]["type"] = "TransferAssetContract"
    tx["raw_data"]["contract"][0]["parameter"]["value"]["asset_name"] = "USDT"
    rejected = verdict((tx, info))
    assert isinstance(rejected, Reject) and rejected.reason == "wrong_token"


def test_unreadable_body__refused_never_credited() -> None:
    tx, info = usdt_bodies([{"address": USDT_MAINNET, "topics": [TRANSFER_TOPIC, "zz", "zz"]}])
    rejected = verdict((tx, info))
    assert isinstance(rejected, Reject) and rejected.reason == "bad_body"


logs_strategy = st.lists(
    st.builds(
        transfer_log,
        st.integers(min_value=0, max_value=2**96),
        st.sampled_from([SHOP, ELSEWHERE, PAYER]),
        st.sampled_from([USDT_MAINNET, FAKE_USDT, ROUTER]),
    ),
    max_size=6,
)


@given(logs_strategy)
def test_never_credits_what_the_official_logs_do_not_pay_the_shop(
    logs: list[dict[str, Any]],
) -> None:
    paid = sum(
        int(log["data"], 16)
        for log in logs
        if log["address"] == USDT_MAINNET and log["topics"][2] == word(SHOP)
    )
    result = verdict(usdt_bodies(logs))
    if isinstance(result, Credit):
        assert result.amount == result.micros == paid > 0
    else:
        assert paid == 0
