"""The shapes of what an owner types that Telegram names: a bot's token, and a chat as an id,
an @username, a t.me link or a post link. botedge parses them; both APIs state them in their
schemas, so a value of another shape is a 422 at its field before anything is asked."""

from __future__ import annotations

# The bot's id (under 2**53, as every Telegram id), a colon, 35 or more of [A-Za-z0-9_-].
TOKEN_PATTERN = r"^[0-9]{1,16}:[A-Za-z0-9_-]{35,}$"  # noqa: S105 (a shape, not a secret)

# Public usernames: 5-32 of letters, digits and _, starting with a letter.
USERNAME = r"[A-Za-z][A-Za-z0-9_]{3,30}[A-Za-z0-9]"
LINK = rf"(?:https?://)?(?:t\.me|telegram\.me|telegram\.dog)/(?:s/)?(?P<name>{USERNAME})(?:/\d+)?/?"
PRIVATE_POST = r"(?:https?://)?(?:t\.me|telegram\.me)/c/(?P<id>\d{1,15})/\d+/?"
# Any of them, with spaces around (taken off before parsing).
CHAT_PATTERN = (
    rf"^\s*(?:-?\d{{1,16}}|@{USERNAME}"
    rf"|{LINK.replace('(?P<name>', '(?:')}|{PRIVATE_POST.replace('(?P<id>', '(?:')})\s*$"
)
