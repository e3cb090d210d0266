"""Demo data for an empty database: the workspace, its owner's login, a paid channel."""

from __future__ import annotations

import psycopg

from panel_api import sqlq
from panel_api.passwords import DEFAULT_ROUNDS, Passwords

DEMO_EMAIL = "owner@example.com"


def seed(
    database_url: str, owner_email: str, owner_password: str, rounds: int = DEFAULT_ROUNDS
) -> bool:
    """Seed when no one can sign in yet; True when this call seeded."""
    with psycopg.connect(database_url) as conn, conn.transaction():
        conn.execute(sqlq.Q["lock_seed"])
        if conn.execute(sqlq.Q["any_team_member"]).fetchone() is not None:
            return False
        conn.execute(sqlq.Q["insert_workspace"], {"name": "Demo workspace"})
        conn.execute(sqlq.Q["insert_demo_channel"])
        conn.execute(
            sqlq.Q["insert_owner"],
            {"email": owner_email.lower(), "password_hash": Passwords(rounds).hash(owner_password)},
        )
    return True
