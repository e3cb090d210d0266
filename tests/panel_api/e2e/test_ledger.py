"""People and money through the panel: invoices made by billing, payments, memberships and
their history, deliveries that need the owner, each bot's visitors."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx
import psycopg
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    TEST_BCRYPT_ROUNDS,
    Serve,
    Served,
    panel_settings,
    serve_billing,
    wait_until,
)
from tests.panel_api.e2e.conftest import call_as

PASSWORD = "correct horse battery"


@dataclass
class Setup:
    panel: str
    owner: str
    billing: Served

    def get(self, path: str) -> httpx.Response:
        return call_as(self.owner, "GET", f"{self.panel}{path}")

    def post(self, path: str, body: object) -> httpx.Response:
        return call_as(self.owner, "POST", f"{self.panel}{path}", body)


@pytest.fixture
def setup(serve: Serve, database_url: str) -> Iterator[Setup]:
    billing = serve_billing(serve, database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BILLING_URL=billing.url)
    with serve_in_thread(create_app(settings)) as panel:
        yield Setup(panel, owner_token(panel), billing)


def owner_token(panel: str) -> str:
    login = {"email": "owner@example.com", "password": PASSWORD}
    return str(HTTP.post(f"{panel}/v1/auth/login", json=login).json()["access_token"])


def test_ledger__an_invoice_paid_shows_everywhere(setup: Setup, database_url: str) -> None:
    channel = gateways.add_paid_channel(database_url)
    made = setup.post(
        "/v1/invoices", {"telegram_user_id": 4242, "channel_id": channel, "gateway": "subgate"}
    )
    assert made.status_code == 201, made.text
    order = made.json()["order_reference"]
    with httpx.Client(verify=verified()) as client:
        paid = gateways.subgate(order, "pay-1", "12.50").send(client, setup.billing.url)
        orphan = gateways.subgate("gh_unknown", "pay-2", "12.50").send(client, setup.billing.url)
    assert (paid.status_code, orphan.status_code) == (200, 200)

    with psycopg.connect(database_url) as conn:
        conn.execute(
            "UPDATE people SET username = 'ana_k', first_name = 'Ana', last_name = 'K'"
            " WHERE telegram_user_id = 4242"
        )
    ana = {"username": "ana_k", "first_name": "Ana", "last_name": "K"}
    [invoice] = setup.get("/v1/invoices").json()["items"]
    assert (invoice["order_reference"], invoice["status"], invoice["amount_minor"]) == (
        order,
        "paid",
        "1250",
    )
    # Each list names the person, not only their id.
    assert invoice["person"] == ana
    [payment] = setup.get("/v1/payments?gateway=subgate&applied=true").json()["items"]
    assert (payment["external_payment_id"], payment["telegram_user_id"]) == ("pay-1", 4242)
    assert payment["person"] == ana
    assert setup.get("/v1/payments?applied=false").json()["items"] == []
    # Payments are found by the person and the channel, as memberships are.
    for q, found in (("@ana", 1), ("4242", 1), ("Ana K", 1), ("4243", 0), ("@bob", 0)):
        answer = setup.get(f"/v1/payments?{urlencode({'q': q, 'channel': channel})}")
        assert len(answer.json()["items"]) == found, q
    assert setup.get(f"/v1/payments?channel={channel + 1}").json()["items"] == []
    # And by a payment's reference, the invoice's or the gateway's, on each person list (the
    # people list is of a bot's visitors: Ana has written to one).
    bot = insert_bot(database_url)[0]
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at)"
            " SELECT %s, id, now(), now() FROM people WHERE telegram_user_id = 4242",
            (bot,),
        )
    for path in ("/v1/payments", "/v1/memberships", "/v1/people"):
        for q, found in ((order, 1), ("pay-1", 1), ("pay-9", 0), (order[:-1], 0)):
            answer = setup.get(f"{path}?{urlencode({'q': q})}")
            assert len(answer.json()["items"]) == found, (path, q)
    exported = setup.get("/v1/exports/payments.csv?q=ana").text.lstrip("\ufeff")
    [row] = list(csv.DictReader(io.StringIO(exported)))
    assert (row["external_payment_id"], row["amount"], row["currency"]) == ("pay-1", "12.50", "USD")
    assert (row["username"], row["first_name"], row["applied"]) == ("ana_k", "Ana", "true")
    [membership] = setup.get("/v1/memberships?status=active").json()["items"]
    assert (membership["telegram_user_id"], membership["person"]) == (4242, ana)
    access = setup.get("/v1/access-events").json()["items"]
    assert access and all(event["person"] == ana for event in access)
    history = setup.get(f"/v1/memberships/{membership['person_id']}/{channel}/events").json()
    assert [event["cause"] for event in history["items"]] == ["payment"]
    # The answer says whose history it is, in both ids.
    assert (history["person_id"], history["telegram_user_id"], history["channel_id"]) == (
        membership["person_id"],
        4242,
        channel,
    )
    assert history["person"] == ana
    found = setup.get("/v1/people/by-telegram-id/4242").json()
    assert (found["person_id"], found["telegram_user_id"], found["person"]) == (
        membership["person_id"],
        4242,
        ana,
    )
    missing = setup.get("/v1/people/by-telegram-id/4243")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    [event] = setup.get("/v1/gateway-events").json()["items"]
    assert (event["outcome"], event["order_reference"]) == ("orphan", "gh_unknown")


def test_ledger__gateway_events_carry_what_was_paid_what_the_invoice_asks_and_its_gateway(
    setup: Setup, database_url: str
) -> None:
    """For the panel to say why in its own language: billing's `detail` is English."""
    channel = gateways.add_paid_channel(database_url)
    orders = []
    for user in (4301, 4302):
        made = setup.post(
            "/v1/invoices", {"telegram_user_id": user, "channel_id": channel, "gateway": "subgate"}
        )
        assert made.status_code == 201, made.text
        orders.append(made.json()["order_reference"])
    with httpx.Client(verify=verified()) as client:
        short = gateways.subgate(orders[0], "pay-short", "12.00").send(client, setup.billing.url)
        other = gateways.wayforpay(orders[1], "12.50").send(client, setup.billing.url)
    assert (short.status_code, other.status_code) == (200, 200)

    events = {e["outcome"]: e for e in setup.get("/v1/gateway-events").json()["items"]}
    assert events.keys() == {"amount_mismatch", "gateway_mismatch"}
    short_paid = events["amount_mismatch"]
    assert short_paid["detail"]
    assert (short_paid["paid"], short_paid["paid_currency"], short_paid["paid_minor"]) == (
        "12.00",
        "USD",
        "1200",
    )
    assert (short_paid["due"], short_paid["due_currency"], short_paid["due_minor"]) == (
        "12.50",
        "USD",
        "1250",
    )
    elsewhere = events["gateway_mismatch"]
    assert (elsewhere["gateway"], elsewhere["invoice_gateway"]) == ("wayforpay", "subgate")
    assert (elsewhere["paid"], elsewhere["due"]) == (None, "12.50")


@pytest.mark.parametrize(
    ("currency", "price_minor", "amount"),
    [("JPY", 500, "500"), ("KWD", 1250, "1.250"), ("USD", 1250, "12.50"), ("XTR", 250, "250")],
)
def test_ledger__amounts_in_the_currencys_own_digits(
    setup: Setup, database_url: str, currency: str, price_minor: int, amount: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=price_minor, currency=currency)
    if currency == "XTR":
        # Telegram's invoice, which the bot sends: billing makes it, the panel only lists it.
        with httpx.Client(verify=verified()) as client:
            gateways.create_invoice(client, setup.billing.url, 77, channel, "telegram_stars")
    else:
        made = setup.post(
            "/v1/invoices", {"telegram_user_id": 77, "channel_id": channel, "gateway": "subgate"}
        )
        assert made.status_code == 201, made.text
    [invoice] = setup.get("/v1/invoices").json()["items"]
    assert (invoice["amount_minor"], invoice["currency"], invoice["amount"]) == (
        str(price_minor),
        currency,
        amount,
    )


def test_ledger__billings_refusal_comes_back_unchanged(setup: Setup) -> None:
    refused = setup.post(
        "/v1/invoices", {"telegram_user_id": 1, "channel_id": 999, "gateway": "subgate"}
    )
    assert refused.status_code == 404
    assert refused.json()["type"] == "/problems/unknown-channel"


def test_ledger__people_pages_across_bots(setup: Setup, database_url: str) -> None:
    bots = [insert_bot(database_url, 9800 + n)[0] for n in range(2)]
    with psycopg.connect(database_url) as conn:
        for n in range(3):
            person = conn.execute(
                "INSERT INTO people (telegram_user_id) VALUES (%s) RETURNING id", (700 + n,)
            ).fetchone()
            assert person is not None
            for bot in bots:
                conn.execute(
                    "INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at)"
                    " VALUES (%s, %s, now(), now())",
                    (bot, person[0]),
                )
    seen: list[tuple[int, int]] = []
    cursor = None
    while True:
        answer = setup.get("/v1/people?limit=4" + (f"&cursor={cursor}" if cursor else "")).json()
        seen += [(item["bot_id"], item["telegram_user_id"]) for item in answer["items"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert seen == [(bot, 700 + n) for bot in bots for n in range(3)]
    one_bot = setup.get(f"/v1/people?bot={bots[1]}").json()["items"]
    assert {item["bot_id"] for item in one_bot} == {bots[1]}


def test_ledger__people_and_memberships_found_by_id_username_or_name(
    setup: Setup, database_url: str
) -> None:
    bot = insert_bot(database_url, 9810)[0]
    channel = gateways.add_paid_channel(database_url)
    people = [
        (801, "sara_k", "Sara", "Karimi"),
        (802, "karim_50", "Karim", None),
        (803, None, "Ali", "100%_real"),
    ]
    with psycopg.connect(database_url) as conn:
        for user, username, first, last in people:
            conn.execute(
                "WITH p AS (INSERT INTO people (telegram_user_id, username, first_name, last_name)"
                " VALUES (%s, %s, %s, %s) RETURNING id),"
                " b AS (INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at)"
                "  SELECT %s, id, now(), now() FROM p)"
                " INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
                "  next_check_at, updated_at)"
                " SELECT id, %s, 'active', now() + interval '9 days', 3,"
                "  now() + interval '9 days', now() FROM p",
                (user, username, first, last, bot, channel),
            )

    def found(path: str, q: str) -> list[int]:
        sep = "&" if "?" in path else "?"
        answer = setup.get(f"{path}{sep}{urlencode({'q': q})}")
        assert answer.status_code == 200, answer.text
        return sorted(item["telegram_user_id"] for item in answer.json()["items"])

    for q, users in (
        ("802", [802]),
        ("۸۰۲", [802]),  # typed with Persian digits
        ("@sara", [801]),
        ("SARA", [801]),  # the start of a username, or a part of a name, in any case
        ("karim", [801, 802]),
        ("100%", [803]),
        ("a_k", []),  # _ is a character here, not LIKE's any one ("a K" in Sara Karimi)
        ("80", []),  # an id is matched whole
    ):
        assert found("/v1/people", q) == users, q
        assert found(f"/v1/memberships?channel={channel}", q) == users, q
    assert setup.get("/v1/people?q=").status_code == 422


def test_ledger__csv_exports_stream_every_row_with_the_lists_filters(
    setup: Setup, database_url: str
) -> None:
    bot = insert_bot(database_url, 9811)[0]
    channel = gateways.add_paid_channel(database_url)
    other = gateways.add_paid_channel(database_url, chat_id=-1001000000002)
    with psycopg.connect(database_url) as conn:
        # 1,200 members (more than one batch of the cursor), every fifth in grace, and a
        # name a spreadsheet would run as a formula.
        conn.execute(
            "WITH p AS (INSERT INTO people (telegram_user_id, username, first_name, last_name)"
            " SELECT 900000 + n, 'u' || n, CASE WHEN n = 7 THEN '=HYPERLINK(1)' ELSE 'سارا' END,"
            "  NULL FROM generate_series(1, 1200) n RETURNING id, telegram_user_id),"
            " b AS (INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at)"
            "  SELECT %s, id, now(), now() FROM p)"
            " INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
            "  next_check_at, updated_at)"
            " SELECT id, CASE WHEN telegram_user_id = 901200 THEN %s ELSE %s END,"
            "  CASE WHEN telegram_user_id %% 5 = 0 THEN 'grace' ELSE 'active' END,"
            "  now() + interval '9 days', 3, now() + interval '9 days', now() FROM p",
            (bot, other, channel),
        )

    def export(path: str) -> tuple[httpx.Response, list[dict[str, str]]]:
        answer = setup.get(path)
        assert answer.status_code == 200, answer.text
        assert answer.text.startswith("\ufeff")
        return answer, list(csv.DictReader(io.StringIO(answer.text[1:])))

    answer, rows = export(f"/v1/exports/memberships.csv?status=grace&channel={channel}")
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(
        r'attachment; filename="memberships-\d{4}-\d{2}-\d{2}\.csv"',
        answer.headers["content-disposition"],
    )
    # Sent as it is read: chunked, with no length known up front.
    assert "content-length" not in answer.headers
    assert answer.headers["transfer-encoding"] == "chunked"
    # Every fifth of the channel's 1,199: the last one is in the other channel.
    assert len(rows) == 239
    assert {row["status"] for row in rows} == {"grace"}
    assert [int(row["telegram_user_id"]) for row in rows] == list(range(900005, 901200, 5))
    assert rows[0]["first_name"] == "سارا"
    # Sorted as the list is asked to sort.
    _, rows = export(f"/v1/exports/memberships.csv?channel={channel}&sort=-person_id")
    assert len(rows) == 1199 and rows[0]["telegram_user_id"] == "901199"
    _, rows = export("/v1/exports/people.csv?q=900007")
    assert [row["telegram_user_id"] for row in rows] == ["900007"]
    assert rows[0]["first_name"] == "'=HYPERLINK(1)"
    _, rows = export(f"/v1/exports/people.csv?bot={bot}")
    assert len(rows) == 1200 and set(rows[0]) == {
        "bot_id", "telegram_user_id", "username", "first_name", "last_name",
        "first_seen_at", "last_seen_at", "blocked",
    }  # fmt: skip
    assert setup.get("/v1/exports/memberships.csv?status=gone").status_code == 422


def test_ledger__gateways_are_the_ones_billing_holds_keys_for(
    serve: Serve, database_url: str
) -> None:
    # Billing with Subgate's secret alone.
    billing = serve_billing(
        serve,
        database_url,
        STRIPE_WEBHOOK_SECRET="",
        WAYFORPAY_SECRET_KEY="",
        WAYFORPAY_MERCHANT_ACCOUNT="",
    )
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    with serve_in_thread(create_app(panel_settings(database_url, BILLING_URL=billing.url))) as url:
        setup = Setup(url, owner_token(url), billing)
        # Telegram Stars need no key: always on.
        assert setup.get("/v1/gateways").json() == {
            "gateways": ["subgate", "telegram_stars"],
            "titles": {"subgate": "Subgate", "telegram_stars": "Telegram Stars"},
        }


@pytest.mark.parametrize(
    "path", ["/v1/payments?applied=maybe", "/v1/memberships?status=gone", "/v1/people?bot=x"]
)
def test_ledger__bad_filters_are_422(setup: Setup, path: str) -> None:
    assert setup.get(path).status_code == 422


def test_ledger__a_stars_subscription_paid_shows_in_stars_with_its_renewal(
    setup: Setup, database_url: str
) -> None:
    """A Stars payment as botedge records it: billing's loop applies it, and the panel shows
    it in XTR (whole stars) beside the rest, with the subscription's renewal on the membership."""
    bot, _, _ = insert_bot(database_url, 5550701, "polling")
    channel = gateways.add_paid_channel(
        database_url, chat_id=-1001000000701, currency="XTR", price_minor=250
    )
    with httpx.Client(verify=verified()) as client:
        made = gateways.create_invoice(client, setup.billing.url, 4343, channel, "telegram_stars")
    renews = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(days=30)
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO telegram_payments (bot_id, person_id, invoice_payload, currency,"
            " total_amount, telegram_payment_charge_id, is_recurring, is_first_recurring,"
            " subscription_expiration_date, paid_at, received_at)"
            " SELECT %s, id, %s, 'XTR', 250, 'stx-1', true, true, %s, now(), now()"
            "   FROM people WHERE telegram_user_id = 4343",
            (bot, made["order_reference"], renews),
        )
        conn.execute(
            "INSERT INTO star_subscriptions (bot_id, person_id, invoice_payload,"
            " first_charge_id, state, renews_at, changed_at)"
            " SELECT %s, id, %s, 'stx-1', 'active', %s, now()"
            "   FROM people WHERE telegram_user_id = 4343",
            (bot, made["order_reference"], renews),
        )
        conn.execute("NOTIFY telegram_payments")
    wait_until(lambda: setup.get("/v1/payments").json()["items"] != [], 30, "the payment applied")
    [payment] = setup.get("/v1/payments").json()["items"]
    assert (payment["gateway"], payment["amount"], payment["currency"], payment["applied"]) == (
        "telegram_stars",
        "250",
        "XTR",
        True,
    )
    [membership] = setup.get("/v1/memberships").json()["items"]
    assert membership["status"] == "active"
    assert (membership["stars_renewal"], membership["stars_renews_at"]) == (
        "active",
        renews.isoformat().replace("+00:00", "Z"),
    )
    revenue = setup.get("/v1/dashboard").json()["revenue"]
    assert [(r["currency"], r["amount"]) for r in revenue] == [("XTR", "250")]
    # Telegram's invoice is the bot's to send: the panel makes none (not among its gateways).
    refused = setup.post(
        "/v1/invoices",
        {"telegram_user_id": 4343, "channel_id": channel, "gateway": "telegram_stars"},
    )
    assert refused.status_code == 422
    assert refused.json()["errors"] == [{"field": "gateway", "code": "not-one-of"}]
