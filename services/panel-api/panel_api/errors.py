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
    """A value refused: by the handler's own rules, or by the database's checks."""

    slug = "invalid-values"


class BadCredentials(PanelError):
    """The email and password do not match an account."""

    slug = "bad-credentials"


class BadSetupCode(PanelError):
    """The setup code is not the one printed at first start."""

    slug = "bad-setup-code"


class SetupCodeExpired(PanelError):
    """The setup code has expired; a restart prints another."""

    slug = "setup-code-expired"


class InvalidToken(PanelError):
    """An access or refresh token that is not ours, or no longer valid."""

    slug = "invalid-token"


class MissingCredentials(PanelError):
    """No bearer token, or no refresh cookie, where one is needed."""

    slug = "missing-credentials"


class TokenExpired(PanelError):
    """The access token has expired; refresh it."""

    slug = "token-expired"


class Forbidden(PanelError):
    """The caller's role is below what the operation needs."""

    slug = "forbidden"


class NotFound(PanelError):
    """Nothing by that id (or not in this workspace)."""

    slug = "not-found"


class NotDead(PanelError):
    """The update is not a dead one: there is nothing to replay."""

    slug = "not-dead"


class Conflict(PanelError):
    """The change clashes with the current state."""

    slug = "conflict"


class TooManyRequests(PanelError):
    """Too many failed attempts from this address or for this account; wait."""

    slug = "too-many-requests"
