"""What the simulated Telegram's chat window reads (`/_sim/view`, `/_sim/people`, `/_sim/bots`)
and its state kept across a real restart in the data directory."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from shared.testing import free_port
from tests.botedge.conftest import new_token
from tests.botedge.e2e.test_simtelegram_chats import CHANNEL, Sim
from tests.conftest import HTTP, Serve, serve_simtelegram

OTHER = 5550402


def view(url: str, user_id: int, bot_id: int, after: int = -1) -> dict[str, Any]:
    params = {"user_id": user_id, "bot_id": bot_id, "after": after}
    return dict(HTTP.get(f"{url}/_sim/view", params=params, timeout=30).json())


def test_window__a_long_poll_answers_when_the_person_writes_and_shows_only_that_bots_chat(
    serve: Serve,
) -> None:
    served = serve_simtelegram(serve)
    sim, other = (
        Sim(served.url, new_token(5550401), 5550401),
        Sim(served.url, new_token(OTHER), OTHER),
    )
    made = HTTP.post(f"{sim.url}/_sim/people", json={"first_name": "Sara"}).json()
    person = made["id"]
    other.api("getMe")
    sim.api("sendMessage", chat_id=person, text="<b>Hi</b> &amp; welcome", parse_mode="HTML")
    other.api("sendMessage", chat_id=person, text="from the other bot")
    now = view(sim.url, person, sim.bot_id)
    assert [m["message"]["text"] for m in now["messages"]] == ["<b>Hi</b> &amp; welcome"]
    assert now["messages"][0]["html"] is True and now["messages"][0]["mine"] is False
    assert {"id": person, "first_name": "Sara"} in now["people"]
    assert {b["id"] for b in now["bots"]} == {sim.bot_id, OTHER}

    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(view, sim.url, person, sim.bot_id, now["revision"])
        sent = sim.control("messages", {"bot_id": sim.bot_id, "user_id": person, "text": "/start"})
        answered = waiting.result(timeout=15)
    assert sent.status_code == 200
    assert answered["revision"] > now["revision"]
    mine = answered["messages"][-1]
    assert mine["mine"] is True and mine["message"]["text"] == "/start"
    # The bot hears the name the person was made with.
    assert sent.json()["message"]["from"]["first_name"] == "Sara"


def test_window__a_buttons_answer_and_a_join_through_an_invite_link_reach_the_person(
    serve: Serve,
) -> None:
    served = serve_simtelegram(serve)
    sim = Sim(served.url, new_token(5550403), 5550403)
    sim.control(
        "chats", {"id": CHANNEL, "type": "channel", "title": "News", "admin_bots": [5550403]}
    )
    keyboard = {"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]}
    message = sim.api("sendMessage", chat_id=7, text="Press", reply_markup=keyboard)["result"]
    sim.control(
        "press",
        {"bot_id": 5550403, "user_id": 7, "message_id": message["message_id"], "data": "go"},
    )
    [update] = sim.updates()
    before = view(sim.url, 7, 5550403)
    sim.api("answerCallbackQuery", callback_query_id=update["callback_query"]["id"], text="Done!")
    assert view(sim.url, 7, 5550403, before["revision"])["notices"] == ["Done!"]
    # Someone else pressing nothing sees no notice.
    assert view(sim.url, 8, 5550403)["notices"] == []

    link = sim.api("createChatInviteLink", chat_id=CHANNEL)["result"]["invite_link"]
    joined = sim.control("join", {"user_id": 7, "invite_link": link})
    assert joined.status_code == 200, joined.text
    [news] = view(sim.url, 7, 5550403)["channels"]
    assert news["id"] == CHANNEL and news["status"] == "member"
    assert (
        sim.control("join", {"user_id": 7, "invite_link": "https://t.me/+nothing"}).status_code
        == 404
    )


def test_window__the_chat_window_and_the_wallet_pages_are_served_with_the_strict_policy(
    serve: Serve,
) -> None:
    served = serve_simtelegram(serve)
    page = HTTP.get(f"{served.url}/")
    assert page.status_code == 200 and 'src="/assets/chat.js"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert HTTP.get(f"{served.url}/assets/markup.js").status_code == 200


def test_window__state_survives_a_restart_and_update_ids_keep_counting(
    tmp_path: Path, start_service: Any
) -> None:
    state = tmp_path / "simtelegram.json"
    env = {**os.environ, "SIM_STATE_FILE": str(state)}
    port = free_port()
    first = start_service("simulators.telegram", env=env, port=port)
    sim = Sim(first.url, new_token(5550404), 5550404)
    sim.control(
        "chats", {"id": CHANNEL, "type": "channel", "title": "News", "admin_bots": [5550404]}
    )
    person = HTTP.post(f"{sim.url}/_sim/people", json={"first_name": "Kept"}).json()["id"]
    sim.control("join", {"chat_id": CHANNEL, "user_id": person})
    sim.api("setWebhook", url="")
    taken = sim.control("messages", {"bot_id": 5550404, "user_id": person, "text": "one"}).json()
    sim.api("getUpdates", offset=taken["update_id"] + 1, timeout=0)
    waiting = sim.control("messages", {"bot_id": 5550404, "user_id": person, "text": "two"}).json()
    first.signal(signal.SIGTERM)
    assert first.wait(timeout=15) == 0
    assert state.exists()

    second = start_service("simulators.telegram", env=env, port=port)
    assert second.url == sim.url
    # The update not yet fetched is still there; the next one numbers on from it.
    assert [u["update_id"] for u in sim.updates()] == [waiting["update_id"]]
    after = sim.control("messages", {"bot_id": 5550404, "user_id": person, "text": "three"}).json()
    assert after["update_id"] == waiting["update_id"] + 1
    shown = view(sim.url, person, 5550404)
    assert [m["message"]["text"] for m in shown["messages"]] == ["one", "two", "three"]
    assert {"id": person, "first_name": "Kept"} in shown["people"]
    assert shown["channels"][0]["status"] == "member"
    assert sim.api("getChatMember", chat_id=CHANNEL, user_id=person)["result"]["status"] == "member"
