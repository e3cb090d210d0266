"""What the simulated Bot API remembers: bots, chats, members, updates, sent messages, calls."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import math
import random
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.settings import DEFAULT_KEEP_ALIVE


class ApiError(Exception):
    """An error answer in Telegram's shape."""

    def __init__(self, code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.retry_after = retry_after


class Allowance:
    """Telegram's send limits as a token bucket: `burst` sends at once, `per_second` more each
    second; `retry_after` is what a refused send is told."""

    def __init__(self, burst: float, per_second: float) -> None:
        self.burst = burst
        self.per_second = per_second
        self.left = burst
        self.checked = time.monotonic()

    def retry_after(self) -> float:
        """0 when a send may go now, else the seconds until one may."""
        now = time.monotonic()
        self.left = min(self.burst, self.left + (now - self.checked) * self.per_second)
        self.checked = now
        return 0.0 if self.left >= 1 - 1e-9 else (1 - self.left) / self.per_second

    def spend(self) -> None:
        self.left -= 1


@dataclass
class Faults:
    """Injected misbehaviour; rates are probabilities per call."""

    # Each call answered at least this late, at most a tick (5 ms) later.
    delay_ms: float = 0.0
    rate_429: float = 0.0
    retry_after: int = 1
    rate_5xx: float = 0.0
    rate_timeout: float = 0.0
    timeout_seconds: float = 20.0
    # A 200 whose body is a proxy's HTML page, not the Bot API's JSON.
    rate_non_json: float = 0.0
    enforce_limits: bool = True
    blocked_users: set[int] = field(default_factory=set)
    # Sends to these people answer 403 "user is deactivated" (a deleted account).
    deactivated_users: set[int] = field(default_factory=set)
    unknown_users: set[int] = field(default_factory=set)
    non_admin_chats: set[int] = field(default_factory=set)
    # getChatMember about these people answers PARTICIPANT_ID_INVALID (Telegram does, at random).
    participant_invalid_users: set[int] = field(default_factory=set)
    # Every call with these bots' tokens answers nginx's 502 page: Telegram down for one bot.
    down_bots: set[int] = field(default_factory=set)
    # Charged once on each new connection, as a TLS handshake with Telegram would be.
    connect_delay_ms: float = 0.0
    # How many calls and sent messages the simulator keeps for `/_sim/calls` and `/_sim/sent`.
    log_limit: int = 200_000

    def update(self, values: Mapping[str, Any]) -> None:
        for key, value in values.items():
            if not hasattr(self, key):
                raise ApiError(400, f"Bad Request: unknown fault {key!r}")
            current = getattr(self, key)
            if isinstance(current, set):
                setattr(self, key, {int(v) for v in value})
            elif isinstance(current, bool):
                setattr(self, key, bool(value))
            else:
                setattr(self, key, type(current)(value))

    def as_json(self) -> dict[str, Any]:
        return {
            key: sorted(value) if isinstance(value, set) else value
            for key, value in self.__dict__.items()
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Faults:
        faults = cls()
        names = {
            "SIM_DELAY_MS": "delay_ms",
            "SIM_RATE_429": "rate_429",
            "SIM_RETRY_AFTER": "retry_after",
            "SIM_RATE_5XX": "rate_5xx",
            "SIM_RATE_TIMEOUT": "rate_timeout",
            "SIM_TIMEOUT_SECONDS": "timeout_seconds",
            "SIM_RATE_NON_JSON": "rate_non_json",
            "SIM_CONNECT_DELAY_MS": "connect_delay_ms",
            "SIM_LOG_LIMIT": "log_limit",
        }
        faults.update({attr: env[name] for name, attr in names.items() if env.get(name)})
        lists = {
            "SIM_BLOCKED_USERS": "blocked_users",
            "SIM_DEACTIVATED_USERS": "deactivated_users",
            "SIM_UNKNOWN_USERS": "unknown_users",
            "SIM_NON_ADMIN_CHATS": "non_admin_chats",
            "SIM_PARTICIPANT_INVALID_USERS": "participant_invalid_users",
        }
        faults.update({attr: env[name].split(",") for name, attr in lists.items() if env.get(name)})
        if env.get("SIM_ENFORCE_LIMITS"):
            faults.enforce_limits = env["SIM_ENFORCE_LIMITS"].lower() in ("1", "true", "yes")
        return faults


@dataclass
class Chat:
    id: int
    type: str
    title: str = ""
    username: str | None = None
    members: dict[int, str] = field(default_factory=dict)
    next_message_id: int = 1
    messages: dict[int, dict[str, Any]] = field(default_factory=dict)
    invite_links: int = 0
    # Pending join requests: who asked, through which link.
    join_requests: dict[int, InviteLink] = field(default_factory=dict)
    # A private chat here is one per person, shared by every bot: which bot each message was
    # to or from, and which were sent with parse_mode HTML (for the chat window).
    bot_of: dict[int, int] = field(default_factory=dict)
    html: set[int] = field(default_factory=set)
    # A person's Telegram language (IETF tag, `language_code` in their `from`), when set.
    language: str | None = None

    def as_json(self) -> dict[str, Any]:
        chat: dict[str, Any] = {"id": self.id, "type": self.type}
        if self.type == "private":
            chat["first_name"] = self.title or f"User {self.id}"
        else:
            chat["title"] = self.title or f"Chat {self.id}"
        if self.username:
            chat["username"] = self.username
        return chat


@dataclass
class InviteLink:
    chat_id: int
    url: str
    creator: dict[str, Any]
    member_limit: int | None
    expire_date: int | None
    creates_join_request: bool
    uses: int = 0
    revoked: bool = False
    name: str | None = None

    def as_json(self) -> dict[str, Any]:
        # Telegram's order: link, name, creator, then the optional ones.
        link: dict[str, Any] = {"invite_link": self.url}
        if self.name:
            link["name"] = self.name
        link |= {
            "creator": self.creator,
            "creates_join_request": self.creates_join_request,
            "is_primary": False,
            "is_revoked": self.revoked,
        }
        if self.member_limit is not None:
            link["member_limit"] = self.member_limit
        if self.expire_date is not None:
            link["expire_date"] = self.expire_date
        return link

    def refusal(self, now: float) -> str | None:
        """Why joining through it fails now, or None."""
        if self.revoked:
            return "the link was revoked"
        if self.expire_date is not None and now >= self.expire_date:
            return "the link has expired"
        if self.member_limit is not None and self.uses >= self.member_limit:
            return "the link's member limit is reached"
        return None


@dataclass
class Bot:
    id: int
    token: str
    username: str
    revoked: bool = False
    webhook_url: str = ""
    webhook_secret: str = ""
    allowed_updates: list[str] = field(default_factory=list)
    updates: deque[dict[str, Any]] = field(default_factory=deque)
    next_update_id: int = 100_000
    new_updates: asyncio.Event = field(default_factory=asyncio.Event)
    poll_generation: int = 0
    sends: Allowance = field(default_factory=lambda: Allowance(30, 30))
    chat_sends: dict[int, Allowance] = field(default_factory=dict)
    delivering: asyncio.Task[None] | None = None
    # Webhook delivery as Telegram does it: a queue per chat (per user for callbacks), each in
    # order with one update in flight, up to `max_connections` queues at once.
    max_connections: int = 40
    held: dict[tuple[str, int], deque[dict[str, Any]]] = field(default_factory=dict)

    def pending(self) -> int:
        return len(self.updates) + sum(len(queue) for queue in self.held.values())

    def drop_pending(self) -> None:
        self.updates.clear()
        self.held.clear()

    def release_held(self) -> None:
        """Back into `updates`, in update_id order: the webhook is gone, getUpdates may ask."""
        rest = [u for queue in self.held.values() for u in queue]
        self.held.clear()
        self.updates = deque(sorted([*rest, *self.updates], key=lambda u: int(u["update_id"])))

    def user(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "is_bot": True,
            "first_name": f"Sim Bot {self.id}",
            "username": self.username,
        }

    def chat_allowance(self, chat_id: int) -> Allowance:
        allowance = self.chat_sends.get(chat_id)
        if allowance is None:
            # Private chats: about one message a second with short bursts; groups: 20 a minute.
            allowance = Allowance(3, 1.0) if chat_id > 0 else Allowance(20, 20 / 60)
            self.chat_sends[chat_id] = allowance
        return allowance


def queue_key(update: dict[str, Any]) -> tuple[str, int]:
    """Which of a bot's delivery queues an update waits in: its chat, else its sender."""
    for name, value in update.items():
        if name == "update_id" or not isinstance(value, dict):
            continue
        chat = value.get("chat") or (value.get("message") or {}).get("chat")
        if isinstance(chat, dict) and "id" in chat:
            return ("chat", int(chat["id"]))
        sender = value.get("from") or value.get("user")
        if isinstance(sender, dict) and "id" in sender:
            return ("user", int(sender["id"]))
    return ("update", int(update.get("update_id", 0)))


@dataclass
class Call:
    bot_id: int
    method: str
    # When the call arrived and when it was answered (unix seconds).
    started: float
    at: float
    status: int
    user_agent: str
    chat_id: int | None
    text: str | None


@dataclass(frozen=True)
class Upload:
    """A file sent as a multipart part."""

    filename: str
    content_type: str
    data: bytes

    def png_size(self) -> tuple[int, int] | None:
        """Width and height from the PNG header; None when this is not a PNG."""
        if (
            len(self.data) < 24
            or self.data[:8] != b"\x89PNG\r\n\x1a\n"
            or self.data[12:16] != b"IHDR"
        ):
            return None
        return int.from_bytes(self.data[16:20], "big"), int.from_bytes(self.data[20:24], "big")


class World:
    """Everything the simulated server knows; one per app."""

    def __init__(self, faults: Faults, seed: int | None = None) -> None:
        self.faults = faults
        self.random = random.Random(seed)  # noqa: S311 - fault injection, not secrets
        self.bots: dict[int, Bot] = {}
        self.chats: dict[int, Chat] = {}
        # The newest calls and sent messages only, so that a long load run has a bounded size.
        self.calls: deque[Call] = deque(maxlen=faults.log_limit)
        self.sent: deque[dict[str, Any]] = deque(maxlen=faults.log_limit)
        # Files uploaded with a send, by the file_id the answer gave them.
        self.files: dict[str, Upload] = {}
        self.admins: dict[int, set[int]] = {}
        self.links: dict[str, InviteLink] = {}
        # Each bot's command lists and descriptions, by kind then language ("" the default).
        self.profiles: dict[int, dict[str, dict[str, Any]]] = {}
        # Bot API calls being answered right now, by method.
        self.in_flight: Counter[str] = Counter()
        # When each client connection (host, port) last called: one not seen within the
        # keep-alive time is a new connection.
        self.connections: dict[tuple[str, int], float] = {}
        # Set when the server starts draining: long polls answer at once, deliveries stop.
        self.closing = asyncio.Event()
        # Called with a bot that has a webhook when an update is added for it: the app starts
        # its delivery.
        self.on_update: Callable[[Bot], None] = lambda bot: None
        # Counts every change a person could see (messages, members, answers to a button), so
        # the chat window's long poll knows when to answer.
        self.revision = 0
        self.changed = asyncio.Event()
        # What answerCallbackQuery said to each person, newest last, with the revision it came at.
        self.notices: dict[int, deque[tuple[int, str]]] = {}
        self.queries: dict[str, int] = {}
        # Stars: invoices, pre-checkouts, payments and subscriptions (`stars.Desk`), made at
        # the first use; not kept across a restart.
        self.stars: Any = None

    def touch(self) -> None:
        self.revision += 1
        self.changed.set()
        self.changed = asyncio.Event()

    async def changed_since(self, revision: int, timeout: float) -> None:
        """Return once something changed after `revision`, the server is stopping, or
        `timeout` seconds passed."""
        deadline = time.monotonic() + timeout
        while self.revision <= revision and not self.closing.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                # Wakes at least every second to see whether the server is stopping.
                await asyncio.wait_for(self.changed.wait(), min(left, 1.0))
            except TimeoutError:
                pass

    def new_connection(self, client: tuple[str, int] | None) -> bool:
        now = time.monotonic()
        if client is None:
            return False
        last = self.connections.get(client)
        self.connections[client] = now
        if len(self.connections) > 10_000:
            self.connections = {
                c: t for c, t in self.connections.items() if now - t < DEFAULT_KEEP_ALIVE
            }
        return last is None or now - last > DEFAULT_KEEP_ALIVE

    def bot(self, token: str) -> Bot:
        prefix, _, secret = token.partition(":")
        if not prefix.isdigit() or len(secret) < 30:
            raise ApiError(401, "Unauthorized: invalid token specified")
        bot_id = int(prefix)
        bot = self.bots.get(bot_id)
        if bot is None:
            bot = Bot(bot_id, token, f"sim{bot_id}_bot")
            self.bots[bot_id] = bot
        if bot.revoked or not bot.token == token:
            raise ApiError(401, "Unauthorized")
        return bot

    def bot_named(self, username: str) -> Bot | None:
        """A bot that has called us, by its username (with or without `@`, any case)."""
        name = username.removeprefix("@").lower()
        return next(
            (b for b in self.bots.values() if b.username.lower() == name and not b.revoked), None
        )

    def chat_named(self, username: str) -> Chat | None:
        """A public group or channel by its username."""
        name = username.removeprefix("@").lower()
        return next(
            (
                c
                for c in self.chats.values()
                if c.type != "private" and (c.username or "").lower() == name
            ),
            None,
        )

    def chat(self, chat_id: int, *, create_private: bool = True) -> Chat:
        chat = self.chats.get(chat_id)
        if chat is None:
            if chat_id <= 0 or not create_private:
                raise ApiError(400, "Bad Request: chat not found")
            chat = Chat(chat_id, "private", f"User {chat_id}")
            self.chats[chat_id] = chat
        return chat

    def person(self, user_id: int) -> dict[str, Any]:
        """A person as Telegram puts them in `from`: with their language when they have one."""
        chat = self.chats.get(user_id)
        found: dict[str, Any] = {"id": user_id, "is_bot": False}
        found["first_name"] = self.name_of(user_id) or f"User {user_id}"
        if chat is not None and chat.language:
            found["language_code"] = chat.language
        return found

    def name_of(self, user_id: int) -> str:
        """A person's first name: the one their private chat was made with, if any."""
        chat = self.chats.get(user_id)
        return chat.title if chat is not None and chat.type == "private" else ""

    def rate_limit(self, bot: Bot, chat_id: int) -> None:
        if not self.faults.enforce_limits:
            return
        chat = bot.chat_allowance(chat_id)
        wait = max(bot.sends.retry_after(), chat.retry_after())
        if wait > 0:
            raise ApiError(429, "", retry_after=max(1, math.ceil(wait)))
        bot.sends.spend()
        chat.spend()

    def add_update(self, bot: Bot, update: dict[str, Any]) -> dict[str, Any]:
        if "update_id" not in update:
            bot.next_update_id += 1
            update = {"update_id": bot.next_update_id, **update}
        else:
            bot.next_update_id = max(bot.next_update_id, int(update["update_id"]))
        bot.updates.append(update)
        bot.new_updates.set()
        self.touch()
        if bot.webhook_url:
            self.on_update(bot)
        return update

    def message_update(
        self,
        bot: Bot,
        user_id: int,
        text: str,
        first_name: str = "",
        forward_from_chat: dict[str, Any] | None = None,
        language_code: str | None = None,
    ) -> dict[str, Any]:
        """A private message from the user; with `forward_from_chat` ({"id", "title"}), a post
        of that channel forwarded by them; with `language_code`, their Telegram language from
        now on."""
        chat = self.chat(user_id)
        if first_name and chat.title == f"User {user_id}":
            chat.title = first_name
        if language_code:
            chat.language = language_code[:35]
        user = {"id": user_id, "is_bot": False, "first_name": first_name or chat.title}
        if chat.language:
            user["language_code"] = chat.language
        message_id = chat.next_message_id
        chat.next_message_id += 1
        message: dict[str, Any] = {
            "message_id": message_id,
            "from": user,
            "chat": chat.as_json(),
            "date": int(time.time()),
            "text": text,
        }
        if forward_from_chat is not None:
            source = {"type": "channel", "title": "Channel", **forward_from_chat}
            message["forward_origin"] = {
                "type": "channel",
                "chat": source,
                "message_id": int(forward_from_chat.get("message_id", 1)),
                "date": int(time.time()) - 60,
            }
        elif text.startswith("/"):
            command = text.split()[0]
            message["entities"] = [{"offset": 0, "length": len(command), "type": "bot_command"}]
        chat.messages[message_id] = message
        chat.bot_of[message_id] = bot.id
        return self.add_update(bot, {"message": message})

    def version(self) -> object:
        """Changes whenever `snapshot` would."""
        return (
            self.revision,
            len(self.bots),
            len(self.links),
            len(self.files),
            sum(
                bot.next_update_id + len(bot.updates) + len(bot.webhook_url)
                for bot in self.bots.values()
            ),
            sum(link.uses + link.revoked for link in self.links.values()),
        )

    def snapshot(self) -> dict[str, Any]:
        """What a restarted simulator needs to continue: bots with their update counters and
        unfetched updates, chats with members and messages, invite links, admins and files."""
        return {
            "bots": [
                {
                    "id": bot.id,
                    "token": bot.token,
                    "username": bot.username,
                    "revoked": bot.revoked,
                    "webhook_url": bot.webhook_url,
                    "webhook_secret": bot.webhook_secret,
                    "allowed_updates": bot.allowed_updates,
                    "next_update_id": bot.next_update_id,
                    "updates": sorted(
                        [*bot.updates, *(u for queue in bot.held.values() for u in queue)],
                        key=lambda u: int(u["update_id"]),
                    ),
                }
                for bot in self.bots.values()
            ],
            "chats": [
                {
                    "id": chat.id,
                    "type": chat.type,
                    "title": chat.title,
                    "username": chat.username,
                    "members": [[user, status] for user, status in chat.members.items()],
                    "next_message_id": chat.next_message_id,
                    "messages": list(chat.messages.values()),
                    "invite_links": chat.invite_links,
                    "join_requests": [
                        [user, link.url] for user, link in chat.join_requests.items()
                    ],
                    "bot_of": [[message, bot] for message, bot in chat.bot_of.items()],
                    "html": sorted(chat.html),
                }
                for chat in self.chats.values()
            ],
            "links": [dataclasses.asdict(link) for link in self.links.values()],
            "admins": [[chat, sorted(bots)] for chat, bots in self.admins.items()],
            "files": [
                [
                    file_id,
                    upload.filename,
                    upload.content_type,
                    base64.b64encode(upload.data).decode(),
                ]
                for file_id, upload in self.files.items()
            ],
        }

    def restore(self, saved: Mapping[str, Any]) -> None:
        for link in saved.get("links", []):
            self.links[link["url"]] = InviteLink(**link)
        for b in saved.get("bots", []):
            bot = Bot(b["id"], b["token"], b["username"], revoked=b["revoked"])
            bot.webhook_url, bot.webhook_secret = b["webhook_url"], b["webhook_secret"]
            bot.allowed_updates = list(b["allowed_updates"])
            bot.next_update_id = int(b["next_update_id"])
            bot.updates = deque(b["updates"])
            self.bots[bot.id] = bot
        for c in saved.get("chats", []):
            chat = Chat(c["id"], c["type"], c["title"], c["username"])
            chat.members = {int(user): status for user, status in c["members"]}
            chat.next_message_id = int(c["next_message_id"])
            chat.messages = {int(m["message_id"]): m for m in c["messages"]}
            chat.invite_links = int(c["invite_links"])
            chat.join_requests = {
                int(user): self.links[url] for user, url in c["join_requests"] if url in self.links
            }
            chat.bot_of = {int(message): int(bot) for message, bot in c["bot_of"]}
            chat.html = {int(message) for message in c["html"]}
            self.chats[chat.id] = chat
        self.admins = {int(chat): {int(b) for b in bots} for chat, bots in saved.get("admins", [])}
        for file_id, filename, content_type, data in saved.get("files", []):
            self.files[file_id] = Upload(filename, content_type, base64.b64decode(data))
