"""The bot edge's errors: one base. The store turns psycopg's errors into these, so callers
name what went wrong in our terms, and the app maps them to HTTP in one table."""

from __future__ import annotations


class BotedgeError(Exception):
    """Something the bot edge refuses or cannot do; `slug` names it in docs/errors.md."""

    slug = "botedge-error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class DatabaseUnavailable(BotedgeError):
    """PostgreSQL could not be reached, or dropped the connection; a later try may work."""

    slug = "unavailable"


class StoreError(BotedgeError):
    """A statement failed for another reason: a bug or a broken invariant, not a blip."""

    slug = "internal-error"
