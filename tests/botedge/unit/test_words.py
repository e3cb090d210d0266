"""The bot's words: the member's language chosen in order, plural forms by each language's own
rule, people's text isolated, numbers in the language's digits, and a miss counted."""

from __future__ import annotations

import datetime as dt

import pytest
from prometheus_client import REGISTRY

from botedge.billing_client import DAYS
from botedge.routing import NOT_UNDERSTOOD, WELCOME
from botedge.words import FSI, LRI, PDI, Msg, Words, number, pick, user


@pytest.fixture(scope="module")
def words() -> Words:
    return Words()


def test_words__the_choice_then_telegrams_language_when_spoken_then_the_bots_default() -> None:
    assert pick("ru", "fa", "en") == "ru"
    assert pick(None, "fa-IR", "en") == "fa"
    assert pick(None, "de", "ar") == "ar"
    assert pick(None, None, "fa") == "fa"
    # Nothing the bot speaks: English, the source.
    assert pick("xx", "de", "xx") == "en"


@pytest.mark.parametrize(
    ("language", "counts"),
    [
        ("en", {1: "1 day", 2: "2 days", 21: "21 days"}),
        ("fa", {1: "۱ روز", 2: "۲ روز", 30: "۳۰ روز"}),
        ("ru", {1: "1 день", 3: "3 дня", 5: "5 дней", 11: "11 дней", 21: "21 день", 22: "22 дня"}),
        (
            "ar",
            {
                0: "٠ يوم",
                1: "يوم واحد",
                2: "يومان",
                3: "٣ أيام",
                11: "١١ يومًا",
                100: "١٠٠ يوم",
            },
        ),
    ],
)
def test_words__plural_forms_by_the_languages_own_rule(
    words: Words, language: str, counts: dict[int, str]
) -> None:
    say = words.speech(language)
    assert {n: say(DAYS, n) for n in counts} == counts


def test_words__persian_text_quoted_in_english_and_back_is_isolated(words: Words) -> None:
    english = words.speech("en")(NOT_UNDERSTOOD, text=user("سلام، خوبی؟"))
    assert english == f'I did not understand "{FSI}سلام، خوبی؟{PDI}". Send /start to begin.'
    persian = words.speech("fa")(NOT_UNDERSTOOD, text=user("Hello, world"))
    assert f"«{FSI}Hello, world{PDI}»" in persian


def test_words__a_command_in_a_right_to_left_sentence_is_kept_left_to_right(
    words: Words,
) -> None:
    persian = words.speech("fa")(NOT_UNDERSTOOD, text=user("</b> and a/b"))
    assert persian.endswith(f"برای شروع {LRI}/start{PDI} را بفرستید.")
    # People's words and markup are left as they are.
    assert f"{FSI}</b> and a/b{PDI}" in persian
    assert "/start" in words.speech("en")(NOT_UNDERSTOOD, text=user("x"))
    assert LRI not in words.speech("ru")(NOT_UNDERSTOOD, text=user("x"))


def test_words__numbers_in_the_languages_digits_and_ours_as_they_are(words: Words) -> None:
    amount = Msg("test.amount", "{amount} for {code}")
    assert words.speech("fa")(amount, amount=number("12.50"), code="A1") == "۱۲٫۵۰ for A1"
    assert words.speech("ar")(amount, amount=number(7), code="A1") == "٧ for A1"
    assert words.speech("ru")(amount, amount=number("12.50"), code="A1") == "12,50 for A1"


def test_words__a_moment_in_each_languages_calendar_order_and_digits(words: Words) -> None:
    moment = dt.datetime(2026, 12, 31, 23, 5, tzinfo=dt.timezone(dt.timedelta(hours=3, minutes=30)))
    assert {code: words.speech(code).moment(moment) for code in ("en", "fa", "ru", "ar")} == {
        "en": "2026-12-31 19:35 UTC",
        # The Persian (Solar Hijri) calendar: 10 Dey 1405.
        "fa": "۱۴۰۵/۱۰/۱۰ ۱۹:۳۵ UTC",
        "ru": "31.12.2026 19:35 UTC",
        "ar": "٣١/١٢/٢٠٢٦ ١٩:٣٥ UTC",
    }
    # Nowruz: the first day of the Persian year.
    assert words.speech("fa").date(dt.date(2026, 3, 21)) == "۱۴۰۵/۰۱/۰۱"


def test_words__a_message_a_catalog_lacks_is_english_and_counted(words: Words) -> None:
    def misses(language: str) -> float:
        value = REGISTRY.get_sample_value("botedge_catalog_misses_total", {"language": language})
        return value or 0.0

    before = misses("ru"), misses("en")
    # Not declared with `msg`, so in no catalog.
    unknown = Msg("test.unknown", "Only in English")
    assert words.speech("ru")(unknown) == "Only in English"
    assert words.speech("en")(unknown) == "Only in English"
    assert words.speech("ru")(WELCOME) == "Добро пожаловать! Вот что я умею:"
    assert (misses("ru"), misses("en")) == (before[0] + 1, before[1])
