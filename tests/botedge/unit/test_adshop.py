"""The ad shop's pure parts: reading a hash, the advertiser's messages, the QR code upload."""

from __future__ import annotations

import datetime as dt
import io
import json
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

import pytest
import zxingcpp
from PIL import Image
from tronpy.keys import to_base58check_address

from botedge import uploads
from botedge.ad_messages import event_message
from botedge.adshop import ALREADY_SUBMITTED, hash_problem, parse_hash
from botedge.words import Words
from simulators.telegram.botapi import _check_html
from tests.botedge.bot_api_server import ok, run

EN = Words().speech("en")

SHOP = str(to_base58check_address(bytes([0x41]) + bytes([0x11]) * 20))
HASH = "ab" * 32


def order(**changes: Any) -> dict[str, Any]:
    due = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(hours=20)
    return {
        "id": 12,
        "title": "Top <pin> & more",
        "price_micros": 25_000_000,
        "paid_micros": 0,
        "accepts_usdt": True,
        "accepts_trx": True,
        "trx_rate": "0.25",
        "pay_to": SHOP,
        "due_at": due,
        "told_with_status": False,
        **changes,
    }


def test_parse_hash__64_hex_any_case_0x_optional_stored_lower() -> None:
    assert parse_hash(HASH) == HASH
    assert parse_hash(f"  0x{HASH.upper()}\n") == HASH
    assert parse_hash(f"0X{HASH}") == HASH
    assert parse_hash(HASH[:-1]) is None
    assert parse_hash(HASH + "a") is None
    assert parse_hash(HASH[:-1] + "g") is None
    assert parse_hash(f"hash {HASH}") is None
    assert parse_hash(None) is None


def test_hash_problem__wrong_length_or_not_hex_answered_ordinary_text_left_alone() -> None:
    short = hash_problem(HASH[:-1], EN)
    assert short is not None and "64 characters, this has 63" in short
    assert "this has 66" in str(hash_problem("0x" + HASH + "cd", EN))
    not_hex = hash_problem(HASH[:-1] + "z", EN)
    assert not_hex is not None and "only the digits 0-9 and the letters a-f" in not_hex
    for fine in (HASH, "0x" + HASH, "hello there", "Buy our widgets today!", "12345", None):
        assert hash_problem(fine, EN) is None


def test_approved__address_amounts_at_the_locked_rate_and_a_qr_photo() -> None:
    message = event_message("approved", {}, order(), EN)
    assert message is not None and message["method"] == "sendPhoto"
    caption = message["caption"]
    assert f"<code>{SHOP}</code>" in caption
    # 25 USDT at 0.25 USDT per TRX.
    assert "<b>25 USDT</b> (TRC-20) or <b>100 TRX</b>" in caption
    assert "Top &lt;pin&gt; &amp; more" in caption
    _check_html({"caption": caption, "parse_mode": "HTML"})
    params, files = uploads.split(message)
    assert "_upload" not in params
    name, png, kind = files["photo"]
    assert (name, kind) == ("photo.png", "image/png")
    decoded = [code.text for code in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))]
    assert decoded == [SHOP]


def test_approved__usdt_only_order_names_no_trx() -> None:
    message = event_message("approved", {}, order(accepts_trx=False, trx_rate=None), EN)
    assert message is not None
    assert "TRX" not in message["caption"]
    assert "<b>25 USDT</b> (TRC-20) to" in message["caption"]


def test_trx_amount__rounded_up_to_the_sun_so_it_covers_the_price() -> None:
    # 10 USDT at 0.3 USDT per TRX is 33.333333... TRX: ask 33.333334, worth 10.0000002.
    message = event_message("approved", {}, order(price_micros=10_000_000, trx_rate="0.3"), EN)
    assert message is not None and "<b>33.333334 TRX</b>" in message["caption"]


def test_part_paid__what_arrived_what_is_left_and_by_when() -> None:
    detail = {"coin": "usdt", "amount": "12500000", "micros": 12_500_000, "paid_micros": 12_500_000}
    the_order = order(status="part_paid", paid_micros=12_500_000)
    message = event_message("part_paid", detail, the_order, EN)
    assert message is not None
    due = the_order["due_at"].strftime("%Y-%m-%d %H:%M UTC")
    assert message["text"] == (
        "12.5 USDT arrived for order #12: 12.5 USDT of 25 USDT paid. "
        f"<b>12.5 USDT</b> or <b>50 TRX</b> left to pay by {due}. "
        "Send the hash of the next payment here."
    )
    _check_html(message)


def test_credited__said_once_with_the_status_it_caused_alone_otherwise() -> None:
    detail = {"coin": "trx", "amount": "40000000", "micros": 10_000_000, "paid_micros": 10_000_000}
    assert event_message("credited", detail, order(told_with_status=True), EN) is None
    alone = event_message("credited", detail, order(status="expired"), EN)
    assert alone is not None
    assert alone["text"].startswith("40 TRX (worth 10 USDT) arrived for order #12, which is no")


def test_claim_waiting__says_trongrid_is_not_answering_and_names_the_hash_not_a_refusal() -> None:
    message = event_message("claim_waiting", {"tx_hash": "ab" * 32}, order(), EN)
    assert message is not None
    assert message["text"] == (
        "TronGrid, which we check TRON payments with, is not answering right now. Transaction "
        "<code>abababab…ababab</code> for order #12 is safe with us: we will check it as soon as "
        "TronGrid is back and tell you here. No need to send it again."
    )
    _check_html(message)


def test_paid__confirmation() -> None:
    detail = {"coin": "usdt", "amount": "25000000", "micros": 25_000_000, "paid_micros": 25_000_000}
    message = event_message("paid", detail, order(status="paid", paid_micros=25_000_000), EN)
    assert message is not None and "is paid in full, 25 USDT of 25 USDT" in message["text"]


@pytest.mark.parametrize(
    ("reason", "detail", "said"),
    [
        ("wrong_recipient", "TXYZabc", "The coins went to <code>TXYZabc</code>, not to the shop"),
        ("wrong_token", "x", "it takes USDT (TRC-20) or TRX"),
        ("not_found", "x", "TRON has not known this transaction for 15 minutes"),
        ("failed", "REVERT", "failed on chain"),
        ("before_approval", "x", "made before the order was approved"),
    ],
)
def test_claim_rejected__the_reason_in_plain_words(reason: str, detail: str, said: str) -> None:
    message = event_message(
        "claim_rejected", {"reason": reason, "detail": detail, "tx_hash": HASH}, order(), EN
    )
    assert message is not None
    assert said in message["text"]
    assert f"<code>{HASH[:8]}…{HASH[-6:]}</code>" in message["text"]
    _check_html(message)


def test_reminder_and_expired() -> None:
    reminder = event_message("reminder", {"left_micros": 5_000_000}, order(status="part_paid"), EN)
    assert (
        reminder is not None and "still needs <b>5 USDT</b> or <b>20 TRX</b>" in (reminder["text"])
    )
    expired = event_message("expired", {"paid_micros": 5_000_000}, order(status="expired"), EN)
    assert expired is not None
    assert "has expired" in expired["text"] and "5 USDT arrived" in expired["text"]
    assert ALREADY_SUBMITTED.text == "This transaction was already submitted."


def test_split__no_upload_is_plain_json_and_a_bad_one_is_refused() -> None:
    plain = {"chat_id": 1, "text": "hi"}
    assert uploads.split(plain) == (plain, {})
    for bad in ({"photo": {"qr": ""}}, {"photo": "x"}, {}, {"photo": {"qr": "x" * 600}}):
        with pytest.raises(uploads.BadUpload):
            uploads.split({"chat_id": 1, "_upload": bad})


def test_bot_api__a_file_goes_as_multipart_with_the_other_parameters_as_fields() -> None:
    params, files = uploads.split(
        {
            "chat_id": 42,
            "caption": "Pay here",
            "reply_markup": {"inline_keyboard": []},
            **uploads.qr_photo(SHOP),
        }
    )
    result, server = run(
        lambda seen: ok({"message_id": 3}),
        lambda api: api.call("123:x", "sendPhoto", params, files=files),
    )
    assert result == {"message_id": 3}
    [request] = server.seen
    head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
    parts = BytesParser(policy=HTTP).parsebytes(head + request.body)
    fields = {
        part.get_param("name", header="content-disposition"): part for part in parts.iter_parts()
    }  # type: ignore[attr-defined]
    assert fields["chat_id"].get_content() == "42"
    assert json.loads(fields["reply_markup"].get_content()) == {"inline_keyboard": []}
    assert fields["caption"].get_content() == "Pay here"
    photo = fields["photo"]
    assert photo.get_content_type() == "image/png"
    assert photo.get_payload(decode=True).startswith(b"\x89PNG")
