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
import logging
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from string import Formatter
from typing import Any, Literal

import jdatetime

from botedge.metrics import CATALOG_MISSES
from shared.errors import FieldCode
from shared.telegram_text import entities_read, has_tags, html_problem, utf16_units

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

log = logging.getLogger("botedge.words")


# What an owner may write in place of a text (`msg(..., form=...)`), by where it goes: a
# message sent as plain text or in Telegram's HTML, a button's label, a note over the chat (a
# button press's answer); each with Telegram's limit, in characters once the entities are read.
Form = Literal["text", "html", "button", "note"]
LIMITS: dict[str, int] = {"text": 4096, "html": 4096, "button": 64, "note": 200}
# The longest a placeholder's value gets, for checking an owner's text at its longest: a
# channel's title (128, Telegram's limit, isolated), the gate's list of channels, a day and
# time, a count of days or hours, a price, a button's label, what a person typed (200).
LONGEST: dict[str, int] = {
    "title": 130, "channels": 1400, "until": 30, "ends": 30, "left": 24, "days": 24,
    "price": 40, "button": 64, "text": 202, "gateway": 64,
}  # fmt: skip


@dataclass(frozen=True)
class Msg:
    key: str
    text: str
    plural: str | None = None
    # None: the owner cannot reword it (a piece of another text, a plural).
    form: Form | None = None
    # Below the form's limit where the text is one line of a longer message (the welcome's).
    limit: int | None = None

    @property
    def placeholders(self) -> frozenset[str]:
        found = set(_PLACEHOLDER.findall(self.text))
        if self.plural is not None:
            found |= set(_PLACEHOLDER.findall(self.plural))
        return frozenset(found)


def msg(
    key: str,
    text: str,
    plural: str | None = None,
    *,
    form: Form | None = None,
    limit: int | None = None,
) -> Msg:
    """A text of the bot's, declared once; its key is the catalog's context. With a `form`, the
    owner may write their own in its place (`check`)."""
    if key in REGISTRY:
        raise ValueError(f"the message key {key!r} is declared twice")
    if form is not None and plural is not None:
        raise ValueError(f"{key}: a text that counts cannot be reworded")
    found = REGISTRY[key] = Msg(key, text, plural, form, limit)
    return found


def editable() -> list[Msg]:
    """The texts an owner may reword, in the order they were declared."""
    return [m for m in REGISTRY.values() if m.form is not None]


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


@dataclass(frozen=True)
class Refusal:
    """Why an owner's text cannot stand in for a message: a code the panel words, and the
    reason in English."""

    code: FieldCode
    detail: str


def check(message: Msg, text: str) -> Refusal | None:
    """Whether `text` may stand in for `message`: its placeholders, each of them and no other,
    written plainly (`{title}`); Telegram's HTML where the message is sent in it, no tags where
    it is not; within Telegram's limit with every placeholder at its longest."""
    if message.form is None:
        return Refusal("invalid", f"{message.key} cannot be reworded")
    if not text.strip():
        return Refusal("required", "the text is empty")
    try:
        fields = [
            (name, spec, conv)
            for _, name, spec, conv in Formatter().parse(text)
            if name is not None
        ]
    except ValueError:
        return Refusal("braces", "a { or } that is not a placeholder: write {{ or }}")
    for name, spec, conversion in fields:
        if name not in message.placeholders or spec or conversion:
            return Refusal(
                "placeholder-unknown", f"{{{name}}} is not one of this text's placeholders"
            )
    missing = sorted(message.placeholders - {name for name, _, _ in fields})
    if missing:
        return Refusal("placeholder-missing", f"{{{missing[0]}}} is missing")
    if message.form == "html":
        problem = html_problem(text)
        if problem:
            return Refusal("html", problem)
    elif has_tags(text):
        return Refusal("html-plain", "this text is sent as plain text: tags would show as typed")
    longest = text.format_map({name: "x" * LONGEST.get(name, 64) for name in message.placeholders})
    shown = entities_read(longest) if message.form == "html" else longest
    limit = message.limit or LIMITS[message.form]
    if utf16_units(shown) > limit:
        return Refusal(
            "too-long", f"over {limit} characters with its placeholders at their longest"
        )
    return None


class Words:
    """The compiled catalogs, loaded once per process, and the texts each bot's owner wrote
    in their place (`own`)."""

    def __init__(self, directory: Path = LOCALES) -> None:
        self._speeches = {SOURCE: Speech(SOURCE, None)}
        for language in LANGUAGES:
            if language == SOURCE:
                continue
            path = directory / language / "LC_MESSAGES" / f"{DOMAIN}.mo"
            with path.open("rb") as file:
                self._speeches[language] = Speech(language, gettext.GNUTranslations(file))
        # By bot: the version of its texts last read, and each language's texts by key.
        self._versions: dict[int, int] = {}
        self._own: dict[tuple[int, str], Speech] = {}

    def speech(self, language: str, bot_id: int | None = None) -> Speech:
        """A language's voice; with a bot, in the words its owner wrote where they did."""
        if bot_id is not None:
            found = self._own.get((bot_id, language))
            if found is not None:
                return found
        return self._speeches.get(language, self._speeches[SOURCE])

    def shipped(self, message: Msg, language: str) -> str:
        """A message's text as its catalog has it, placeholders unfilled."""
        return self.speech(language)._template(message, None)

    def version(self, bot_id: int) -> int:
        """The version of the bot's texts last read (`own`); -1 before any."""
        return self._versions.get(bot_id, -1)

    def own(self, bot_id: int, version: int, texts: dict[tuple[str, str], str]) -> None:
        """The bot's owner's texts, by (language, key), as of `version` (an older one is
        ignored: two reads may finish out of order)."""
        if version < self.version(bot_id):
            return
        self._versions[bot_id] = version
        for language in LANGUAGES:
            mine = {key: text for (lang, key), text in texts.items() if lang == language}
            if mine:
                self._own[bot_id, language] = self._speeches[language].written(mine)
            else:
                self._own.pop((bot_id, language), None)


class Speech:
    """One language's voice: `say(MSG, name=user(...))`."""

    def __init__(
        self,
        language: str,
        catalog: gettext.GNUTranslations | None,
        written: dict[str, str] | None = None,
    ) -> None:
        self.language = language
        self.right_to_left = language in RIGHT_TO_LEFT
        self._catalog = catalog
        # The catalog's own table: a miss is a key it lacks, told apart from a translation
        # that happens to equal the English.
        self._table: dict[object, str] = getattr(catalog, "_catalog", {})
        # An owner's texts by key, in place of the catalog's.
        self._written = written or {}

    def written(self, texts: dict[str, str]) -> Speech:
        """This language with an owner's texts in place of the catalog's."""
        return Speech(self.language, self._catalog, texts)

    def __call__(self, message: Msg, count: int | None = None, /, **values: Value) -> str:
        """The message in this language, its placeholders filled; a plural one takes its
        `count` (also its `{count}`, in this language's digits)."""
        template = self._template(message, count)
        if count is not None:
            values.setdefault("count", number(count))
        filled = {k: self._fill(v) for k, v in values.items()}
        try:
            said = template.format_map(filled)
        except (KeyError, IndexError, ValueError, AttributeError):
            # An owner's text the check would refuse (written around it): the shipped words,
            # never a failed update.
            if message.key not in self._written:
                raise
            log.warning("the owner's text %s cannot be filled; sent as shipped", message.key)
            said = self.written({})._template(message, count).format_map(filled)
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
        written = self._written.get(message.key)
        if written is not None:
            return written
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
