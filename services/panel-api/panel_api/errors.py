"""The panel API's errors: one base. The store turns psycopg's errors into these."""

from __future__ import annotations

from shared.errors import ServiceError


class PanelError(ServiceError):
    """Something the panel API refuses or cannot do; `slug` names it in docs/errors.md."""

    slug = "panel-error"


class DatabaseUnavailable(PanelError):
    """PostgreSQL could not be reached, or dropped the connection; a later try may work."""

    slug = "unavailable"


class StoreError(PanelError):
    """A statement failed for another reason: a bug."""

    slug = "internal-error"


class InvalidValue(PanelError):
    """A value the database's own checks refuse (the schema let it through)."""

    slug = "invalid-values"
