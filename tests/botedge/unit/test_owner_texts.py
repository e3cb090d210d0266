"""What an owner may write in place of the bot's texts: every placeholder kept and written
plainly, Telegram's HTML where the text is sent in it and none where it is not, within
Telegram's limit with every placeholder at its longest; and a text written is what the bot
says for that bot and language only."""

from __future__ import annotations

import pytest

from botedge.access import RUNS_TO
from botedge.gate import GATE_TEXT, JOINED_BUTTON
from botedge.pay import CHOOSE_GATEWAY
from botedge.routing import NOT_UNDERSTOOD, WELCOME
from botedge.words import LANGUAGES, Words, check, editable, number, user


@pytest.fixture(scope="module")
def words() -> Words:
    return Words()


def test_owner_texts__every_shipped_text_would_pass_its_own_check(words: Words) -> None:
    assert len(editable()) >= 30
    for message in editable():
        for language in LANGUAGES:
            assert check(message, words.shipped(message, language)) is None, (message.key, language)


@pytest.mark.parametrize(
    ("message", "text", "code"),
    [
        (RUNS_TO, "Paid: {title} is yours.", "placeholder-missing"),
        (RUNS_TO, "{title} until {until} for {name}", "placeholder-unknown"),
        (RUNS_TO, "{title} until {until!r}", "placeholder-unknown"),
        (RUNS_TO, "{title} until {until:>40}", "placeholder-unknown"),
        (RUNS_TO, "{title.__class__} until {until}", "placeholder-unknown"),
        (RUNS_TO, "{title} until {until} {", "braces"),
        (RUNS_TO, "   ", "required"),
        (RUNS_TO, "<b>{title}</b> until {until}", "html-plain"),
        (GATE_TEXT, "Join {channels}, then <blink>{button}</blink>", "html"),
        (GATE_TEXT, "Join {channels}, then <b>{button}", "html"),
        (GATE_TEXT, "Join {channels} & press {button}", "html"),
        (JOINED_BUTTON, "x" * 65, "too-long"),
        # 600 for one line of the welcome, with no placeholder.
        (WELCOME, "x" * 601, "too-long"),
        # A person's text fills {text} at 200 characters and more: 3,900 + 202 is over 4,096.
        (NOT_UNDERSTOOD, "x" * 3900 + "{text}", "too-long"),
    ],
)
def test_owner_texts__a_text_that_cannot_stand_is_refused_with_why(
    message: object, text: str, code: str
) -> None:
    refusal = check(message, text)  # type: ignore[arg-type]
    assert refusal is not None and refusal.code == code, refusal


def test_owner_texts__what_may_stand_in_html_and_plain() -> None:
    assert check(GATE_TEXT, "<b>Join</b> {channels} &amp; press “{button}” {{braces}}") is None
    assert check(RUNS_TO, "{until}: {title} 3 < 4 & so on") is None
    assert check(WELCOME, "x" * 600) is None
    # Tags and entities do not count towards the limit: Telegram counts what they leave.
    refused = check(JOINED_BUTTON, "<b>" + "x" * 64 + "</b>")
    assert refused is not None and refused.code == "html-plain"
    assert check(GATE_TEXT, "<b>" + "x" * 2000 + "</b>{channels}{button}") is None


def test_owner_texts__a_written_text_is_said_for_its_bot_and_language_only(words: Words) -> None:
    words.own(7, 1, {("fa", RUNS_TO.key): "تمدید شد: {title} تا {until}."})
    said = words.speech("fa", 7)(RUNS_TO, title=user("Club"), until=number("2026-12-31"))
    assert said == "تمدید شد: \u2068Club\u2069 تا ۲۰۲۶-۱۲-۳۱."
    # Other languages of the bot, and other bots, keep the shipped words.
    assert words.speech("en", 7)(RUNS_TO, title="Club", until="x").startswith("Payment received")
    assert "تمدید شد" not in words.speech("fa", 8)(RUNS_TO, title="Club", until="x")
    assert "تمدید شد" not in words.speech("fa")(RUNS_TO, title="Club", until="x")
    # An older read finishing last changes nothing; a newer one with nothing resets.
    words.own(7, 0, {})
    assert words.speech("fa", 7)(RUNS_TO, title="Club", until="x").startswith("تمدید شد")
    words.own(7, 2, {})
    assert words.version(7) == 2
    assert "تمدید شد" not in words.speech("fa", 7)(RUNS_TO, title="Club", until="x")
    assert words.speech("en", 7)(CHOOSE_GATEWAY) == "Choose how to pay:"


def test_owner_texts__one_written_around_the_check_falls_back_to_the_shipped_words(
    words: Words,
) -> None:
    words.own(9, 1, {("en", RUNS_TO.key): "{title} until {when} {0}"})
    said = words.speech("en", 9)(RUNS_TO, title="Club", until="Friday")
    assert said == "Payment received: your access to Club now runs to Friday."
