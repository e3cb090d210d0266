"""The bot edge's errors: one base. The store turns psycopg's errors into these, so callers
name what went wrong in our terms, and the app maps them to HTTP in one table."""

from __future__ import annotations

from botedge.words import Msg
from shared.errors import ServiceError


class BotedgeError(ServiceError):
    """Something the bot edge refuses or cannot do; `slug` names it in docs/errors.md."""

    slug = "botedge-error"


class DatabaseUnavailable(BotedgeError):
    """PostgreSQL could not be reached, or dropped the connection; a later try may work."""

    slug = "unavailable"


class StoreError(BotedgeError):
    """A statement failed for another reason: a bug or a broken invariant, not a blip."""

    slug = "internal-error"


class BadBotToken(BotedgeError):
    """Not shaped like a bot token, or Telegram does not accept it."""

    slug = "bad-bot-token"


class TelegramRefused(BotedgeError):
    """Telegram answered no to a call made for the caller; its description is the detail."""

    slug = "telegram-refused"


class TelegramUnavailable(BotedgeError):
    """Telegram could not be asked, or asked us to wait."""

    slug = "telegram-unavailable"


class ChatNotFound(BotedgeError):
    """Telegram knows no chat by what was given, or the bot cannot see it."""

    slug = "chat-not-found"


class UnknownBot(BotedgeError):
    """No active bot by that id."""

    slug = "not-found"


class BotRemoved(BotedgeError):
    """The bot was removed: only adding its token again brings it back."""

    slug = "bot-removed"


class InvalidValues(BotedgeError):
    """The request cannot be done with this configuration."""

    slug = "invalid-values"


class InvalidChat(BotedgeError):
    """Not something a chat can be found by."""

    slug = "invalid-values"


class NotFound(BotedgeError):
    """No such thing (a broadcast, say)."""

    slug = "not-found"


class Conflict(BotedgeError):
    """The state does not allow this change (cancelling a finished broadcast)."""

    slug = "conflict"


class RetryLater(Exception):
    """A dependency (Telegram, billing) could not be asked now (timeout, 5xx, 429): the update
    is retried, not buried after the usual attempts, for as long as the worker's retry window
    allows. `parked`: it was not even asked (its breaker is open), so the update waits without
    spending a try or its window. `notice`: what the person waiting is told, once."""

    def __init__(
        self,
        detail: str,
        retry_after: float = 0.0,
        *,
        parked: bool = False,
        notice: Msg | None = None,
    ) -> None:
        super().__init__(detail)
        self.retry_after = retry_after
        self.parked = parked
        self.notice = notice
