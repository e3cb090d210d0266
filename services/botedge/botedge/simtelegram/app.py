"""The simulated Bot API: `/bot<token>/<method>` in Telegram's shapes, plus `/_sim/...` control.

Real error bodies (`{"ok": false, "error_code", "description", "parameters"}`), real limits
(about 1 message a second per private chat with short bursts, 20 a minute per group, 30 a
second per bot) answered with 429 and `retry_after`, and injected faults from `Faults`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import aiohttp
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from botedge.simtelegram.state import (
    ApiError,
    Bot,
    Call,
    Chat,
    Faults,
    InviteLink,
    Upload,
    World,
    queue_key,
)
from shared.web import create_plain_app

Params = dict[str, Any]
Method = Callable[[World, Bot, Params], Awaitable[Any]]

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a current content and reply markup of the message"
)
MEMBER_STATUSES = ("creator", "administrator", "member", "restricted", "left", "kicked")


def ok(result: Any, description: str | None = None) -> Response:
    body: dict[str, Any] = {"ok": True, "result": result}
    if description:
        body["description"] = description
    return JSONResponse(body)


def error_response(error: ApiError) -> Response:
    if error.code == 429:
        body: dict[str, Any] = {
            "ok": False,
            "error_code": 429,
            "description": f"Too Many Requests: retry after {error.retry_after}",
            "parameters": {"retry_after": error.retry_after},
        }
        return JSONResponse(body, status_code=429, headers={"Retry-After": str(error.retry_after)})
    body = {"ok": False, "error_code": error.code, "description": error.description}
    return JSONResponse(body, status_code=error.code)


def _int(params: Params, key: str) -> int:
    if key not in params:
        raise ApiError(400, f'Bad Request: parameter "{key}" is required')
    try:
        return int(params[key])
    except (TypeError, ValueError):
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


async def _send(world: World, bot: Bot, params: Params, kind: str) -> Any:
    _check_html(params)
    chat_id = _chat_id(world, params)
    if chat_id in world.faults.blocked_users:
        raise ApiError(403, "Forbidden: bot was blocked by the user")
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
    world.sent.append(
        {
            "bot_id": bot.id,
            "chat_id": chat_id,
            "message_id": message_id,
            "kind": kind,
            "text": message.get("text", message.get("caption")),
            "file_id": _file_id(message.get(kind)) if kind != "text" else None,
            "at": time.time(),
        }
    )
    return message


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


async def send_message(world: World, bot: Bot, params: Params) -> Any:
    return await _send(world, bot, params, "text")


def _media(kind: str) -> Method:
    async def send(world: World, bot: Bot, params: Params) -> Any:
        return await _send(world, bot, params, kind)

    return send


async def copy_message(world: World, bot: Bot, params: Params) -> Any:
    source = world.chat(_int(params, "from_chat_id"), create_private=False)
    original = source.messages.get(_int(params, "message_id"))
    if original is None:
        raise ApiError(400, "Bad Request: message to copy not found")
    copied = await _send(world, bot, {**params, "text": original.get("text") or "[media]"}, "text")
    return {"message_id": copied["message_id"]}


def _message(world: World, params: Params, what: str) -> tuple[Chat, dict[str, Any]]:
    chat = world.chat(_chat_id(world, params))
    message = chat.messages.get(_int(params, "message_id"))
    if message is None:
        raise ApiError(400, f"Bad Request: message to {what} not found")
    return chat, message


async def edit_message_text(world: World, bot: Bot, params: Params) -> Any:
    _check_html(params)
    _, message = _message(world, params, "edit")
    text = params.get("text")
    if text == message.get("text") and params.get("reply_markup") == message.get("reply_markup"):
        raise ApiError(400, NOT_MODIFIED)
    message["text"] = text
    message["reply_markup"] = params.get("reply_markup")
    return message


async def edit_message_reply_markup(world: World, bot: Bot, params: Params) -> Any:
    _, message = _message(world, params, "edit")
    if params.get("reply_markup") == message.get("reply_markup"):
        raise ApiError(400, NOT_MODIFIED)
    message["reply_markup"] = params.get("reply_markup")
    return message


async def delete_message(world: World, bot: Bot, params: Params) -> Any:
    chat, message = _message(world, params, "delete")
    del chat.messages[message["message_id"]]
    return True


async def answer_callback_query(world: World, bot: Bot, params: Params) -> Any:
    if not params.get("callback_query_id"):
        raise ApiError(
            400, "Bad Request: query is too old and response timeout expired or query ID is invalid"
        )
    return True


async def answer_pre_checkout_query(world: World, bot: Bot, params: Params) -> Any:
    if not params.get("pre_checkout_query_id"):
        raise ApiError(400, "Bad Request: QUERY_ID_INVALID")
    return True


async def get_me(world: World, bot: Bot, params: Params) -> Any:
    return {
        **bot.user(),
        "can_join_groups": True,
        "can_read_all_group_messages": False,
        "supports_inline_queries": False,
    }


async def get_chat(world: World, bot: Bot, params: Params) -> Any:
    return world.chat(_chat_id(world, params), create_private=False).as_json()


def _require_admin(world: World, bot: Bot, chat: Chat, error: str) -> None:
    if chat.id in world.faults.non_admin_chats or bot.id not in world.admins.get(chat.id, set()):
        raise ApiError(400, error)


def _member(user_id: int, status: str) -> dict[str, Any]:
    member: dict[str, Any] = {
        "user": {"id": user_id, "is_bot": False, "first_name": f"User {user_id}"},
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


async def get_chat_member(world: World, bot: Bot, params: Params) -> Any:
    chat = world.chat(_chat_id(world, params), create_private=False)
    user_id = _int(params, "user_id")
    if user_id == bot.id:
        return _bot_member(world, bot, chat)
    _require_admin(world, bot, chat, "Bad Request: member list is inaccessible")
    if user_id in world.faults.unknown_users:
        raise ApiError(400, "Bad Request: user not found")
    if user_id in world.faults.participant_invalid_users:
        raise ApiError(400, "Bad Request: PARTICIPANT_ID_INVALID")
    return _member(user_id, chat.members.get(user_id, "left"))


def _bot_member(world: World, bot: Bot, chat: Chat) -> dict[str, Any]:
    """The bot asking about itself: an admin with its rights, a plain member where it was not
    made admin, and refused where it is not at all."""
    if chat.id in world.faults.non_admin_chats:
        return {"user": bot.user(), "status": "member"}
    if bot.id not in world.admins.get(chat.id, set()):
        raise ApiError(403, f"Forbidden: bot is not a member of the {chat.type} chat")
    return {"user": bot.user(), "status": "administrator", **BOT_RIGHTS}


async def get_chat_administrators(world: World, bot: Bot, params: Params) -> Any:
    chat = world.chat(_chat_id(world, params), create_private=False)
    admins = [
        _member(uid, s) for uid, s in chat.members.items() if s in ("creator", "administrator")
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


async def create_chat_invite_link(world: World, bot: Bot, params: Params) -> Any:
    chat = world.chat(_chat_id(world, params), create_private=False)
    _require_admin(world, bot, chat, "Bad Request: not enough rights to manage chat invite link")
    member_limit = params.get("member_limit")
    expire_date = params.get("expire_date")
    if params.get("creates_join_request") and member_limit is not None:
        raise ApiError(
            400, "Bad Request: member limit can't be specified for links requiring approval"
        )
    chat.invite_links += 1
    link = InviteLink(
        chat_id=chat.id,
        url=f"https://t.me/+sim{abs(chat.id)}x{chat.invite_links}",
        creator=bot.user(),
        member_limit=None if member_limit is None else int(member_limit),
        expire_date=None if expire_date is None else int(expire_date),
        creates_join_request=bool(params.get("creates_join_request", False)),
    )
    world.links[link.url] = link
    answer = link.as_json()
    if params.get("name") is not None:
        answer["name"] = params["name"]
    return answer


async def revoke_chat_invite_link(world: World, bot: Bot, params: Params) -> Any:
    chat = world.chat(_chat_id(world, params), create_private=False)
    _require_admin(world, bot, chat, "Bad Request: not enough rights to manage chat invite link")
    link = world.links.get(str(params.get("invite_link", "")))
    if link is None or link.chat_id != chat.id:
        raise ApiError(400, "Bad Request: INVITE_HASH_EXPIRED")
    link.revoked = True
    return link.as_json()


def _set_status(status: str) -> Method:
    async def change(world: World, bot: Bot, params: Params) -> Any:
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
        chat.members[user_id] = status
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


async def set_webhook(world: World, bot: Bot, params: Params) -> Any:
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
        return ok_description(True, "Webhook was deleted")
    return ok_description(True, "Webhook is already set" if already else "Webhook was set")


async def delete_webhook(world: World, bot: Bot, params: Params) -> Any:
    was = bool(bot.webhook_url)
    bot.webhook_url = ""
    bot.new_updates.set()
    if params.get("drop_pending_updates"):
        bot.drop_pending()
    return ok_description(True, "Webhook was deleted" if was else "Webhook is already deleted")


async def get_webhook_info(world: World, bot: Bot, params: Params) -> Any:
    info: dict[str, Any] = {
        "url": bot.webhook_url,
        "has_custom_certificate": False,
        "pending_update_count": bot.pending(),
        "max_connections": bot.max_connections,
    }
    if bot.allowed_updates:
        info["allowed_updates"] = bot.allowed_updates
    return info


class ok_description:
    def __init__(self, result: Any, description: str) -> None:
        self.result = result
        self.description = description


METHODS: dict[str, Method] = {
    "getme": get_me,
    "getupdates": get_updates,
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
    "answerprecheckoutquery": answer_pre_checkout_query,
    "getchat": get_chat,
    "getchatmember": get_chat_member,
    "getchatadministrators": get_chat_administrators,
    "createchatinvitelink": create_chat_invite_link,
    "banchatmember": _set_status("kicked"),
    "unbanchatmember": _set_status("left"),
    "revokechatinvitelink": revoke_chat_invite_link,
}


def _field(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


async def _params(request: Request) -> Params:
    params: Params = dict(request.query_params)
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        # An upload: files as parts, every other parameter a string (JSON for objects).
        async with request.form(max_part_size=10 * 1024 * 1024) as form:
            for key, value in form.multi_items():
                if isinstance(value, UploadFile):
                    params[key] = Upload(
                        value.filename or "", value.content_type or "", await value.read()
                    )
                else:
                    params[key] = _field(value)
        return params
    body = await request.body()
    if not body:
        return params
    content_type = request.headers.get("content-type", "")
    if "json" in content_type:
        try:
            loaded = json.loads(body)
        except ValueError:
            raise ApiError(400, "Bad Request: can't parse JSON object") from None
        if isinstance(loaded, dict):
            params.update(loaded)
    else:
        for key, value in parse_qsl(body.decode(errors="replace")):
            params[key] = _field(value)
    return params


def create_app(faults: Faults | None = None, seed: int | None = None) -> Starlette:
    world = World(faults or Faults.from_env(os.environ), seed)
    delivery_client: list[aiohttp.ClientSession] = []

    async def bot_method(request: Request) -> Response:
        name = request.path_params["method"].lower()
        started = time.time()
        status = 200
        bot_id = 0
        params: Params = {}
        world.in_flight[name] += 1
        try:
            bot = world.bot(request.path_params["token"])
            bot_id = bot.id
            params = await _params(request)
            faults = world.faults
            client = request.scope.get("client")
            if faults.connect_delay_ms and world.new_connection(
                (str(client[0]), int(client[1])) if client else None
            ):
                await asyncio.sleep(faults.connect_delay_ms / 1000)
            if faults.delay_ms:
                await asyncio.sleep(faults.delay_ms / 1000)
            method = methods.get(name)
            if method is None:
                raise ApiError(404, "Not Found: method not found")
            if name != "getupdates":
                roll = world.random.random()
                if roll < faults.rate_429:
                    raise ApiError(429, "", retry_after=faults.retry_after)
                if roll < faults.rate_429 + faults.rate_5xx:
                    status = 502
                    return HTMLResponse("<html><body><h1>502 Bad Gateway</h1></body></html>", 502)
                if roll < faults.rate_429 + faults.rate_5xx + faults.rate_timeout:
                    status = 504
                    await asyncio.sleep(faults.timeout_seconds)
                    return HTMLResponse("<html><body>504 Gateway Time-out</body></html>", 504)
            result = await method(world, bot, params)
            if bot.webhook_url and name == "setwebhook":
                _start_delivery(bot)
            if isinstance(result, ok_description):
                return ok(result.result, result.description)
            return ok(result)
        except ApiError as error:
            status = error.code
            return error_response(error)
        finally:
            world.in_flight[name] -= 1
            chat = params.get("chat_id")
            world.calls.append(
                Call(
                    bot_id=bot_id,
                    method=name,
                    started=started,
                    at=time.time(),
                    status=status,
                    user_agent=request.headers.get("user-agent", ""),
                    chat_id=int(chat)
                    if isinstance(chat, int | str) and str(chat).lstrip("-").isdigit()
                    else None,
                    text=params.get("text") if isinstance(params.get("text"), str) else None,
                )
            )

    def _start_delivery(bot: Bot) -> None:
        if bot.delivering is None or bot.delivering.done():
            bot.delivering = asyncio.get_running_loop().create_task(_deliver(bot))

    async def _deliver(bot: Bot) -> None:
        """Post queued updates to the webhook: each chat's in order, one in flight per chat,
        up to `max_connections` chats at once; a non-2xx is retried and holds only its chat."""
        # A session per bot, on aiohttp like the worker's calls: a tenth of httpx's CPU per
        # request on this machine.
        client = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=60),
        )
        delivery_client.append(client)
        ready: deque[tuple[str, int]] = deque()
        posting: set[asyncio.Task[None]] = set()
        busy: set[tuple[str, int]] = set()
        changed = asyncio.Event()

        async def post(key: tuple[str, int]) -> None:
            delay = 0.0
            try:
                while bot.webhook_url and not world.closing.is_set():
                    queue = bot.held.get(key)
                    if not queue:
                        return
                    update = queue[0]
                    headers = {"content-type": "application/json"}
                    if bot.webhook_secret:
                        headers["X-Telegram-Bot-Api-Secret-Token"] = bot.webhook_secret
                    try:
                        async with client.post(
                            bot.webhook_url, data=json.dumps(update).encode(), headers=headers
                        ) as response:
                            await response.read()
                            delivered = 200 <= response.status < 300
                    except (aiohttp.ClientError, TimeoutError):
                        delivered = False
                    if delivered:
                        if queue and queue[0] is update:
                            queue.popleft()
                        if queue:
                            ready.append(key)
                        elif bot.held.get(key) is queue:
                            del bot.held[key]
                        return
                    delay = min(5.0, max(0.05, delay * 2 or 0.05))
                    await asyncio.sleep(delay)
            finally:
                busy.discard(key)
                changed.set()

        try:
            while bot.webhook_url and not world.closing.is_set():
                while bot.updates:
                    update = bot.updates.popleft()
                    key = queue_key(update)
                    queue = bot.held.setdefault(key, deque())
                    if not queue and key not in busy:
                        ready.append(key)
                    queue.append(update)
                while ready and len(busy) < bot.max_connections:
                    key = ready.popleft()
                    if key in busy or not bot.held.get(key):
                        continue
                    busy.add(key)
                    task = asyncio.get_running_loop().create_task(post(key))
                    posting.add(task)
                    task.add_done_callback(posting.discard)
                bot.new_updates.clear()
                changed.clear()
                woken = [
                    asyncio.ensure_future(bot.new_updates.wait()),
                    asyncio.ensure_future(changed.wait()),
                    asyncio.ensure_future(world.closing.wait()),
                ]
                try:
                    await asyncio.wait(woken, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for waiter in woken:
                        waiter.cancel()
        finally:
            for task in list(posting):
                task.cancel()
            await asyncio.gather(*posting, return_exceptions=True)
            delivery_client.remove(client)
            await client.close()
            if not bot.webhook_url:
                bot.release_held()

    async def control_bot(request: Request) -> Response:
        body = await request.json()
        bot = world.bot(str(body["token"]))
        if body.get("username"):
            bot.username = str(body["username"])
        return JSONResponse(bot.user())

    async def control_revoke(request: Request) -> Response:
        bot = world.bots.get(int(request.path_params["bot_id"]))
        if bot is None:
            return JSONResponse({"error": "no such bot"}, status_code=404)
        bot.revoked = True
        return JSONResponse({"revoked": bot.id})

    def control_target(body: dict[str, Any]) -> Bot:
        """The bot a control call is about: by token, or by id once it has called us."""
        if "bot_id" in body:
            bot = world.bots.get(int(body["bot_id"]))
            if bot is None:
                raise ApiError(404, "Not Found: no bot with that id has called the simulator")
            return bot
        return world.bot(str(body["token"]))

    async def control_updates(request: Request) -> Response:
        body = await request.json()
        try:
            bot = control_target(body)
        except ApiError as error:
            return error_response(error)
        updates = body.get("updates") or [body["update"]]
        added = [world.add_update(bot, update) for update in updates]
        if bot.webhook_url:
            _start_delivery(bot)
        return JSONResponse({"update_ids": [u["update_id"] for u in added]})

    async def control_messages(request: Request) -> Response:
        """One message (`{bot_id | token, user_id, text}`), answered with its update; or
        `{"messages": [...]}`, a batch, answered with `{"update_ids": [...]}` (the load
        generator's form: one request per tick, not per update)."""
        body = await request.json()
        batch = body["messages"] if "messages" in body else [body]
        try:
            bots = [control_target(message) for message in batch]
        except ApiError as error:
            return error_response(error)
        added = [
            world.message_update(
                bot,
                int(message["user_id"]),
                str(message["text"]),
                str(message.get("first_name", "")),
                message.get("forward_from_chat"),
            )
            for bot, message in zip(bots, batch, strict=True)
        ]
        for bot in {bot.id: bot for bot in bots}.values():
            if bot.webhook_url:
                _start_delivery(bot)
        if "messages" in body:
            return JSONResponse({"update_ids": [update["update_id"] for update in added]})
        return JSONResponse(added[0])

    async def control_sent(request: Request) -> Response:
        query = request.query_params
        rows = [
            row
            for row in world.sent
            if ("bot_id" not in query or row["bot_id"] == int(query["bot_id"]))
            and ("chat_id" not in query or row["chat_id"] == int(query["chat_id"]))
        ]
        return JSONResponse(rows)

    async def control_chat_messages(request: Request) -> Response:
        """A chat's messages as they stand now (edits applied, deletions gone), oldest first."""
        chat = world.chats.get(int(request.path_params["chat_id"]))
        messages = [chat.messages[key] for key in sorted(chat.messages)] if chat else []
        return JSONResponse(messages)

    async def control_file(request: Request) -> Response:
        upload = world.files.get(request.path_params["file_id"])
        if upload is None:
            return JSONResponse({"error": "no such file"}, status_code=404)
        return Response(upload.data, media_type=upload.content_type or "application/octet-stream")

    async def control_in_flight(request: Request) -> Response:
        return JSONResponse({method: n for method, n in world.in_flight.items() if n})

    async def control_calls(request: Request) -> Response:
        query = request.query_params
        rows = [
            call.__dict__
            for call in world.calls
            if ("bot_id" not in query or call.bot_id == int(query["bot_id"]))
            and ("method" not in query or call.method == query["method"].lower())
        ]
        return JSONResponse(rows)

    async def control_faults(request: Request) -> Response:
        if request.method == "POST":
            try:
                world.faults.update(await request.json())
            except ApiError as error:
                return error_response(error)
        return JSONResponse(world.faults.as_json())

    async def control_chat(request: Request) -> Response:
        body = await request.json()
        chat_id = int(body["id"])
        chat = world.chats.get(chat_id) or Chat(chat_id, str(body.get("type", "channel")))
        chat.title = str(body.get("title", chat.title))
        chat.username = body.get("username", chat.username)
        world.chats[chat_id] = chat
        for user_id, status in (body.get("members") or {}).items():
            if status not in MEMBER_STATUSES:
                return JSONResponse({"error": f"bad status {status}"}, status_code=400)
            chat.members[int(user_id)] = status
        for bot_id in body.get("admin_bots") or []:
            world.admins.setdefault(chat_id, set()).add(int(bot_id))
        return JSONResponse(chat.as_json())

    def _tell(bot: Bot, update: dict[str, Any]) -> dict[str, Any]:
        added = world.add_update(bot, update)
        if bot.webhook_url:
            _start_delivery(bot)
        return added

    def _move(chat: Chat, user_id: int, status: str, link: InviteLink | None) -> list[int]:
        """Change a member's status; each admin bot that asked for `chat_member` is told.
        Returns the ids of the updates sent."""
        old = chat.members.get(user_id, "left")
        chat.members[user_id] = status
        change: dict[str, Any] = {
            "chat": chat.as_json(),
            "from": _member(user_id, status)["user"],
            "date": int(time.time()),
            "old_chat_member": _member(user_id, old),
            "new_chat_member": _member(user_id, status),
        }
        if link is not None:
            change["invite_link"] = link.as_json()
        told = []
        for bot_id in sorted(world.admins.get(chat.id, set())):
            bot = world.bots.get(bot_id)
            if bot is not None and "chat_member" in bot.allowed_updates:
                told.append(_tell(bot, {"chat_member": change})["update_id"])
        return told

    def _request_join(chat: Chat, user_id: int, link: InviteLink) -> list[int]:
        """A join through a link that needs approval: a pending request, and `chat_join_request`
        to each admin bot that asked for it."""
        chat.join_requests[user_id] = link
        request = {
            "chat": chat.as_json(),
            "from": _member(user_id, "member")["user"],
            "user_chat_id": user_id,
            "date": int(time.time()),
            "invite_link": link.as_json(),
        }
        told = []
        for bot_id in sorted(world.admins.get(chat.id, set())):
            bot = world.bots.get(bot_id)
            if bot is not None and "chat_join_request" in bot.allowed_updates:
                told.append(_tell(bot, {"chat_join_request": request})["update_id"])
        return told

    def _answer_request(approve: bool) -> Method:
        async def answer(world: World, bot: Bot, params: Params) -> Any:
            chat = world.chat(_chat_id(world, params), create_private=False)
            _require_admin(world, bot, chat, "Bad Request: CHAT_ADMIN_REQUIRED")
            user_id = _int(params, "user_id")
            link = chat.join_requests.pop(user_id, None)
            if link is None:
                raise ApiError(400, "Bad Request: HIDE_REQUESTER_MISSING")
            if approve:
                link.uses += 1
                _move(chat, user_id, "member", link)
            return True

        return answer

    methods: dict[str, Method] = {
        **METHODS,
        "approvechatjoinrequest": _answer_request(True),
        "declinechatjoinrequest": _answer_request(False),
    }

    async def control_join(request: Request) -> Response:
        body = await request.json()
        chat = world.chats.get(int(body["chat_id"]))
        if chat is None or chat.type == "private":
            return JSONResponse({"error": "no such group or channel"}, status_code=404)
        user_id = int(body["user_id"])
        link = None
        if body.get("invite_link"):
            link = world.links.get(str(body["invite_link"]))
            if link is None or link.chat_id != chat.id:
                return JSONResponse({"error": "not a link of this chat"}, status_code=400)
            refusal = link.refusal(time.time())
            if refusal is not None:
                return JSONResponse({"error": refusal}, status_code=400)
        if chat.members.get(user_id) == "kicked":
            return JSONResponse({"error": "the user is banned there"}, status_code=400)
        if link is not None and link.creates_join_request:
            return JSONResponse(
                {"update_ids": _request_join(chat, user_id, link), "requested": True}
            )
        if link is not None:
            link.uses += 1
        return JSONResponse({"update_ids": _move(chat, user_id, "member", link)})

    async def control_leave(request: Request) -> Response:
        body = await request.json()
        chat = world.chats.get(int(body["chat_id"]))
        if chat is None or chat.type == "private":
            return JSONResponse({"error": "no such group or channel"}, status_code=404)
        return JSONResponse({"update_ids": _move(chat, int(body["user_id"]), "left", None)})

    async def control_press(request: Request) -> Response:
        body = await request.json()
        try:
            bot = control_target(body)
        except ApiError as error:
            return error_response(error)
        user_id, data = int(body["user_id"]), str(body["data"])
        chat = world.chats.get(user_id)
        message = chat.messages.get(int(body["message_id"])) if chat else None
        if message is None or message.get("from", {}).get("id") != bot.id:
            return JSONResponse({"error": "no such message from that bot"}, status_code=400)
        rows = (message.get("reply_markup") or {}).get("inline_keyboard") or []
        if not any(button.get("callback_data") == data for row in rows for button in row):
            return JSONResponse({"error": "no such button on that message"}, status_code=400)
        query = {
            "id": str(world.random.getrandbits(63)),
            "from": _member(user_id, "member")["user"],
            "message": message,
            "chat_instance": str(user_id),
            "data": data,
        }
        return JSONResponse(_tell(bot, {"callback_query": query}))

    async def control_reset(request: Request) -> Response:
        world.bots.clear()
        world.chats.clear()
        world.calls.clear()
        world.sent.clear()
        world.files.clear()
        world.admins.clear()
        world.links.clear()
        world.faults = Faults()
        return JSONResponse({"reset": True})

    app = create_plain_app(
        [
            Route("/bot{token}/{method}", bot_method, methods=["GET", "POST"]),
            Route("/_sim/bots", control_bot, methods=["POST"]),
            Route("/_sim/bots/{bot_id:int}/revoke", control_revoke, methods=["POST"]),
            Route("/_sim/updates", control_updates, methods=["POST"]),
            Route("/_sim/messages", control_messages, methods=["POST"]),
            Route("/_sim/sent", control_sent, methods=["GET"]),
            Route("/_sim/calls", control_calls, methods=["GET"]),
            Route("/_sim/files/{file_id}", control_file, methods=["GET"]),
            Route("/_sim/chats/{chat_id:int}/messages", control_chat_messages, methods=["GET"]),
            Route("/_sim/inflight", control_in_flight, methods=["GET"]),
            Route("/_sim/faults", control_faults, methods=["GET", "POST"]),
            Route("/_sim/chats", control_chat, methods=["POST"]),
            Route("/_sim/join", control_join, methods=["POST"]),
            Route("/_sim/leave", control_leave, methods=["POST"]),
            Route("/_sim/press", control_press, methods=["POST"]),
            Route("/_sim/reset", control_reset, methods=["POST"]),
        ],
        body_limit=50 * 1024 * 1024,
    )
    app.state.world = world
    # Called by the server on a stop signal, before it waits for requests in flight.
    app.state.drain_hooks = [world.closing.set]

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        world.closing.set()
        deliveries = [bot.delivering for bot in world.bots.values() if bot.delivering]
        for task in deliveries:
            task.cancel()
        await asyncio.gather(*deliveries, return_exceptions=True)
        for client in delivery_client:
            await client.close()

    app.router.lifespan_context = lifespan
    return app
