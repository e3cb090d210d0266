"""Webhook deliveries per second through billing, beside pgbench running the same transaction.

    make bench-webhooks            # or: python loadtest/bench_webhooks.py --seconds 20

Starts a throwaway embedded PostgreSQL (or uses BENCH_DATABASE_URL, a role that may create a
database), migrates a fresh database, starts billing on loopback (one process per core, as
pgbench runs a thread per core; --processes), and:

1. sends distinct signed `subgate` payments from 32 concurrent clients spread over billing's
   processes for --seconds, each paying an invoice once, and prints deliveries per second with
   p50/p99 latency;
2. runs pgbench with 32 clients for the same time on a script that makes the same writes in one
   transaction (lock, payment, membership, history, access event, invoice, gateway event with
   the delivery's payload, statistics event), between the two halves of billing's time;
3. prints the ratio of the two.

The ratio is the price of HTTP, JSON, signature checking and Python on top of the SQL. Both
sides share this machine's cores with the load generator, and the report says what machine it was.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "loadtest"))

from benchdb import bench_database  # noqa: E402
from payments import subgate_delivery  # noqa: E402

from loadtest.stack import cpu_seconds, postgres_cpu  # noqa: E402
from shared import lifecycle  # noqa: E402
from shared.embedded_pg import POSTGRES_BIN_PATH, free_port  # noqa: E402

SECRET = "bench-subgate-secret-000000000000"  # noqa: S105 - a throwaway benchmark key
CLIENTS = 32

PGBENCH_SCRIPT = r"""
\set inv random(:first_invoice, :last_invoice)
\set ext random(1, 2000000000)
BEGIN;
SELECT id AS invoice_id, person_id, channel_id, amount_minor FROM invoices WHERE id = :inv \gset
SELECT pg_advisory_xact_lock(:person_id::int4, :channel_id::int4);
SELECT id, status FROM invoices WHERE id = :invoice_id;
INSERT INTO payments (gateway, external_payment_id, invoice_id, person_id, channel_id,
    amount_minor, currency, paid_at, applied)
  VALUES ('pgbench', :client_id || '-' || :ext, :invoice_id, :person_id, :channel_id,
    :amount_minor, 'USD', now(), true)
  ON CONFLICT (gateway, external_payment_id) DO NOTHING RETURNING id AS payment_id \gset
SELECT status, expires_at, grace_days FROM memberships
  WHERE person_id = :person_id AND channel_id = :channel_id;
INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days, next_check_at,
    updated_at)
  VALUES (:person_id, :channel_id, 'active', now() + interval '30 days', 3,
    now() + interval '30 days', now())
  ON CONFLICT (person_id, channel_id) DO UPDATE
    SET status = 'active',
        expires_at = greatest(memberships.expires_at, now()) + interval '30 days',
        next_check_at = greatest(memberships.expires_at, now()) + interval '30 days',
        updated_at = now();
INSERT INTO membership_events (person_id, channel_id, from_status, to_status, old_expires_at,
    new_expires_at, cause, payment_id, paid_at, period_days, at)
  VALUES (:person_id, :channel_id, 'active', 'active', now(), now() + interval '30 days',
    'payment', :payment_id, now(), 30, now()) RETURNING id AS event_id \gset
INSERT INTO access_events (kind, person_id, channel_id, membership_event_id, expires_at,
    created_at, available_at)
  VALUES ('grant', :person_id, :channel_id, :event_id, now(), now(), now());
UPDATE invoices SET status = 'paid', paid_at = coalesce(paid_at, now()) WHERE id = :invoice_id;
INSERT INTO gateway_events (gateway, event_type, order_reference, external_payment_id, outcome,
    payment_id, payload, received_at)
  VALUES ('pgbench', 'payment', 'bench-' || :person_id, :client_id || '-' || :ext, 'applied',
    :payment_id, jsonb_build_object('orderReference', 'bench-' || :person_id,
    'externalPaymentId', :client_id || '-' || :ext, 'amount', '12.50', 'currency', 'USD',
    'timestamp', extract(epoch FROM now())::bigint, 'signature', md5(:ext::text)), now());
INSERT INTO stat_events (at, kind, bot_id, person_id, amount, currency)
  VALUES (now(), 'payment', (SELECT manager_bot_id FROM channels WHERE id = :channel_id),
    :person_id, :amount_minor, 'USD');
END;
"""


def setup(url: str, invoices: int) -> list[str]:
    """One paid channel, `invoices` people each with an open invoice; their references."""
    with psycopg.connect(url) as conn:
        channel = conn.execute(
            "INSERT INTO channels (telegram_chat_id, title, is_paid)"
            " VALUES (-100777, 'Bench', true) RETURNING id"
        ).fetchone()[0]  # type: ignore[index]
        plan = conn.execute(
            "INSERT INTO plans (channel_id, price_minor, currency, period_days, grace_days,"
            " is_default) VALUES (%s, 1250, 'USD', 30, 3, true) RETURNING id",
            (channel,),
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO people (telegram_user_id) SELECT 900000 + g FROM generate_series(1, %s) g",
            (invoices,),
        )
        conn.execute(
            "INSERT INTO invoices (order_reference, person_id, channel_id, plan_id, amount_minor,"
            " currency, period_days, grace_days, gateway, expires_at)"
            " SELECT 'bench-' || p.id, p.id, %s, %s, 1250, 'USD', 30, 3, 'subgate',"
            " now() + interval '1 day' FROM people p ORDER BY p.id",
            (channel, plan),
        )
        return [r[0] for r in conn.execute("SELECT order_reference FROM invoices ORDER BY id")]


def invoice_ids(url: str) -> tuple[int, int]:
    """The first and last invoice's id, for pgbench to pick among."""
    with psycopg.connect(url) as conn:
        first, last = conn.execute("SELECT min(id), max(id) FROM invoices").fetchone()  # type: ignore[misc]
        return first, last


async def drive(
    bases: list[str], deliveries: Iterator[bytes], seconds: float
) -> tuple[int, list[float], int]:
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def worker(client: aiohttp.ClientSession, url: str) -> None:
        nonlocal errors
        while time.perf_counter() < deadline:
            body = next(deliveries)
            started = time.perf_counter()
            async with client.post(url, data=body) as response:
                await response.read()
            latencies.append(time.perf_counter() - started)
            if response.status != 200:
                errors += 1

    # aiohttp, as pgbench's side is C: the driver shares the cores with what it measures. With
    # httpx (a client each) the driver took 1.0 ms of CPU a delivery.
    # The clients spread over the billing processes, as a load balancer in front would.
    urls = [f"{base}/v1/webhooks/payments/subgate" for base in bases]
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=CLIENTS),
        timeout=aiohttp.ClientTimeout(total=30),
        headers={"content-type": "application/json"},
    ) as client:
        await asyncio.gather(*(worker(client, urls[n % len(urls)]) for n in range(CLIENTS)))
    return len(latencies), latencies, errors


def fresh_payments(orders: list[str]) -> Iterator[bytes]:
    """Each open invoice paid once, by a payment never sent before (the warm-up's included):
    an invoice paid twice or a redelivery takes another path, with a warning logged."""
    for n, order in enumerate(orders):
        yield subgate_delivery(SECRET, order, f"bench-{n}")
    raise SystemExit(f"all {len(orders)} invoices paid: run with more --invoices")


def vacuum(url: str) -> None:
    """Each side starts on a vacuumed database: the autovacuum of the other side's dead rows
    does not run in its time, on its CPU."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


def postmaster_of(url: str) -> int | None:
    """The server's postmaster when it runs on this machine (a backend's parent), else None."""
    with psycopg.connect(url) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()
    try:
        return int(Path(f"/proc/{backend[0]}/stat").read_text().rsplit(")", 1)[1].split()[1])  # type: ignore[index]
    except (FileNotFoundError, IndexError, ValueError):
        return None


def cpu(billings: list[int], postmaster: int | None) -> tuple[float, float, float]:
    """CPU seconds so far of billing's processes, PostgreSQL (nan when not on this machine) and
    this process."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return (
        sum(cpu_seconds(pid) for pid in billings),
        postgres_cpu(postmaster) if postmaster else math.nan,
        own.ru_utime + own.ru_stime,
    )


def run_pgbench(url: str, invoices: tuple[int, int], *how: str) -> str:
    """pgbench's output for PGBENCH_SCRIPT paying invoices with ids in the range `invoices`, run
    as `how` says (clients, -T or -t)."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(PGBENCH_SCRIPT)
    os.chmod(script.name, 0o644)
    try:
        result = subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "pgbench"),
                "-n",
                *how,
                "-D",
                f"first_invoice={invoices[0]}",
                "-D",
                f"last_invoice={invoices[1]}",
                "-f",
                script.name,
                url,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(script.name)
    if result.returncode != 0:
        raise SystemExit(f"pgbench failed:\n{result.stderr}\n{result.stdout}")
    return result.stdout


def pgbench(url: str, seconds: int, invoices: tuple[int, int]) -> tuple[float, float]:
    """Transactions per second and pgbench's own CPU seconds."""
    started = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = run_pgbench(url, invoices, "-c", str(CLIENTS), "-j", "2", "-T", str(seconds))
    match = re.search(r"tps = ([\d.]+)", out)
    if match is None:
        raise SystemExit(f"no tps in pgbench output:\n{out}")
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = ended.ru_utime + ended.ru_stime - started.ru_utime - started.ru_stime
    return float(match.group(1)), used


def server_side_quantiles(bases: list[str]) -> tuple[str, str]:
    """p50 and p99 bucket bounds of billing's own request histograms for the webhook route."""
    route = 'route="/v1/webhooks/payments/{gateway}"'
    seen: dict[float, float] = {}
    for base in bases:
        for line in httpx.get(f"{base}/metrics").text.splitlines():
            if line.startswith("http_request_duration_seconds_bucket") and route in line:
                bound = float(line.split('le="')[1].split('"')[0])
                seen[bound] = seen.get(bound, 0.0) + float(line.rsplit(" ", 1)[1])
    buckets = sorted(seen.items())
    total = buckets[-1][1] if buckets else 0.0

    def bound_for(q: float) -> str:
        for upper, seen in buckets:
            if seen >= q * total:
                return f"{upper * 1000:g} ms"
        return "n/a"

    return bound_for(0.5), bound_for(0.99)


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000)[int(q * 1000) - 1] if len(values) > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--invoices", type=int, default=60_000)
    parser.add_argument(
        "--processes",
        type=int,
        default=os.cpu_count() or 1,
        help="billing processes, the clients spread over them (default: one per core)",
    )
    args = parser.parse_args()

    with bench_database(
        {"max_connections": "200", "shared_buffers": "256MB", "synchronous_commit": "on"}
    ) as url:
        run(url, args.seconds, args.invoices, args.processes)


def run(url: str, seconds: int, invoices: int, processes: int) -> None:
    billings: list[subprocess.Popen[bytes]] = []
    try:
        orders = setup(url, invoices)
        bases = []
        for _ in range(processes):
            port = free_port()
            env = {
                **os.environ,
                "DATABASE_URL": url,
                "PORT": str(port),
                "LOG_LEVEL": "WARNING",
                "SWEEP_TOKEN": "bench-sweep-token-0000",
                "SERVICE_TOKEN": "bench-service-token-000",
                "SUBGATE_WEBHOOK_SECRET": SECRET,
                "DB_POOL_MAX": "4",
                "DB_POOL_MIN": "4",
            }
            billings.append(subprocess.Popen([sys.executable, "-m", "billing"], env=env, cwd=ROOT))
            bases.append(f"http://127.0.0.1:{port}")
        for base in bases:
            for _ in range(100):
                try:
                    if httpx.get(f"{base}/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
        # Billing pays the first two thirds in order, pgbench picks among the rest: neither
        # pays an invoice the other paid (billing takes another path for those).
        share = len(orders) * 2 // 3
        deliveries = fresh_payments(orders[:share])
        first, last = invoice_ids(url)
        lifecycle.run(drive(bases, deliveries, 2))  # warm-up
        postmaster = postmaster_of(url)
        pids = [billing.pid for billing in billings]
        # Half of billing's time, pgbench's, then billing's other half: a drift in the
        # machine's speed weighs on both sides alike.
        count, latencies, errors, used = 0, [], 0, [0.0, 0.0, 0.0]
        for then_pgbench in (True, False):
            vacuum(url)
            before = cpu(pids, postmaster)
            done, timed, failed = lifecycle.run(drive(bases, deliveries, seconds / 2))
            used = [u + b - a for u, a, b in zip(used, before, cpu(pids, postmaster), strict=True)]
            count, errors, latencies = count + done, errors + failed, latencies + timed
            if then_pgbench:
                vacuum(url)
                before = cpu(pids, postmaster)
                tps, pgbench_cpu = pgbench(url, seconds, (first + share, last))
                pg_used = cpu(pids, postmaster)[1] - before[1]
        rate = count / seconds
        server = server_side_quantiles(bases)
        transactions = tps * seconds
        machine = f"{platform.machine()}, {os.cpu_count()} cores"
        print(f"machine: {machine}, Python {platform.python_version()}")
        print(
            f"billing webhooks, {CLIENTS} concurrent clients over {processes} billing"
            f" process(es), {seconds} s:"
        )
        print(f"  {count} deliveries, {errors} errors, {rate:.0f} deliveries/s")
        print(
            f"  latency p50 {percentile(latencies, 0.5) * 1000:.1f} ms,"
            f" p99 {percentile(latencies, 0.99) * 1000:.1f} ms"
        )
        print(f"  inside billing (its own histogram): p50 <= {server[0]}, p99 <= {server[1]}")
        print(
            f"  CPU per delivery: billing {used[0] / count * 1000:.2f} ms, PostgreSQL"
            f" {used[1] / count * 1000:.2f} ms, this driver {used[2] / count * 1000:.2f} ms"
        )
        print(f"pgbench, same transaction, {CLIENTS} clients, {seconds} s: {tps:.0f} tps")
        print(
            f"  CPU per transaction: PostgreSQL {pg_used / transactions * 1000:.2f} ms,"
            f" pgbench {pgbench_cpu / transactions * 1000:.2f} ms"
        )
        print(f"ratio webhooks/pgbench: {rate / tps:.2f}")
    finally:
        for billing in billings:
            billing.terminate()
        for billing in billings:
            billing.wait(timeout=15)


if __name__ == "__main__":
    main()
