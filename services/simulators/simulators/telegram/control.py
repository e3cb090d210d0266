"""The simulator's own endpoints under `/_sim/`: what a test or the demo does as Telegram's
people would (write to a bot, press a button, join or leave a chat) and what it reads back
(messages sent, calls made), plus faults to inject and a reset.

The calls a person makes take a JSON object or form fields (`curl -d user_id=7 -d text=hi`),
and name the bot by `bot_id`, `bot_username` or `token`."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from simulators.fields import fields
from simulators.telegram.botapi import MEMBER_STATUSES, member, move, plain_text, request_join
from simulators.telegram.state import ApiError, Bot, Chat, Faults, World

T = TypeVar("T")


async def control_bot(request: Request) -> Response:
    """GET: the bots that have called; POST `{token, username?, next_update_id?}`: one made
    known, renamed, or its update counter moved."""
    world: World = request.app.state.world
    if request.method == "GET":
        return JSONResponse(_bots(world))
    body = await fields(request)
    bot = world.bot(str(body["token"]))
    if body.get("username"):
        bot.username = str(body["username"])
    # Telegram numbers the next update at random after a week with none: the counter jumps.
    if body.get("next_update_id"):
        bot.next_update_id = int(body["next_update_id"]) - 1
    return JSONResponse(bot.user())


async def control_revoke(request: Request) -> Response:
    """The bot's token stops working; with `{new_token}`, BotFather's /revoke: that one works
    from now on instead."""
    world: World = request.app.state.world
    bot = world.bots.get(int(request.path_params["bot_id"]))
    if bot is None:
        return JSONResponse({"error": "no such bot"}, status_code=404)
    body = await fields(request)
    new_token = str(body.get("new_token") or "")
    if new_token:
        if new_token.partition(":")[0] != str(bot.id) or new_token == bot.token:
            return JSONResponse({"error": "a new token of this bot"}, status_code=400)
        bot.token, bot.revoked = new_token, False
    else:
        bot.revoked = True
    world.touch()
    return JSONResponse({"revoked": bot.id})


def control_target(world: World, body: dict[str, Any]) -> Bot:
    """The bot a control call is about: by token, or by id or username once it has called
    us."""
    if "bot_id" in body:
        bot = world.bots.get(int(body["bot_id"]))
        if bot is None:
            raise ApiError(404, "Not Found: no bot with that id has called the simulator")
        return bot
    if "bot_username" in body:
        bot = world.bot_named(str(body["bot_username"]))
        if bot is None:
            raise ApiError(404, "Not Found: no bot with that username has called the simulator")
        return bot
    return world.bot(str(body["token"]))


async def control_updates(request: Request) -> Response:
    world: World = request.app.state.world
    body = await fields(request)
    bot = control_target(world, body)
    updates = body.get("updates") or [body["update"]]
    added = [world.add_update(bot, update) for update in updates]
    return JSONResponse({"update_ids": [u["update_id"] for u in added]})


async def control_messages(request: Request) -> Response:
    """One message (`{bot_id | token, user_id, text}`, with `language_code` the person's
    Telegram language from then on), answered with its update; or
    `{"messages": [...]}`, a batch, answered with `{"update_ids": [...]}` (the load
    generator's form: one request per tick, not per update)."""
    return JSONResponse(add_messages(request.app.state.world, await fields(request)))


def add_messages(world: World, body: dict[str, Any]) -> Any:
    """control_messages' answer to `body`, the messages added (the simulated Telegram's
    connections answer the load generator's batches with it themselves)."""
    batch = body["messages"] if "messages" in body else [body]
    bots = [control_target(world, message) for message in batch]
    added = [
        world.message_update(
            bot,
            int(message["user_id"]),
            str(message["text"]),
            str(message.get("first_name", "")),
            message.get("forward_from_chat"),
            message.get("language_code"),
        )
        for bot, message in zip(bots, batch, strict=True)
    ]
    if "messages" in body:
        return {"update_ids": [update["update_id"] for update in added]}
    return added[0]


async def control_sent(request: Request) -> Response:
    world: World = request.app.state.world
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
    world: World = request.app.state.world
    chat = world.chats.get(int(request.path_params["chat_id"]))
    messages = [chat.messages[key] for key in sorted(chat.messages)] if chat else []
    return JSONResponse(messages)


async def control_file(request: Request) -> Response:
    world: World = request.app.state.world
    upload = world.files.get(request.path_params["file_id"])
    if upload is None:
        return JSONResponse({"error": "no such file"}, status_code=404)
    return Response(upload.data, media_type=upload.content_type or "application/octet-stream")


async def control_in_flight(request: Request) -> Response:
    world: World = request.app.state.world
    return JSONResponse({method: n for method, n in world.in_flight.items() if n})


async def control_calls(request: Request) -> Response:
    world: World = request.app.state.world
    query = request.query_params
    rows = [
        call.__dict__
        for call in world.calls
        if ("bot_id" not in query or call.bot_id == int(query["bot_id"]))
        and ("method" not in query or call.method == query["method"].lower())
    ]
    return JSONResponse(rows)


async def control_faults(request: Request) -> Response:
    world: World = request.app.state.world
    if request.method == "POST":
        world.faults.update(await fields(request))
    return JSONResponse(world.faults.as_json())


async def control_chat(request: Request) -> Response:
    world: World = request.app.state.world
    body = await fields(request)
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


async def control_join(request: Request) -> Response:
    """`{user_id, chat_id}` joins a public chat; `{user_id, invite_link}` (and `chat_id` if
    given) joins through a link, or asks to when the link needs approval; the link may also
    be a public chat's `https://t.me/<username>`."""
    body = await fields(request)
    return join(request.app.state.world, body)


def join(world: World, body: dict[str, Any]) -> JSONResponse:
    if "chat_id" not in body and str(body.get("invite_link", "")) in world.links:
        body["chat_id"] = world.links[str(body["invite_link"])].chat_id
    if "chat_id" not in body:
        target = link_target(str(body.get("invite_link", "")))
        public = world.chat_named(target[1]) if target[0] == "chat" else None
        if public is None:
            return JSONResponse({"error": "no such invite link"}, status_code=404)
        body = {"chat_id": public.id, "user_id": body["user_id"]}
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
            {"update_ids": request_join(world, chat, user_id, link), "requested": True}
        )
    if link is not None:
        link.uses += 1
    # As Telegram: an invite link to a public chat opens the chat, and joining it there is a
    # join by its name, so the update names no link.
    named = None if chat.username else link
    return JSONResponse({"update_ids": move(world, chat, user_id, "member", named)})


async def control_leave(request: Request) -> Response:
    world: World = request.app.state.world
    body = await fields(request)
    chat = world.chats.get(int(body["chat_id"]))
    if chat is None or chat.type == "private":
        return JSONResponse({"error": "no such group or channel"}, status_code=404)
    return JSONResponse({"update_ids": move(world, chat, int(body["user_id"]), "left", None)})


async def control_block(request: Request) -> Response:
    """`{user_id, bot_id | bot_username | token}`: the person blocks the bot. As in Telegram,
    the bot is told with a `my_chat_member` update (it is now `kicked`) and its sends to them
    answer 403 "bot was blocked by the user"."""
    world: World = request.app.state.world
    body = await fields(request)
    bot = control_target(world, body)
    user_id = int(body["user_id"])
    world.faults.blocked_users.add(user_id)
    person = member(user_id, "member", world.name_of(user_id))["user"]
    update = world.add_update(
        bot,
        {
            "my_chat_member": {
                "chat": {"id": user_id, "type": "private", "first_name": person["first_name"]},
                "from": person,
                "date": int(time.time()),
                "old_chat_member": {"user": bot.user(), "status": "member"},
                "new_chat_member": {"user": bot.user(), "status": "kicked", "until_date": 0},
            }
        },
    )
    return JSONResponse({"update_id": update["update_id"]})


async def control_press(request: Request) -> Response:
    """`{user_id, message_id, data}` presses the callback button with that data on that
    message. `{user_id, button}` presses the button whose label is or starts with `button` on
    the bot's newest message that has one, waiting up to `wait` seconds (10) for it; as in
    Telegram, a link to a bot's `start` sends `/start <code>` and a link to a channel or group
    joins it; any other link is answered as `{"url"}` for the caller to open."""
    world: World = request.app.state.world
    body = await fields(request)
    bot = control_target(world, body)
    user_id = int(body["user_id"])
    if "button" in body:
        return await _press_labelled(world, bot, user_id, body)
    data = str(body["data"])
    chat = world.chats.get(user_id)
    message = chat.messages.get(int(body["message_id"])) if chat else None
    if message is None or message.get("from", {}).get("id") != bot.id:
        return JSONResponse({"error": "no such message from that bot"}, status_code=400)
    if not any(button.get("callback_data") == data for button in _buttons(message)):
        return JSONResponse({"error": "no such button on that message"}, status_code=400)
    return JSONResponse(_callback(world, bot, user_id, message, data))


async def _press_labelled(world: World, bot: Bot, user_id: int, body: dict[str, Any]) -> Response:
    label = str(body["button"])
    found = await _wait_for(
        world,
        "_sim/press",
        float(body.get("wait") or 10),
        lambda: _button(world, bot, user_id, label),
    )
    if found is None:
        return JSONResponse({"error": f"no button {label!r} from that bot"}, 404)
    message, button = found
    if button.get("pay"):
        # Telegram's Pay under an invoice: `/_sim/pay` with this message id pays it.
        return JSONResponse({"invoice_message_id": message["message_id"]})
    if "callback_data" in button:
        return JSONResponse(_callback(world, bot, user_id, message, button["callback_data"]))
    return _follow(world, user_id, str(button.get("url", "")))


def _callback(
    world: World, bot: Bot, user_id: int, message: dict[str, Any], data: str
) -> dict[str, Any]:
    """The `callback_query` update a press of a callback button sends the bot."""
    query_id = str(world.random.getrandbits(63))
    world.queries[query_id] = user_id
    if len(world.queries) > 10_000:
        world.queries.pop(next(iter(world.queries)))
    query = {
        "id": query_id,
        "from": world.person(user_id),
        "message": message,
        "chat_instance": str(user_id),
        "data": data,
    }
    return world.add_update(bot, {"callback_query": query})


def _button(
    world: World, bot: Bot, user_id: int, label: str
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The bot's newest message to the person with a button labelled `label` (or starting
    with it), and that button. A label is read as a person sees it, without the invisible
    marks that isolate text of another direction (U+2066-2069)."""
    chat = world.chats.get(user_id)
    if chat is None:
        return None
    for message_id in sorted(chat.messages, reverse=True):
        message = chat.messages[message_id]
        if message.get("from", {}).get("id") != bot.id:
            continue
        for button in sorted(_buttons(message), key=lambda b: _seen(b) != label):
            if _seen(button).startswith(label):
                return message, button
    return None


_ISOLATES = dict.fromkeys(range(0x2066, 0x206A))


def _seen(button: dict[str, Any]) -> str:
    return str(button.get("text", "")).translate(_ISOLATES)


def _buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    rows = (message.get("reply_markup") or {}).get("inline_keyboard") or []
    return [button for row in rows for button in row]


def link_target(url: str) -> tuple[str, str, str]:
    """What a link opens in Telegram: ("invite", url, ""), ("invoice", url, ""), ("start",
    bot, code), ("chat", username, "") or ("web", url, "")."""
    parts = urlsplit(url)
    if parts.scheme != "https" or parts.hostname != "t.me":
        return ("web", url, "")
    path = unquote(parts.path[1:])
    if path.startswith(("+", "joinchat/")):
        return ("invite", url, "")
    if path.startswith("$"):
        return ("invoice", url, "")
    name = path.split("/")[0]
    start = parse_qs(parts.query).get("start")
    if start:
        return ("start", name, start[0])
    return ("chat", name, "")


def _follow(world: World, user_id: int, url: str) -> JSONResponse:
    """What tapping a URL button does: start a bot, join a chat, or open a web page."""
    kind, name, code = link_target(url)
    if kind == "start":
        bot = world.bot_named(name)
        if bot is None:
            return JSONResponse({"error": f"no bot @{name}"}, status_code=404)
        return JSONResponse(world.message_update(bot, user_id, f"/start {code}"))
    if kind in ("invite", "chat"):
        return join(world, {"user_id": user_id, "invite_link": url})
    return JSONResponse({"url": url})


async def _wait_for(world: World, what: str, wait: float, find: Callable[[], T | None]) -> T | None:
    """`find()` once it finds something, or None after `wait` seconds (at most 60). While it
    waits, `/_sim/inflight` counts it under `what`."""
    deadline = time.monotonic() + min(max(wait, 0.0), 60.0)
    world.in_flight[what] += 1
    try:
        while True:
            revision = world.revision
            found = find()
            left = deadline - time.monotonic()
            if found is not None or left <= 0:
                return found
            await world.changed_since(revision, left)
    finally:
        world.in_flight[what] -= 1


async def control_said(request: Request) -> Response:
    """`?user_id&bot_username&text`: the bot's newest message to the person that contains
    `text` (`{said, message}`), waiting up to `wait` seconds (10) for one; 404 if none came.
    Read as a person reads it: in plain text, without the marks that isolate text."""
    world: World = request.app.state.world
    query = dict(request.query_params)
    bot = control_target(world, query)
    user_id, text = int(query["user_id"]), query.get("text", "")

    def newest() -> tuple[str, dict[str, Any]] | None:
        chat = world.chats.get(user_id)
        if chat is None:
            return None
        for message_id in sorted(chat.messages, reverse=True):
            message = chat.messages[message_id]
            said = str(message.get("text") or message.get("caption") or "")
            if message_id in chat.html:
                said = plain_text(said)
            said = said.translate(_ISOLATES)
            if message.get("from", {}).get("id") == bot.id and text in said:
                return said, message
        return None

    found = await _wait_for(world, "_sim/said", float(query.get("wait") or 10), newest)
    if found is None:
        return JSONResponse({"error": f"the bot did not say {text!r}"}, status_code=404)
    return JSONResponse({"said": found[0], "message": found[1]})


async def control_people(request: Request) -> Response:
    """The people with a private chat here; POST `{first_name}` makes a new one."""
    world: World = request.app.state.world
    if request.method == "POST":
        body = await fields(request)
        name = str(body.get("first_name") or "").strip()[:64]
        # The lowest free id from 1001: far from the demo history's made-up people.
        user_id = next(n for n in itertools.count(1001) if n not in world.chats)
        world.chats[user_id] = Chat(user_id, "private", name or f"User {user_id}")
        world.touch()
        return JSONResponse({"id": user_id, "first_name": world.chats[user_id].title})
    return JSONResponse(_people(world))


def _people(world: World) -> list[dict[str, Any]]:
    return [
        {"id": chat.id, "first_name": chat.title or f"User {chat.id}"}
        for chat in sorted(world.chats.values(), key=lambda c: c.id)
        if chat.type == "private"
    ]


def _bots(world: World) -> list[dict[str, Any]]:
    return [
        bot.user() for bot in sorted(world.bots.values(), key=lambda b: b.id) if not bot.revoked
    ]


async def control_view(request: Request) -> Response:
    """What the chat window shows of one person: their chat with one bot, the channels and
    groups with the person's place in each, and what the bot answered to a button. With
    `after` (the `revision` of the last answer), waits up to 20 s for something new."""
    world: World = request.app.state.world
    query = request.query_params
    try:
        user_id = int(query["user_id"])
        bot_id = int(query.get("bot_id") or 0)
        after = int(query.get("after") or -1)
    except (KeyError, ValueError):
        return JSONResponse({"error": "user_id (and bot_id, after) must be numbers"}, 400)
    await world.changed_since(after, 20.0)
    chat = world.chats.get(user_id)
    messages = []
    if chat is not None:
        for message_id in sorted(chat.messages):
            if chat.bot_of.get(message_id) == bot_id:
                message = chat.messages[message_id]
                messages.append(
                    {
                        "message": message,
                        "mine": message.get("from", {}).get("id") == user_id,
                        "html": message_id in chat.html,
                    }
                )
    channels = [
        {
            **group.as_json(),
            "status": group.members.get(user_id, "left"),
            "requested": user_id in group.join_requests,
        }
        for group in sorted(world.chats.values(), key=lambda c: c.id)
        # As in Telegram, a private channel is seen only by those in it or asking to be.
        if group.type != "private"
        and (group.username or user_id in group.members or user_id in group.join_requests)
    ]
    notices = [text for revision, text in world.notices.get(user_id, ()) if revision > after]
    return JSONResponse(
        {
            "revision": world.revision,
            "messages": messages,
            "channels": channels,
            "notices": notices,
            "people": _people(world),
            "bots": _bots(world),
        }
    )


async def control_reset(request: Request) -> Response:
    world: World = request.app.state.world
    world.bots.clear()
    world.chats.clear()
    world.calls.clear()
    world.sent.clear()
    world.files.clear()
    world.admins.clear()
    world.links.clear()
    world.faults = Faults()
    world.notices.clear()
    world.queries.clear()
    world.stars = None
    world.touch()
    return JSONResponse({"reset": True})


ROUTES = [
    Route("/_sim/bots", control_bot, methods=["GET", "POST"]),
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
    Route("/_sim/block", control_block, methods=["POST"]),
    Route("/_sim/reset", control_reset, methods=["POST"]),
    Route("/_sim/people", control_people, methods=["GET", "POST"]),
    Route("/_sim/view", control_view, methods=["GET"]),
    Route("/_sim/said", control_said, methods=["GET"]),
]
