"""What the bot says, in each member's language.

Every text a person reads is declared once as a `Msg`: a stable key (gettext's context), the
English text (the message id, with `{named}` placeholders) and, when it counts something, the
English plural. Translations live in gettext catalogs, `locales/<lang>/LC_MESSAGES/bot.po`,
compiled to `.mo` by the build (`make`, the Dockerfile); plural forms follow each language's
own rule from its catalog's header. English is the source and needs no catalog.

A value put into a sentence says what it is: `user(...)` for text people wrote (names,
titles, what they typed), isolated so right-to-left and left-to-right text never reorders the
sentence around it; `number(...)` for a count or amount, in the language's digits; a plain
`str` is ours (a command, a code, an address) and goes in as it is.
"""

from __future__ import annotations

import datetime as dt
import gettext
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jdatetime

from botedge.metrics import CATALOG_MISSES

# The languages the bot speaks, English first (the source). Native names for the chooser.
LANGUAGES: dict[str, str] = {"en": "English", "fa": "فارسی", "ru": "Русский", "ar": "العربية"}
RIGHT_TO_LEFT = frozenset({"fa", "ar"})
SOURCE = "en"
LOCALES = Path(__file__).with_name("locales")
DOMAIN = "bot"

# First-strong isolate ... pop directional isolate (Unicode 6.3): the text inside takes its
# direction from its own first strong character and does not move what is around it.
FSI, PDI = "\u2068", "\u2069"
# RIGHT-TO-LEFT MARK: a right-to-left text whose first strong character is left-to-right (an
# English title first) starts with it, since clients take a message's direction from its first
# strong character, looking inside isolates too.
RLM = "\u200f"
# A bot command in a right-to-left sentence (`/ads`), kept left to right whole: its slash would
# otherwise be drawn on the far side of the word. LEFT-TO-RIGHT ISOLATE ... PDI.
_COMMAND = re.compile(r"(?<![\w/:.<\u2066])/[a-z][a-z_]*")
LRI = "\u2066"
# Persian and Arabic-Indic digits; a number's decimal separator: Arabic's (U+066B) for both,
# Russian's comma.
_NUMERALS = {
    "fa": str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹"),
    "ar": str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"),
}
_DECIMAL = {"fa": "\u066b", "ar": "\u066b", "ru": ","}
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
# A day as each language writes it (Persian in its own calendar); times are in UTC.
_DATE = {"en": "%Y-%m-%d", "ru": "%d.%m.%Y", "ar": "%d/%m/%Y", "fa": "%Y/%m/%d"}

REGISTRY: dict[str, Msg] = {}


@dataclass(frozen=True)
class Msg:
    key: str
    text: str
    plural: str | None = None

    @property
    def placeholders(self) -> frozenset[str]:
        found = set(_PLACEHOLDER.findall(self.text))
        if self.plural is not None:
            found |= set(_PLACEHOLDER.findall(self.plural))
        return frozenset(found)


def msg(key: str, text: str, plural: str | None = None) -> Msg:
    """A text of the bot's, declared once; its key is the catalog's context."""
    if key in REGISTRY:
        raise ValueError(f"the message key {key!r} is declared twice")
    found = REGISTRY[key] = Msg(key, text, plural)
    return found


@dataclass(frozen=True)
class User:
    """Text people wrote, put into a sentence of ours."""

    text: str


@dataclass(frozen=True)
class Number:
    """A count or an amount already written with its precision (`12.50`)."""

    text: str


def user(text: str) -> User:
    return User(text)


def isolate(text: str) -> str:
    """Text people wrote, isolated where it is put together with ours outside a placeholder
    (a list of titles)."""
    return f"{FSI}{text}{PDI}"


def number(value: int | str) -> Number:
    return Number(str(value))


Value = str | User | Number


def _first_strong(text: str) -> str | None:
    """The direction of the first letter that has one (L, or R for R and AL), markup aside."""
    inside_tag = False
    for char in text:
        if char == "<":
            inside_tag = True
        elif char == ">":
            inside_tag = False
        elif not inside_tag:
            kind = unicodedata.bidirectional(char)
            if kind == "L":
                return "L"
            if kind in ("R", "AL"):
                return "R"
    return None


def pick(chosen: str | None, telegram_code: str | None, default: str) -> str:
    """The member's language: their choice, else Telegram's for them when the bot speaks it,
    else the bot's default."""
    if chosen in LANGUAGES:
        return chosen
    primary = (telegram_code or "").split("-", 1)[0].lower()
    if primary in LANGUAGES:
        return primary
    return default if default in LANGUAGES else SOURCE


class Words:
    """The compiled catalogs, loaded once per process."""

    def __init__(self, directory: Path = LOCALES) -> None:
        self._speeches = {SOURCE: Speech(SOURCE, None)}
        for language in LANGUAGES:
            if language == SOURCE:
                continue
            path = directory / language / "LC_MESSAGES" / f"{DOMAIN}.mo"
            with path.open("rb") as file:
                self._speeches[language] = Speech(language, gettext.GNUTranslations(file))

    def speech(self, language: str) -> Speech:
        return self._speeches.get(language, self._speeches[SOURCE])


class Speech:
    """One language's voice: `say(MSG, name=user(...))`."""

    def __init__(self, language: str, catalog: gettext.GNUTranslations | None) -> None:
        self.language = language
        self.right_to_left = language in RIGHT_TO_LEFT
        self._catalog = catalog
        # The catalog's own table: a miss is a key it lacks, told apart from a translation
        # that happens to equal the English.
        self._table: dict[object, str] = getattr(catalog, "_catalog", {})

    def __call__(self, message: Msg, count: int | None = None, /, **values: Value) -> str:
        """The message in this language, its placeholders filled; a plural one takes its
        `count` (also its `{count}`, in this language's digits)."""
        template = self._template(message, count)
        if count is not None:
            values.setdefault("count", number(count))
        said = template.format_map({k: self._fill(v) for k, v in values.items()})
        if self.right_to_left:
            said = _COMMAND.sub(lambda found: f"{LRI}{found.group(0)}{PDI}", said)
        return said

    def start(self, text: str) -> str:
        """`text` begun in this language's direction: a right-to-left one that would be read
        left to right (its first letter English) starts with a right-to-left mark."""
        if self.right_to_left and _first_strong(text) == "L":
            return f"{RLM}{text}"
        return text

    def _template(self, message: Msg, count: int | None) -> str:
        if message.plural is not None and count is None:
            raise TypeError(f"{message.key} counts something: say it with a count")
        if self._catalog is None:
            if message.plural is None or count is None:
                return message.text
            return message.text if count == 1 else message.plural
        key = f"{message.key}\x04{message.text}"
        if message.plural is None or count is None:
            if key not in self._table:
                CATALOG_MISSES.labels(self.language).inc()
            return self._catalog.pgettext(message.key, message.text)
        if (key, 0) not in self._table:
            CATALOG_MISSES.labels(self.language).inc()
        return self._catalog.npgettext(message.key, message.text, message.plural, count)

    def _fill(self, value: Value) -> str:
        if isinstance(value, User):
            return isolate(value.text)
        if isinstance(value, Number):
            return self.digits(value.text)
        return value

    def join(self, items: list[str]) -> str:
        """A list in this language's way: Persian and Arabic write their own comma."""
        return ("، " if self.right_to_left else ", ").join(items)

    def date(self, moment: dt.datetime | dt.date) -> str:
        """The day of `moment` (in UTC), in this language's calendar, order and digits."""
        day = moment.astimezone(dt.UTC).date() if isinstance(moment, dt.datetime) else moment
        if self.language == "fa":
            return self._numerals(jdatetime.date.fromgregorian(date=day).strftime(_DATE["fa"]))
        return self._numerals(day.strftime(_DATE[self.language]))

    def moment(self, moment: dt.datetime) -> str:
        """The day and time of `moment` in UTC."""
        clock = moment.astimezone(dt.UTC).strftime("%H:%M")
        return f"{self.date(moment)} {self._numerals(clock)} UTC"

    def begun(self, payload: dict[str, Any]) -> dict[str, Any]:
        """A message's payload with its text (or caption) begun in this language's direction."""
        for field in ("text", "caption"):
            if isinstance(payload.get(field), str):
                return {**payload, field: self.start(payload[field])}
        return payload

    def digits(self, value: int | str) -> str:
        """A number (`12.50`) in this language's digits and decimal separator."""
        text = str(value).replace(".", _DECIMAL.get(self.language, "."))
        return self._numerals(text)

    def _numerals(self, text: str) -> str:
        table = _NUMERALS.get(self.language)
        return text.translate(table) if table else text
