"""The Bot API methods the simulator answers, in Telegram's shapes and with its error texts.

Each method takes the world, the calling bot and the call's parameters, and returns the
`result` of an `{"ok": true}` answer or raises `ApiError`.
"""

from __future__ import annotations

import asyncio
import html
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from simulators.telegram.state import ApiError, Bot, Chat, InviteLink, Upload, World

Params = dict[str, Any]
# A method answers at once; getUpdates, which may wait for updates, is the one that is not.
Method = Callable[[World, Bot, Params], Any]
LONG_POLL = "getupdates"

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a current content and reply markup of the message"
)
MEMBER_STATUSES = ("creator", "administrator", "member", "restricted", "left", "kicked")


def error_body(error: ApiError) -> tuple[dict[str, Any], dict[str, str]]:
    """An error answer's JSON body and headers."""
    if error.code == 429:
        body: dict[str, Any] = {
            "ok": False,
            "error_code": 429,
            "description": f"Too Many Requests: retry after {error.retry_after}",
            "parameters": {"retry_after": error.retry_after},
        }
        return body, {"Retry-After": str(error.retry_after)}
    return {"ok": False, "error_code": error.code, "description": error.description}, {}


@dataclass(frozen=True)
class WithDescription:
    """A result answered with a `description` beside it, as setWebhook's are."""

    result: Any
    description: str


def _int(params: Params, key: str) -> int:
    if key not in params:
        raise ApiError(400, f'Bad Request: parameter "{key}" is required')
    try:
        return int(params[key])
    except (TypeError, ValueError, OverflowError):
        raise ApiError(400, f"Bad Request: invalid {key} specified") from None


def _chat_id(world: World, params: Params) -> int:
    value = params.get("chat_id")
    if isinstance(value, str) and value.startswith("@"):
        for chat in world.chats.values():
            if chat.username and f"@{chat.username}" == value:
                return chat.id
        raise ApiError(400, "Bad Request: chat not found")
    return _int(params, "chat_id")


_HTML_TAG = re.compile(
    r"</?(?:b|strong|i|em|u|ins|s|strike|del|code|pre|tg-spoiler|blockquote)>"
    r"|<a href=\"[^\"<>]*\">|</a>"
)
_HTML_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|#\d{1,7});")


def plain_text(text: str) -> str:
    """What the person reads of a parse_mode=HTML text: the markup's tags gone, its entities
    read."""
    return html.unescape(_HTML_TAG.sub("", text))


# Each tag Telegram reads in parse_mode=HTML, by the entity it becomes.
_ENTITY_OF = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "tg-spoiler": "spoiler",
    "a": "text_link",
}
_ANY_TAG = re.compile(r"<(/?)([a-z-]+)((?:\s+[a-z-]+=\"[^\"]*\")*)\s*>")
_HREF = re.compile(r'href="([^"]*)"')


def html_entities(text: str) -> tuple[str, list[dict[str, Any]]]:
    """A parse_mode=HTML text as the person reads it, as Telegram gives it back: the plain text
    and its entities, offsets and lengths in UTF-16 code units, ordered by offset (the longer
    first where two start together)."""
    plain: list[str] = []
    units = 0
    found: list[dict[str, Any]] = []
    open_tags: list[tuple[str, int, dict[str, Any]]] = []
    place = 0

    def add(chunk: str) -> None:
        nonlocal units
        read = html.unescape(chunk)
        plain.append(read)
        units += len(read.encode("utf-16-le")) // 2

    for match in _ANY_TAG.finditer(text):
        add(text[place : match.start()])
        place = match.end()
        closing, name = match.group(1), match.group(2)
        kind = _ENTITY_OF.get(name)
        if kind is None:
            continue
        if not closing:
            extra: dict[str, Any] = {}
            href = _HREF.search(match.group(3) or "")
            if name == "a" and href:
                extra["url"] = html.unescape(href.group(1))
            open_tags.append((kind, units, extra))
        elif open_tags:
            kind, start, extra = open_tags.pop()
            if units > start:
                found.append({"type": kind, "offset": start, "length": units - start, **extra})
    add(text[place:])
    found.sort(key=lambda e: (e["offset"], -e["length"], e["type"]))
    return "".join(plain), found


def _check_html(params: Params) -> None:
    """What Telegram refuses in parse_mode=HTML: a `<` that opens no supported tag, a `&` that
    starts no entity."""
    text = params.get("text") if params.get("text") is not None else params.get("caption")
    if params.get("parse_mode") != "HTML" or not isinstance(text, str):
        return
    bare = _HTML_ENTITY.sub("", _HTML_TAG.sub("", text))
    for char in ("<", "&"):
        if char in bare:
            offset = text.find(char)
            raise ApiError(
                400,
                f"Bad Request: can't parse entities: unsupported start tag or unescaped {char!r}"
                f" at byte offset {offset}",
            )


def _send(world: World, bot: Bot, params: Params, kind: str) -> Any:
    _check_html(params)
    chat_id = _chat_id(world, params)
    if chat_id in world.faults.blocked_users:
        raise ApiError(403, "Forbidden: bot was blocked by the user")
    if chat_id in world.faults.deactivated_users:
        raise ApiError(403, "Forbidden: user is deactivated")
    if chat_id in world.faults.unknown_users:
        # Telegram has never seen this person with the bot.
        raise ApiError(400, "Bad Request: chat not found")
    chat = world.chat(chat_id)
    world.rate_limit(bot, chat_id)
    message_id = chat.next_message_id
    chat.next_message_id += 1
    message: dict[str, Any] = {
        "message_id": message_id,
        "from": bot.user(),
        "chat": chat.as_json(),
        "date": int(time.time()),
    }
    if kind == "text":
        text = params.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        message["text"] = text
    else:
        message[kind] = _media_answer(world, params.get(kind), kind, message_id)
        caption = params.get("caption")
        if isinstance(caption, str) and caption:
            if len(caption) > CAPTION_LIMIT:
                raise ApiError(400, "Bad Request: message caption is too long")
            message["caption"] = caption
    if params.get("reply_markup"):
        message["reply_markup"] = params["reply_markup"]
    chat.messages[message_id] = message
    chat.bot_of[message_id] = bot.id
    if params.get("parse_mode") == "HTML":
        chat.html.add(message_id)
    world.touch()
    world.sent.append(
        {
            "bot_id": bot.id,
            "chat_id": chat_id,
            "message_id": message_id,
            "kind": kind,
            "text": message.get("text", message.get("caption")),
            "file_id": _file_id(message.get(kind)) if kind != "text" else None,
            "at": time.time(),
            # What the person reads: Telegram's plain text and entities for an HTML message.
            **_read(message.get("text", message.get("caption")), params.get("parse_mode")),
        }
    )
    return message


def _read(text: Any, parse_mode: Any) -> dict[str, Any]:
    if not isinstance(text, str) or parse_mode != "HTML":
        return {}
    plain, entities = html_entities(text)
    return {"plain": plain, "entities": entities}


CAPTION_LIMIT = 1024


def _media_answer(world: World, value: Any, kind: str, message_id: int) -> Any:
    """A sent file as Telegram describes it; an uploaded one is kept for `/_sim/files/<id>`.
    Photos come back as a list of sizes."""
    file_id = str(value or "")
    size: dict[str, Any] = {}
    if isinstance(value, Upload):
        dimensions = value.png_size()
        if kind == "photo" and dimensions is None and not value.data.startswith(b"\xff\xd8"):
            raise ApiError(400, "Bad Request: IMAGE_PROCESS_FAILED")
        file_id = f"sim-file-{len(world.files) + 1}"
        world.files[file_id] = value
        size = {"file_size": len(value.data)}
        if dimensions:
            size |= {"width": dimensions[0], "height": dimensions[1]}
    elif not file_id:
        raise ApiError(400, f'Bad Request: parameter "{kind}" is required')
    described = {"file_id": file_id, "file_unique_id": f"u{message_id}", **size}
    return [described] if kind == "photo" else described


def _file_id(answer: Any) -> str | None:
    if isinstance(answer, list):
        answer = answer[-1] if answer else None
    return str(answer["file_id"]) if isinstance(answer, dict) else None


def send_message(world: World, bot: Bot, params: Params) -> Any:
    return _send(world, bot, params, "text")


def _media(kind: str) -> Method:
    def send(world: World, bot: Bot, params: Params) -> Any:
        return _send(world, bot, params, kind)

    return send


def copy_message(world: World, bot: Bot, params: Params) -> Any:
    source = world.chat(_int(params, "from_chat_id"), create_private=False)
    original = source.messages.get(_int(params, "message_id"))
    if original is None:
        raise ApiError(400, "Bad Request: message to copy not found")
    copied = _send(world, bot, {**params, "text": original.get("text") or "[media]"}, "text")
    return {"message_id": copied["message_id"]}


def _message(world: World, params: Params, what: str) -> tuple[Chat, dict[str, Any]]:
    chat = world.chat(_chat_id(world, params))
    message = chat.messages.get(_int(params, "message_id"))
    if message is None:
        raise ApiError(400, f"Bad Request: message to {what} not found")
    return chat, message


def edit_message_text(world: World, bot: Bot, params: Params) -> Any:
    _check_html(params)
    chat, message = _message(world, params, "edit")
    text = params.get("text")
    if text == message.get("text") and params.get("reply_markup") == message.get("reply_markup"):
        raise ApiError(400, NOT_MODIFIED)
    message["text"] = text
    message["reply_markup"] = params.get("reply_markup")
    if params.get("parse_mode") == "HTML":
        chat.html.add(message["message_id"])
    else:
        chat.html.discard(message["message_id"])
    world.touch()
    return message


def edit_message_reply_markup(world: World, bot: Bot, params: Params) -> Any:
    _, message = _message(world, params, "edit")
    if params.get("reply_markup") == message.get("reply_markup"):
        raise ApiError(400, NOT_MODIFIED)
    message["reply_markup"] = params.get("reply_markup")
    world.touch()
    return message


def delete_message(world: World, bot: Bot, params: Params) -> Any:
    chat, message = _message(world, params, "delete")
    del chat.messages[message["message_id"]]
    world.touch()
    return True


def answer_callback_query(world: World, bot: Bot, params: Params) -> Any:
    query_id = str(params.get("callback_query_id") or "")
    if not query_id:
        raise ApiError(
            400, "Bad Request: query is too old and response timeout expired or query ID is invalid"
        )
    person = world.queries.pop(query_id, None)
    text = params.get("text")
    if person is not None and isinstance(text, str) and text:
        world.touch()
        world.notices.setdefault(person, deque(maxlen=20)).append((world.revision, text))
    return True


def get_me(world: World, bot: Bot, params: Params) -> Any:
    return {
        **bot.user(),
        "can_join_groups": True,
        "can_read_all_group_messages": False,
        "supports_inline_queries": False,
    }


def get_chat(world: World, bot: Bot, params: Params) -> Any:
    return world.chat(_chat_id(world, params), create_private=False).as_json()


def _require_admin(world: World, bot: Bot, chat: Chat, error: str) -> None:
    if chat.id in world.faults.non_admin_chats or bot.id not in world.admins.get(chat.id, set()):
        raise ApiError(400, error)


def member(user_id: int, status: str, name: str = "") -> dict[str, Any]:
    member: dict[str, Any] = {
        "user": {"id": user_id, "is_bot": False, "first_name": name or f"User {user_id}"},
        "status": status,
    }
    if status == "kicked":
        member["until_date"] = 0
    if status == "creator":
        member["is_anonymous"] = False
    return member


# What the simulated bot may do where it is an admin.
BOT_RIGHTS = {
    "can_be_edited": False,
    "can_manage_chat": True,
    "can_change_info": False,
    "can_delete_messages": True,
    "can_invite_users": True,
    "can_restrict_members": True,
    "can_promote_members": False,
    "is_anonymous": False,
}


def get_chat_member(world: World, bot: Bot, params: Params) -> Any:
    chat = world.chat(_chat_id(world, params), create_private=False)
    user_id = _int(params, "user_id")
    if user_id == bot.id:
        return _bot_member(world, bot, chat)
    _require_admin(world, bot, chat, "Bad Request: member list is inaccessible")
    if user_id in world.faults.unknown_users:
        raise ApiError(400, "Bad Request: user not found")
    if user_id in world.faults.participant_invalid_users:
        raise ApiError(400, "Bad Request: PARTICIPANT_ID_INVALID")
    return member(user_id, chat.members.get(user_id, "left"), world.name_of(user_id))


def _bot_member(world: World, bot: Bot, chat: Chat) -> dict[str, Any]:
    """The bot asking about itself: an admin with its rights, a plain member where it was not
    made admin, and refused where it is not at all."""
    if chat.id in world.faults.non_admin_chats:
        return {"user": bot.user(), "status": "member"}
    if bot.id not in world.admins.get(chat.id, set()):
        raise ApiError(403, f"Forbidden: bot is not a member of the {chat.type} chat")
    return {"user": bot.user(), "status": "administrator", **BOT_RIGHTS}


def get_chat_administrators(world: World, bot: Bot, params: Params) -> Any:
    chat = world.chat(_chat_id(world, params), create_private=False)
    admins = [
        member(uid, s) for uid, s in chat.members.items() if s in ("creator", "administrator")
    ]
    if bot.id in world.admins.get(chat.id, set()):
        admins.append(
            {
                "user": bot.user(),
                "status": "administrator",
                "can_invite_users": True,
                "can_restrict_members": True,
            }
        )
    return admins


def create_chat_invite_link(world: World, bot: Bot, params: Params) -> Any:
    chat = world.chat(_chat_id(world, params), create_private=False)
    _require_admin(world, bot, chat, "Bad Request: not enough rights to manage chat invite link")
    member_limit = params.get("member_limit")
    expire_date = params.get("expire_date")
    if params.get("creates_join_request") and member_limit is not None:
        raise ApiError(
            400, "Bad Request: member limit can't be specified for links requiring approval"
        )
    name = str(params.get("name") or "")
    chat.invite_links += 1
    link = InviteLink(
        chat_id=chat.id,
        url=f"https://t.me/+sim{abs(chat.id)}x{chat.invite_links}",
        creator=bot.user(),
        member_limit=None if member_limit is None else int(member_limit),
        expire_date=None if expire_date is None else int(expire_date),
        creates_join_request=bool(params.get("creates_join_request", False)),
        name=name or None,
    )
    world.links[link.url] = link
    return link.as_json()


def revoke_chat_invite_link(world: World, bot: Bot, params: Params) -> Any:
    chat = world.chat(_chat_id(world, params), create_private=False)
    _require_admin(world, bot, chat, "Bad Request: not enough rights to manage chat invite link")
    link = world.links.get(str(params.get("invite_link", "")))
    if link is None or link.chat_id != chat.id:
        raise ApiError(400, "Bad Request: INVITE_HASH_EXPIRED")
    link.revoked = True
    return link.as_json()


def _set_status(status: str) -> Method:
    def change(world: World, bot: Bot, params: Params) -> Any:
        chat = world.chat(_chat_id(world, params), create_private=False)
        _require_admin(
            world, bot, chat, "Bad Request: not enough rights to restrict/unrestrict chat member"
        )
        user_id = _int(params, "user_id")
        if (
            status == "left"
            and params.get("only_if_banned")
            and chat.members.get(user_id) != ("kicked")
        ):
            return True
        # As Telegram does: each admin bot that asked for `chat_member` hears of the change,
        # made by this bot.
        if chat.members.get(user_id, "left") != status:
            move(world, chat, user_id, status, None, by=bot.user())
        return True

    return change


async def get_updates(world: World, bot: Bot, params: Params) -> Any:
    if bot.webhook_url:
        raise ApiError(
            409,
            "Conflict: can't use getUpdates method while webhook is active; "
            "use deleteWebhook to delete the webhook first",
        )
    if "allowed_updates" in params:
        bot.allowed_updates = list(params.get("allowed_updates") or [])
    offset = int(params.get("offset") or 0)
    limit = max(1, min(100, int(params.get("limit") or 100)))
    timeout = max(0.0, min(50.0, float(params.get("timeout") or 0)))
    while bot.updates and offset and bot.updates[0]["update_id"] < offset:
        bot.updates.popleft()
    bot.poll_generation += 1
    generation = bot.poll_generation
    deadline = time.monotonic() + timeout
    while not bot.updates and time.monotonic() < deadline and not world.closing.is_set():
        bot.new_updates.clear()
        woken = [
            asyncio.ensure_future(bot.new_updates.wait()),
            asyncio.ensure_future(world.closing.wait()),
        ]
        try:
            await asyncio.wait(
                woken, timeout=deadline - time.monotonic(), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in woken:
                waiter.cancel()
        if bot.poll_generation != generation:
            raise ApiError(
                409,
                "Conflict: terminated by other getUpdates request; make sure "
                "that only one bot instance is running",
            )
    return list(bot.updates)[:limit]


def set_webhook(world: World, bot: Bot, params: Params) -> Any:
    url = str(params.get("url") or "")
    secret = str(params.get("secret_token") or "")
    if secret and not all(c.isalnum() or c in "_-" for c in secret):
        raise ApiError(400, "Bad Request: secret token contains unallowed characters")
    if len(secret) > 256:
        raise ApiError(400, "Bad Request: secret token is too long")
    host = urlsplit(url).hostname or ""
    if url and (host == "invalid" or host.endswith(".invalid")):
        # RFC 2606's never-resolving domain: how a test asks for a refused webhook.
        raise ApiError(
            400, "Bad Request: bad webhook: Failed to resolve host: Name or service not known"
        )
    already = bot.webhook_url == url and bool(url)
    bot.webhook_url = url
    bot.webhook_secret = secret
    bot.allowed_updates = list(params.get("allowed_updates") or [])
    if params.get("drop_pending_updates"):
        bot.drop_pending()
    if "max_connections" in params:
        try:
            connections = int(str(params["max_connections"]))
        except ValueError:
            raise ApiError(400, "Bad Request: bad max_connections") from None
        bot.max_connections = min(100, max(1, connections))
    bot.new_updates.set()
    if not url:
        return WithDescription(True, "Webhook was deleted")
    return WithDescription(True, "Webhook is already set" if already else "Webhook was set")


def delete_webhook(world: World, bot: Bot, params: Params) -> Any:
    was = bool(bot.webhook_url)
    bot.webhook_url = ""
    bot.new_updates.set()
    if params.get("drop_pending_updates"):
        bot.drop_pending()
    return WithDescription(True, "Webhook was deleted" if was else "Webhook is already deleted")


def get_webhook_info(world: World, bot: Bot, params: Params) -> Any:
    info: dict[str, Any] = {
        "url": bot.webhook_url,
        "has_custom_certificate": False,
        "pending_update_count": bot.pending(),
        "max_connections": bot.max_connections,
    }
    if bot.allowed_updates:
        info["allowed_updates"] = bot.allowed_updates
    return info


def move(
    world: World,
    chat: Chat,
    user_id: int,
    status: str,
    link: InviteLink | None,
    *,
    by: dict[str, Any] | None = None,
) -> list[int]:
    """Change a member's status; each admin bot that asked for `chat_member` is told. `by` is
    who made the change (an admin bot's ban), else the member themselves. Returns the ids of
    the updates sent."""
    old = chat.members.get(user_id, "left")
    chat.members[user_id] = status
    world.touch()
    change: dict[str, Any] = {
        "chat": chat.as_json(),
        "from": by or member(user_id, status, world.name_of(user_id))["user"],
        "date": int(time.time()),
        "old_chat_member": member(user_id, old, world.name_of(user_id)),
        "new_chat_member": member(user_id, status, world.name_of(user_id)),
    }
    if link is not None:
        change["invite_link"] = link.as_json()
    return _tell_admin_bots(world, chat, "chat_member", change)


def request_join(world: World, chat: Chat, user_id: int, link: InviteLink) -> list[int]:
    """A join through a link that needs approval: a pending request, and `chat_join_request`
    to each admin bot that asked for it."""
    chat.join_requests[user_id] = link
    world.touch()
    request = {
        "chat": chat.as_json(),
        "from": member(user_id, "member", world.name_of(user_id))["user"],
        "user_chat_id": user_id,
        "date": int(time.time()),
        "invite_link": link.as_json(),
    }
    return _tell_admin_bots(world, chat, "chat_join_request", request)


def _tell_admin_bots(world: World, chat: Chat, kind: str, event: dict[str, Any]) -> list[int]:
    told = []
    for bot_id in sorted(world.admins.get(chat.id, set())):
        bot = world.bots.get(bot_id)
        if bot is not None and kind in bot.allowed_updates:
            told.append(world.add_update(bot, {kind: event})["update_id"])
    return told


def _answer_request(approve: bool) -> Method:
    def answer(world: World, bot: Bot, params: Params) -> Any:
        chat = world.chat(_chat_id(world, params), create_private=False)
        _require_admin(world, bot, chat, "Bad Request: CHAT_ADMIN_REQUIRED")
        user_id = _int(params, "user_id")
        link = chat.join_requests.pop(user_id, None)
        if link is None:
            raise ApiError(400, "Bad Request: HIDE_REQUESTER_MISSING")
        if approve:
            link.uses += 1
            move(world, chat, user_id, "member", link)
        return True

    return answer


METHODS: dict[str, Method] = {
    "getme": get_me,
    "setwebhook": set_webhook,
    "deletewebhook": delete_webhook,
    "getwebhookinfo": get_webhook_info,
    "sendmessage": send_message,
    "sendphoto": _media("photo"),
    "senddocument": _media("document"),
    "sendvideo": _media("video"),
    "copymessage": copy_message,
    "editmessagetext": edit_message_text,
    "editmessagereplymarkup": edit_message_reply_markup,
    "deletemessage": delete_message,
    "answercallbackquery": answer_callback_query,
    "getchat": get_chat,
    "getchatmember": get_chat_member,
    "getchatadministrators": get_chat_administrators,
    "createchatinvitelink": create_chat_invite_link,
    "banchatmember": _set_status("kicked"),
    "unbanchatmember": _set_status("left"),
    "revokechatinvitelink": revoke_chat_invite_link,
    "approvechatjoinrequest": _answer_request(True),
    "declinechatjoinrequest": _answer_request(False),
}
