"""A month of made-up business written straight into the tables (`history.sql`), for the tests
of pages and lists that need every kind of row; the demo's own month is played through the
running system instead (`simulators.demo_month`)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from panel_api import sqlq

HISTORY = (Path(__file__).parent / "history.sql").read_text(encoding="utf-8")


def seed_history(database_url: str) -> bool:
    """Once, into a database with no payments yet (after a bot and a paid channel exist); True
    when this call wrote it."""
    with psycopg.connect(database_url) as conn, conn.transaction():
        conn.execute(sqlq.Q["lock_seed"])
        if conn.execute("SELECT 1 FROM payments LIMIT 1").fetchone() is not None:
            return False
        # Several statements, no parameters: sent as one simple query.
        conn.execute(HISTORY, prepare=False)  # type: ignore[arg-type]
    return True


# Telegram Stars: (person, days ago, stars, a subscription Telegram charges again by itself).
STARS = ((46, 2, 250, True), (47, 3, 600, False), (48, 12, 250, True), (48, 40, 100, False))


def add_stars(database_url: str) -> None:
    """Stars payments beside the month's gateway payments, as billing applies them: the
    invoice, the payment and botedge's record of Telegram's `successful_payment`."""
    with psycopg.connect(database_url) as conn, conn.transaction():
        for n, (person, days, stars, recurring) in enumerate(STARS):
            conn.execute(
                "WITH p AS (SELECT id FROM people WHERE telegram_user_id = 7000000 + %(person)s),"
                " plan AS (SELECT pl.id, pl.channel_id FROM plans pl JOIN channels c"
                "   ON c.id = pl.channel_id WHERE pl.is_default AND c.is_paid ORDER BY pl.id"
                "   LIMIT 1),"
                " i AS (INSERT INTO invoices (order_reference, person_id, channel_id, plan_id,"
                "   amount_minor, currency, period_days, grace_days, gateway, status,"
                "   created_at, expires_at, paid_at)"
                "  SELECT 'stars-' || %(n)s, p.id, plan.channel_id, plan.id, %(stars)s, 'XTR',"
                "   30, 0, 'telegram_stars', 'paid', now() - %(days)s * interval '1 day',"
                "   now() - %(days)s * interval '1 day' + interval '1 day',"
                "   now() - %(days)s * interval '1 day' FROM p, plan"
                "  RETURNING id, person_id, channel_id, order_reference, paid_at),"
                " pay AS (INSERT INTO payments (gateway, external_payment_id, invoice_id,"
                "   person_id, channel_id, amount_minor, currency, paid_at, applied)"
                "  SELECT 'telegram_stars', 'charge-' || %(n)s, i.id, i.person_id, i.channel_id,"
                "   %(stars)s, 'XTR', i.paid_at, true FROM i)"
                " INSERT INTO telegram_payments (bot_id, person_id, invoice_payload, currency,"
                "   total_amount, telegram_payment_charge_id, is_recurring, is_first_recurring,"
                "   paid_at, received_at, outcome, state, done_at)"
                " SELECT (SELECT min(id) FROM bots), i.person_id, i.order_reference, 'XTR',"
                "  %(stars)s, 'charge-' || %(n)s, %(recurring)s, %(recurring)s, i.paid_at,"
                "  i.paid_at, 'applied', 'done', i.paid_at FROM i",
                {"n": n, "person": person, "days": days, "stars": stars, "recurring": recurring},
            )
