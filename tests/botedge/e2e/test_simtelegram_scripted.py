"""The simulated Telegram's calls for a walk in a shell script: form fields, the bot by its
username, a button pressed by its label once it appears, and what the bot said."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.botedge.conftest import new_token
from tests.botedge.e2e.test_simtelegram_chats import Sim
from tests.conftest import HTTP, Serve, serve_simtelegram, wait_until

BOT = 5550501
PUBLIC = -1005550501


def person(sim: Sim, name: str) -> int:
    made = HTTP.post(f"{sim.url}/_sim/people", data={"first_name": name})
    assert made.status_code == 200, made.text
    return int(made.json()["id"])


def press(sim: Sim, user: int, button: str, wait: float = 10) -> Any:
    fields = {"bot_username": "scripted_bot", "user_id": user, "button": button, "wait": wait}
    return HTTP.post(f"{sim.url}/_sim/press", data=fields, timeout=30)


def waits_for(sim: Sim, call: str) -> None:
    """Until the simulator is seen holding `call` open, waiting for what it asked for."""
    wait_until(
        lambda: HTTP.get(f"{sim.url}/_sim/inflight").json().get(call) == 1, 10, f"{call} waiting"
    )


def named_sim(serve: Serve) -> Sim:
    sim = Sim(serve_simtelegram(serve).url, new_token(BOT), BOT)
    named = sim.control("bots", {"token": sim.token, "username": "scripted_bot"})
    assert named.json()["username"] == "scripted_bot"
    assert sim.api("getUpdates", timeout=0, allowed_updates=["message", "chat_member"])["ok"]
    return sim


def test_scripted__people_from_form_fields_take_the_lowest_free_id_from_1001(
    serve: Serve,
) -> None:
    sim = named_sim(serve)
    # Someone the bot already wrote to far up (the demo history's people are 7000001 on).
    sim.control("messages", {"bot_id": BOT, "user_id": 7000054, "text": "hi"})
    assert [person(sim, "First"), person(sim, "Second")] == [1001, 1002]
    listed = HTTP.get(f"{sim.url}/_sim/people").json()
    assert {"id": 1001, "first_name": "First"} in listed
    # `curl -X POST` with no body: someone new, named by their id.
    assert HTTP.post(f"{sim.url}/_sim/people").json() == {"id": 1003, "first_name": "User 1003"}
    for bad in (b"{", b"[1]"):
        refused = HTTP.post(
            f"{sim.url}/_sim/people", content=bad, headers={"content-type": "application/json"}
        )
        assert refused.status_code == 400, refused.text
        assert refused.json()["type"] == "/problems/malformed-json"


def test_scripted__a_message_in_form_fields_to_the_bot_by_its_username(serve: Serve) -> None:
    sim = named_sim(serve)
    user = person(sim, "Sara")
    sent = HTTP.post(
        f"{sim.url}/_sim/messages",
        data={"bot_username": "@Scripted_Bot", "user_id": str(user), "text": "/start welcome"},
    )
    assert sent.status_code == 200, sent.text
    [update] = sim.updates()
    assert update["message"]["text"] == "/start welcome"
    assert update["message"]["from"] == {"id": user, "is_bot": False, "first_name": "Sara"}
    unknown = HTTP.post(
        f"{sim.url}/_sim/messages", data={"bot_username": "nobody_bot", "user_id": "1", "text": "x"}
    )
    assert unknown.status_code == 404


def test_scripted__a_press_by_label_waits_for_the_button_and_presses_the_newest(
    serve: Serve,
) -> None:
    sim = named_sim(serve)
    user = person(sim, "Sara")
    keyboard = {"inline_keyboard": [[{"text": "I've joined", "callback_data": "gate:7"}]]}
    old = sim.api("sendMessage", chat_id=user, text="old", reply_markup=keyboard)["result"]
    with ThreadPoolExecutor(1) as pool:
        # A label no message has yet: the press waits for it.
        waiting = pool.submit(press, sim, user, "Pay 5")
        waits_for(sim, "_sim/press")
        pay = {"inline_keyboard": [[{"text": "Pay 5.00 USD", "callback_data": "pay:1"}]]}
        sim.api("sendMessage", chat_id=user, text="offer", reply_markup=pay)
        pressed = waiting.result(timeout=15)
    assert pressed.status_code == 200, pressed.text
    assert pressed.json()["callback_query"]["data"] == "pay:1"
    new = sim.api("sendMessage", chat_id=user, text="new", reply_markup=keyboard)["result"]
    again = press(sim, user, "I've joined").json()["callback_query"]
    assert again["message"]["message_id"] == new["message_id"] != old["message_id"]
    assert again["from"]["first_name"] == "Sara"
    missing = press(sim, user, "Nothing like this", wait=0.2)
    assert missing.status_code == 404 and "Nothing like this" in missing.json()["error"]


def test_scripted__a_link_button_starts_a_bot_joins_a_chat_or_is_answered_to_open(
    serve: Serve,
) -> None:
    sim = named_sim(serve)
    chat = {"id": PUBLIC, "type": "channel", "title": "News", "username": "sim_news"}
    assert sim.control("chats", {**chat, "admin_bots": [BOT]}).status_code == 200
    user = person(sim, "Sara")
    links = {
        "inline_keyboard": [
            [{"text": "Paid channel", "url": "https://t.me/scripted_bot?start=pay_3"}],
            [{"text": "News", "url": "https://t.me/sim_news"}],
            [{"text": "Checkout", "url": "http://127.0.0.1:9/checkout/stripe/gh_x"}],
        ]
    }
    sim.api("sendMessage", chat_id=user, text="links", reply_markup=links)
    sim.updates()

    assert press(sim, user, "Paid channel").status_code == 200
    assert press(sim, user, "News").status_code == 200
    opened = press(sim, user, "Checkout")
    assert opened.json() == {"url": "http://127.0.0.1:9/checkout/stripe/gh_x"}

    started, joined = sim.updates()
    assert started["message"]["text"] == "/start pay_3"
    assert started["message"]["from"]["id"] == user
    assert joined["chat_member"]["chat"]["id"] == PUBLIC
    assert joined["chat_member"]["new_chat_member"]["status"] == "member"
    member = sim.api("getChatMember", chat_id=PUBLIC, user_id=user)["result"]
    assert member["status"] == "member"


def test_scripted__said_waits_for_the_text_as_the_person_reads_it(serve: Serve) -> None:
    sim = named_sim(serve)
    user = person(sim, "Sara")
    query = {"bot_username": "scripted_bot", "user_id": user, "text": "24 hours) is approved"}
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(HTTP.get, f"{sim.url}/_sim/said", params=query, timeout=30)
        waits_for(sim, "_sim/said")
        sim.api("sendMessage", chat_id=user, text="Once it is approved, you hear")
        text = "Order #4 (<b>Pinned post, 24 hours</b>) is approved. Pay &lt;10&gt;"
        sim.api("sendMessage", chat_id=user, text=text, parse_mode="HTML")
        said = waiting.result(timeout=15)
    assert said.status_code == 200, said.text
    assert said.json()["said"] == "Order #4 (Pinned post, 24 hours) is approved. Pay <10>"
    assert said.json()["message"]["text"] == text
    gone = HTTP.get(f"{sim.url}/_sim/said", params={**query, "text": "never", "wait": 0.2})
    assert gone.status_code == 404
