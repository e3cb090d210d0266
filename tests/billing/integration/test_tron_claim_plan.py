"""The TRON verifier's claim finds due hashes through its partial index, however many hashes
have been judged."""

from __future__ import annotations

import json

import psycopg

from billing import sqlq
from tests.billing.e2e.test_tron_verifier import approved_order
from tests.conftest import scans_of


def test_tron_claim__plan_uses_the_due_index(database_url: str) -> None:
    order = approved_order(database_url)
    with psycopg.connect(database_url) as conn:
        # Mostly judged, a few still waiting on the chain.
        conn.execute(
            "INSERT INTO tron_claims (tx_hash, order_id, state, reason)"
            " SELECT md5(g::text) || md5((g + 1)::text), %s,"
            " CASE WHEN g %% 30 = 0 THEN 'pending' ELSE 'rejected' END,"
            " CASE WHEN g %% 30 = 0 THEN NULL ELSE 'not_found' END"
            " FROM generate_series(1, 60000) g",
            (order,),
        )
        conn.execute("ANALYZE tron_claims")
        plan = conn.execute(
            "EXPLAIN (FORMAT JSON) " + sqlq.Q["claim_tron_claims"],
            {"now": "now", "limit": 20, "lease": 60},
        ).fetchone()
    assert plan is not None
    assert "tron_claims_due" in json.dumps(plan[0]), "the claim no longer uses tron_claims_due"
    assert "Seq Scan" not in scans_of(plan[0][0]["Plan"], "tron_claims")
