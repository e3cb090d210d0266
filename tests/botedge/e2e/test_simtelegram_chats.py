"""The simulated Telegram's channels: the bot's own rights, joins and leaves through invite
links that keep their limits, `chat_member` to the admin bots that asked, and button presses."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from botedge import uploads
from shared.testing import serve_in_thread
from simulators.telegram.app import create_app
from simulators.telegram.state import Faults
from tests.botedge.conftest import new_token
from tests.conftest import HTTP

CHANNEL = -1001000000001


@dataclass
class Sim:
    url: str
    token: str
    bot_id: int

    def api(self, method: str, **params: Any) -> dict[str, Any]:
        return dict(HTTP.post(f"{self.url}/bot{self.token}/{method}", json=params).json())

    def control(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return HTTP.post(f"{self.url}/_sim/{path}", json=body)

    def updates(self) -> list[dict[str, Any]]:
        return list(self.api("getUpdates", timeout=0)["result"])


@pytest.fixture
def sim() -> Iterator[Sim]:
    with serve_in_thread(create_app(Faults(enforce_limits=False))) as url:
        bot_id = 5551001
        sim = Sim(url, new_token(bot_id), bot_id)
        assert sim.api("getMe")["ok"]
        # The bot asks for chat_member, as botedge's poller does.
        assert sim.api("getUpdates", timeout=0, allowed_updates=["message", "chat_member"])["ok"]
        created = sim.control(
            "chats",
            {"id": CHANNEL, "type": "channel", "title": "News", "admin_bots": [bot_id]},
        )
        assert created.status_code == 200
        yield sim


def test_get_chat_member__the_bot_about_itself_is_an_admin_with_rights(sim: Sim) -> None:
    me = sim.api("getChatMember", chat_id=CHANNEL, user_id=sim.bot_id)["result"]
    assert (me["status"], me["can_invite_users"], me["can_restrict_members"]) == (
        "administrator",
        True,
        True,
    )
    sim.control("chats", {"id": -1001000000002, "type": "channel"})
    refused = sim.api("getChatMember", chat_id=-1001000000002, user_id=sim.bot_id)
    assert (refused["error_code"], refused["description"]) == (
        403,
        "Forbidden: bot is not a member of the channel chat",
    )


def test_join_through_a_single_use_link__once_then_the_link_is_spent(sim: Sim) -> None:
    link = sim.api(
        "createChatInviteLink",
        chat_id=CHANNEL,
        member_limit=1,
        expire_date=int(time.time()) + 3600,
    )["result"]["invite_link"]
    assert sim.control("join", {"chat_id": CHANNEL, "user_id": 7, "invite_link": link}).is_success
    second = sim.control("join", {"chat_id": CHANNEL, "user_id": 8, "invite_link": link})
    assert second.status_code == 400
    assert second.json()["error"] == "the link's member limit is reached"
    [update] = sim.updates()
    change = update["chat_member"]
    assert (change["old_chat_member"]["status"], change["new_chat_member"]["status"]) == (
        "left",
        "member",
    )
    assert change["invite_link"]["invite_link"] == link
    member = sim.api("getChatMember", chat_id=CHANNEL, user_id=7)["result"]
    assert member["status"] == "member"
    assert sim.api("getChatMember", chat_id=CHANNEL, user_id=8)["result"]["status"] == "left"


def test_join_through_an_expired_link__refused(sim: Sim) -> None:
    link = sim.api("createChatInviteLink", chat_id=CHANNEL, expire_date=int(time.time()) - 1)
    joined = sim.control(
        "join", {"chat_id": CHANNEL, "user_id": 7, "invite_link": link["result"]["invite_link"]}
    )
    assert (joined.status_code, joined.json()["error"]) == (400, "the link has expired")


def test_leave__told_as_chat_member_without_a_link(sim: Sim) -> None:
    sim.control("join", {"chat_id": CHANNEL, "user_id": 7})
    sim.control("leave", {"chat_id": CHANNEL, "user_id": 7})
    changes = [u["chat_member"] for u in sim.updates()]
    assert [c["new_chat_member"]["status"] for c in changes] == ["member", "left"]
    assert all("invite_link" not in c for c in changes)


def test_chat_member__only_to_bots_that_asked_for_it(sim: Sim) -> None:
    sim.api("getUpdates", timeout=0, allowed_updates=["message"])
    sim.control("join", {"chat_id": CHANNEL, "user_id": 7})
    assert sim.updates() == []


def test_press__a_callback_query_for_a_button_on_that_message_only(sim: Sim) -> None:
    keyboard = {"inline_keyboard": [[{"text": "I've joined", "callback_data": "gate:1"}]]}
    sent = sim.api("sendMessage", chat_id=7, text="Join first", reply_markup=keyboard)["result"]
    press = {"bot_id": sim.bot_id, "user_id": 7, "message_id": sent["message_id"]}
    assert sim.control("press", {**press, "data": "gate:2"}).status_code == 400
    assert sim.control("press", {**press, "message_id": 999, "data": "gate:1"}).status_code == 400
    assert sim.control("press", {**press, "data": "gate:1"}).is_success
    [update] = sim.updates()
    query = update["callback_query"]
    assert (query["data"], query["from"]["id"], query["message"]["message_id"]) == (
        "gate:1",
        7,
        sent["message_id"],
    )


def test_participant_invalid_fault__answers_as_telegram_does(sim: Sim) -> None:
    HTTP.post(f"{sim.url}/_sim/faults", json={"participant_invalid_users": [9]})
    answer = sim.api("getChatMember", chat_id=CHANNEL, user_id=9)
    assert (answer["error_code"], answer["description"]) == (
        400,
        "Bad Request: PARTICIPANT_ID_INVALID",
    )


def test_send_photo__a_multipart_upload_is_kept_and_a_non_image_refused(sim: Sim) -> None:
    png = uploads.qr_png("TQrZ9wBzHt8Yq3CsbBv7F4hDbNUJ4dmXR7")
    answer = HTTP.post(
        f"{sim.url}/bot{sim.token}/sendPhoto",
        data={"chat_id": "42", "caption": "Pay here", "reply_markup": '{"inline_keyboard": []}'},
        files={"photo": ("photo.png", png, "image/png")},
    ).json()
    assert answer["ok"] is True, answer
    [size] = answer["result"]["photo"]
    assert (size["width"], size["height"], size["file_size"]) == (370, 370, len(png))
    assert answer["result"]["caption"] == "Pay here"
    assert HTTP.get(f"{sim.url}/_sim/files/{size['file_id']}").content == png
    [sent] = HTTP.get(f"{sim.url}/_sim/sent", params={"chat_id": 42}).json()
    assert (sent["kind"], sent["file_id"], sent["text"]) == ("photo", size["file_id"], "Pay here")

    refused = HTTP.post(
        f"{sim.url}/bot{sim.token}/sendPhoto",
        data={"chat_id": "42"},
        files={"photo": ("photo.png", b"not an image", "image/png")},
    ).json()
    assert refused == {
        "ok": False,
        "error_code": 400,
        "description": "Bad Request: IMAGE_PROCESS_FAILED",
    }


def test_messages_batch__delivered_in_order_and_answered_with_their_ids(sim: Sim) -> None:
    batch = [{"bot_id": sim.bot_id, "user_id": 700 + n, "text": f"m{n}"} for n in range(3)]
    answer = sim.control("messages", {"messages": batch})
    assert answer.status_code == 200
    got = sim.updates()
    assert [u["message"]["text"] for u in got] == ["m0", "m1", "m2"]
    assert [u["message"]["from"]["id"] for u in got] == [700, 701, 702]
    assert answer.json() == {"update_ids": [u["update_id"] for u in got]}


def test_block__the_bot_is_told_kicked_and_its_sends_then_refused(sim: Sim) -> None:
    assert sim.api("sendMessage", chat_id=4242, text="before")["ok"]
    sim.api("getUpdates", timeout=0, allowed_updates=["message", "my_chat_member"])
    assert sim.control("block", {"token": sim.token, "user_id": 4242}).status_code == 200
    (update,) = sim.updates()
    change = update["my_chat_member"]
    assert (change["chat"]["id"], change["chat"]["type"]) == (4242, "private")
    assert (change["old_chat_member"]["status"], change["new_chat_member"]["status"]) == (
        "member",
        "kicked",
    )
    assert change["new_chat_member"]["user"]["id"] == sim.bot_id
    refused = sim.api("sendMessage", chat_id=4242, text="after")
    assert (refused["error_code"], refused["description"]) == (
        403,
        "Forbidden: bot was blocked by the user",
    )
