"""bench-webhooks compares like with like: one transaction of pgbench's script writes the rows one
applied payment writes through billing."""

from __future__ import annotations

import httpx
import psycopg

from loadtest import bench_webhooks
from loadtest.payments import subgate_delivery
from tests.conftest import Serve, serve_billing

WRITTEN = (
    "payments",
    "membership_events",
    "access_events",
    "gateway_events",
    "stat_events",
)


def rows(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
            for table in (*WRITTEN, "memberships")
        }


def changed(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {table: after[table] - before[table] for table in before}


def test_pgbench_script__writes_what_one_applied_payment_writes(
    serve: Serve, database_url: str
) -> None:
    orders = bench_webhooks.setup(database_url, 2)
    billing = serve_billing(serve, database_url, SUBGATE_WEBHOOK_SECRET=bench_webhooks.SECRET)
    start = rows(database_url)
    answer = httpx.post(
        f"{billing.url}/v1/webhooks/payments/subgate",
        content=subgate_delivery(bench_webhooks.SECRET, orders[0], "bench-test-1"),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    paid = rows(database_url)
    # One transaction paying the other person's invoice (its id), so its membership is new too.
    with psycopg.connect(database_url) as conn:
        second = conn.execute(
            "SELECT id FROM invoices WHERE order_reference = %s", (orders[1],)
        ).fetchone()[0]  # type: ignore[index]
    out = bench_webhooks.run_pgbench(database_url, (second, second), "-c", "1", "-t", "1")
    assert "number of transactions actually processed: 1/1" in out
    benched = rows(database_url)

    by_billing = changed(start, paid)
    assert by_billing == changed(paid, benched)
    assert all(by_billing[table] == 1 for table in (*WRITTEN, "memberships"))
    with psycopg.connect(database_url) as conn:
        kinds = conn.execute("SELECT kind, amount FROM stat_events ORDER BY id").fetchall()
    assert kinds == [("payment", 1250), ("payment", 1250)]
