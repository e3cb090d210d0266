"""`in_audience`, the SQL test a broadcast's fan-out queues by and the panel counts by: its
language is the one `botedge.words.pick` gives, whatever the person chose, Telegram says and
the bot's default; a plan counts those who paid for it, not those who only asked."""

from __future__ import annotations

import itertools

import psycopg

from botedge.words import LANGUAGES, pick

# Every choice a person can have made, what Telegram may say of them, and each default.
CHOICES = [*LANGUAGES, None, "de"]
TELEGRAM = [
    None,
    "",
    "en",
    "en-US",
    "FA",
    "fa-IR",
    "ru",
    "ar-SA",
    "de",
    "pt-BR",
    "x-",
    "-fa",
    "fa-",
]


def test_in_audience__the_language_is_the_one_the_bot_writes_in(database_url: str) -> None:
    cases = list(itertools.product(CHOICES, TELEGRAM, LANGUAGES, LANGUAGES))
    with psycopg.connect(database_url) as conn:
        found = conn.execute(
            "SELECT in_audience(1, c, tg, d, NULL, NULL, NULL, w, NULL)"
            "  FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS x(c, tg, d, w)",
            [list(column) for column in zip(*cases, strict=True)],
        ).fetchall()
    assert len(found) == len(cases) == 6 * 13 * 4 * 4
    wrong = [
        case
        for case, (admitted,) in zip(cases, found, strict=True)
        if admitted is not (pick(case[0], case[1], case[2]) == case[3])
    ]
    assert wrong == []


def test_in_audience__a_channel_a_status_a_plan_and_people_each_narrow_it(
    database_url: str,
) -> None:
    with psycopg.connect(database_url) as conn:
        ids = [
            row[0]
            for row in conn.execute(
                "INSERT INTO people (telegram_user_id) SELECT g FROM generate_series(71, 74) g"
                " RETURNING id"
            ).fetchall()
        ]
        payer, asker, graced, outsider = ids
        channel = conn.execute(
            "INSERT INTO channels (telegram_chat_id, title, is_paid) VALUES (-1007100, 'C', true)"
            " RETURNING id"
        ).fetchone()
        assert channel is not None
        plan = conn.execute(
            "INSERT INTO plans (channel_id, price_minor, currency, period_days, grace_days,"
            " is_default) VALUES (%s, 500, 'USD', 30, 3, true) RETURNING id",
            (channel[0],),
        ).fetchone()
        assert plan is not None
        for person, status in ((payer, "active"), (asker, "active"), (graced, "grace")):
            conn.execute(
                "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
                " next_check_at, updated_at) VALUES (%s, %s, %s, now(), 3, now(), now())",
                (person, channel[0], status),
            )
        # Both asked for an invoice at the plan; only the payer paid it.
        for person, reference in ((payer, "ord-71"), (asker, "ord-72")):
            invoice = conn.execute(
                "INSERT INTO invoices (order_reference, person_id, channel_id, plan_id, gateway,"
                " amount_minor, currency, period_days, grace_days, expires_at)"
                " VALUES (%s, %s, %s, %s, 'subgate', 500, 'USD', 30, 3, now()) RETURNING id",
                (reference, person, channel[0], plan[0]),
            ).fetchone()
            assert invoice is not None
            if person == payer:
                conn.execute(
                    "INSERT INTO payments (gateway, external_payment_id, invoice_id, person_id,"
                    " channel_id, amount_minor, currency, paid_at, applied)"
                    " VALUES ('subgate', 'p-71', %s, %s, %s, 500, 'USD', now(), true)",
                    (invoice[0], person, channel[0]),
                )

        def members(channel_id: int | None, plan_id: int | None, status: str | None) -> set[int]:
            found = set()
            for person in ids:
                row = conn.execute(
                    "SELECT in_audience(%s, NULL, NULL, 'en', %s, %s, %s, NULL, NULL)",
                    (person, channel_id, plan_id, status),
                ).fetchone()
                if row is not None and row[0]:
                    found.add(person)
            return found

        assert members(None, None, None) == set(ids)
        assert members(channel[0], None, None) == {payer, asker, graced}
        assert members(channel[0], None, "active") == {payer, asker}
        assert members(channel[0], None, "grace") == {graced}
        assert members(channel[0], plan[0], None) == {payer}
        by_hand = [
            conn.execute(
                "SELECT in_audience(%s, NULL, NULL, 'en', NULL, NULL, NULL, NULL, %s::integer[])",
                (person, [outsider, graced]),
            ).fetchone()
            for person in ids
        ]
        assert by_hand == [(False,), (False,), (True,), (True,)]
