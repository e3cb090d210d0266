"""The bot in each member's language, through the simulated Telegram: Telegram's language for
them when the bot speaks it, else the bot's default; `/language` switches and sticks across a
restart; people's words isolated inside ours; no text looked up in a language that lacks it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from botedge.words import FSI, PDI, RLM
from tests.botedge.e2e.conftest import Edge
from tests.botedge.e2e.paying import Store, open_store
from tests.botedge.e2e.test_gate import VISITOR, gate_setup
from tests.conftest import HTTP, ServiceProcess, counted

PERSIAN, RUSSIAN, GERMAN, CHOOSER = 7401, 7402, 7403, 7404


@pytest.fixture
def store(edge: Edge, start_service: Callable[..., ServiceProcess], database_url: str) -> Store:
    return open_store(edge, start_service, database_url)


def said_to(store: Store, user: int, count: int) -> list[str]:
    store.edge.wait_until(lambda: len(store.sent(user)) >= count, 30, f"{count} to {user}")
    return [str(m["text"]) for m in store.sent(user)]


def buttons(store: Store, user: int) -> list[list[dict[str, Any]]]:
    """The buttons under the last message sent to `user`, as the bot queued them."""
    [(payload,)] = store.edge.query(
        "SELECT payload FROM outbox WHERE chat_id = %s AND method = 'sendMessage'"
        " ORDER BY id DESC LIMIT 1",
        user,
    )
    return list(payload["reply_markup"]["inline_keyboard"])


def test_languages__persian_russian_and_the_default_from_start_to_the_pay_link(
    store: Store,
) -> None:
    edge = store.edge
    gate = gate_setup(edge)
    worker = edge.start_worker()

    store.say("/start", PERSIAN, language="fa")
    [welcome] = said_to(store, PERSIAN, 1)
    assert welcome.splitlines()[0] == "خوش آمدید! کارهایی که از من برمی‌آید:"
    store.say(f"/start pay_{store.channel}", PERSIAN)
    said_to(store, PERSIAN, 2)
    offer = store.sent(PERSIAN)[-1]
    # Persian digits and decimal separator; the owner's title isolated, and the message begun
    # right to left though its first letters are English.
    assert offer["text"] == (
        f"{RLM}<b>{FSI}Paid{PDI}</b>: ۱۲٫۵۰ UAH برای ۳۰ روز.\nروش پرداخت را انتخاب کنید:"
    )
    labels = {row[0]["text"] for row in buttons(store, PERSIAN)}
    assert "پرداخت با Subgate" in labels and "پرداخت با Stripe" in labels
    store.press(offer["message_id"], store.button("subgate"), PERSIAN)
    edge.wait_until(lambda: bool(store.edits()), 30, "the pay link")
    invoice = store.edits()[-1]
    assert invoice["text"].startswith(
        f"{RLM}<b>۱۲٫۵۰ UAH</b> برای <b>{FSI}Paid{PDI}</b> با Subgate بپردازید."
    )
    [pay, coupon] = invoice["reply_markup"]["inline_keyboard"]
    assert (pay[0]["text"], coupon[0]["text"]) == ("پرداخت ۱۲٫۵۰ UAH", "کد تخفیف دارم")
    # Paid at the checkout: the invite link, in Persian, through billing's access event.
    done = HTTP.post(pay[0]["url"], data={"action": "pay", "amount": "12.50", "currency": "UAH"})
    assert done.status_code == 200
    invite = said_to(store, PERSIAN, 3)[-1]
    assert invite == (
        f"پرداخت دریافت شد: دسترسی شما به {FSI}Paid{PDI} باز است. این لینک یک بار کار می‌کند."
    )
    assert buttons(store, PERSIAN)[0][0]["text"] == f"عضویت در {FSI}Paid{PDI}"

    # The gate, to the same person: the channels' titles isolated, joined by a Persian comma.
    edge.sim_post(
        "/_sim/messages",
        {
            "bot_id": gate.telegram_bot_id,
            "user_id": VISITOR,
            "text": "/start promo",
            "language_code": "fa-IR",
        },
    )
    edge.wait_until(
        lambda: bool(edge.sim_get("/_sim/sent", chat_id=VISITOR)), 30, "the gate message"
    )
    [shown] = edge.sim_get("/_sim/sent", chat_id=VISITOR)
    assert shown["text"] == (
        f"برای باز کردن این مورد، اول عضو شوید: <b>{FSI}News{PDI}</b>، <b>{FSI}Talk{PDI}</b>."
        " سپس «عضو شدم» را بزنید."
    )

    store.say(f"/start pay_{store.channel}", RUSSIAN, language="ru")
    [russian] = said_to(store, RUSSIAN, 1)
    assert russian == f"<b>{FSI}Paid{PDI}</b>: 12,50 UAH за 30 дней.\nВыберите способ оплаты:"

    # A language the bot does not speak: the bot's default, here Arabic.
    edge.query("UPDATE bots SET default_language = 'ar' RETURNING id")
    store.say("/start", GERMAN, language="de")
    [arabic] = said_to(store, GERMAN, 1)
    assert arabic.splitlines()[0] == "أهلًا بك! إليك ما يمكنني فعله:"

    # Every text was in its language's catalog: no miss counted in any language.
    assert counted(worker.url, "botedge_catalog_misses_total", "language") == {}


def test_languages__chosen_with_slash_language_and_kept_across_a_restart(store: Store) -> None:
    edge = store.edge
    worker = edge.start_worker()
    store.say("/start", CHOOSER, language="en")
    [welcome] = said_to(store, CHOOSER, 1)
    assert "• /language: choose the language I write in." in welcome.splitlines()
    store.say("/language", CHOOSER)
    said_to(store, CHOOSER, 2)
    chooser = store.sent(CHOOSER)[-1]
    assert chooser["text"] == "Choose the language I write in:"
    assert [row[0]["text"] for row in buttons(store, CHOOSER)] == [
        "✓ English",
        "فارسی",
        "Русский",
        "العربية",
    ]
    store.press(chooser["message_id"], "lang:ru", CHOOSER)
    edge.wait_until(
        lambda: any(e["text"] == "Теперь я пишу по-русски." for e in store.edits()),
        30,
        "the choice confirmed in Russian",
    )
    assert edge.query(
        "SELECT bp.language FROM bot_people bp JOIN people p ON p.id = bp.person_id"
        " WHERE p.telegram_user_id = %s",
        CHOOSER,
    ) == [("ru",)]

    worker.proc.kill()
    worker.proc.wait()
    edge.start_worker()
    # Still English by Telegram's language, Russian by the person's choice.
    store.say("/start", CHOOSER)
    texts = said_to(store, CHOOSER, 3)
    assert texts[-1].splitlines()[0] == "Добро пожаловать! Вот что я умею:"


def test_languages__the_ad_shop_in_persian_with_persian_digits(store: Store) -> None:
    edge = store.edge
    [(slot,)] = edge.query(
        "INSERT INTO ad_slots (bot_id, kind, title, price_micros, accepts_usdt, accepts_trx)"
        " SELECT id, 'pinned_post', 'Pinned, 24 hours', 12500000, true, true FROM bots"
        " RETURNING id"
    )
    edge.start_worker()
    store.say("/ads", PERSIAN, language="fa")
    [listing] = said_to(store, PERSIAN, 1)
    assert listing.splitlines() == [
        "جایگاه‌های تبلیغاتی این ربات:",
        "",
        f"• <b>{FSI}Pinned, 24 hours{PDI}</b>: ۱۲٫۵ USDT، با پرداخت USDT (TRC-20) یا TRX",
        "",
        "برای رزرو یکی را انتخاب کنید.",
    ]
    store.press(store.sent(PERSIAN)[0]["message_id"], f"ads:slot:{slot}", PERSIAN)
    asked = said_to(store, PERSIAN, 2)[-1]
    assert asked.startswith(f"رزرو <b>{FSI}Pinned, 24 hours{PDI}</b> به قیمت ۱۲٫۵ USDT")
    # A hash of the wrong length, counted in Persian digits.
    store.say("ab" * 33, PERSIAN)
    refused = said_to(store, PERSIAN, 3)[-1]
    assert "این ۶۶ نویسه دارد" in refused
