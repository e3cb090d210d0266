"""The bot's catalogs: every language has every message the code declares, translated, with the
placeholders and Telegram HTML tags of its English, and the compiled catalogs are as new as
their sources."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from babel.messages.catalog import Catalog

from botedge import words
from tests.catalogs import load_messages, po_path, read, template

TRANSLATED = [code for code in words.LANGUAGES if code != words.SOURCE]
# Texts that read the same in every language they are translated to.
SAME_EVERYWHERE: set[tuple[str, str]] = set()
_TAG = re.compile(r"</?[a-z]+>")


@pytest.fixture(scope="module")
def messages() -> dict[str, words.Msg]:
    return load_messages()


def catalog(language: str) -> Catalog:
    return read(po_path(language), language)


def forms(entry_string: object) -> list[str]:
    return list(entry_string) if isinstance(entry_string, tuple) else [str(entry_string)]


@pytest.mark.parametrize("language", TRANSLATED)
def test_catalogs__every_declared_message_is_there_translated_and_none_else(
    language: str, messages: dict[str, words.Msg]
) -> None:
    found = catalog(language)
    entries = {entry.context: entry for entry in found if entry.id}
    assert sorted(entries) == sorted(messages)
    untranslated = [
        key
        for key, entry in entries.items()
        if "fuzzy" in entry.flags
        or not all(forms(entry.string))
        or (forms(entry.string)[0] == messages[key].text and (language, key) not in SAME_EVERYWHERE)
    ]
    assert untranslated == []
    assert found.fuzzy is False


@pytest.mark.parametrize("language", TRANSLATED)
def test_catalogs__placeholders_and_html_tags_are_the_englishs(
    language: str, messages: dict[str, words.Msg]
) -> None:
    wrong = []
    for entry in catalog(language):
        if not entry.id:
            continue
        source = messages[str(entry.context)]
        tags = Counter(_TAG.findall(source.text))
        for form in forms(entry.string):
            named = set(re.findall(r"\{([a-z_]+)\}", form))
            # A form may leave out its count ("one day"), never anything else.
            if not named <= source.placeholders or source.placeholders - named - {"count"}:
                wrong.append((entry.context, "placeholders", sorted(named)))
            if Counter(_TAG.findall(form)) != tags:
                wrong.append((entry.context, "tags", form))
    assert wrong == []


@pytest.mark.parametrize("language", TRANSLATED)
def test_catalogs__plural_forms_as_many_as_the_language_has(language: str) -> None:
    found = catalog(language)
    counts = {len(forms(e.string)) for e in found if e.id and isinstance(e.id, tuple)}
    assert counts == {found.num_plurals}
    assert found.num_plurals == {"fa": 2, "ru": 3, "ar": 6}[language]


def test_catalogs__the_template_is_the_messages_the_code_declares(
    messages: dict[str, words.Msg],
) -> None:
    with (words.LOCALES / f"{words.DOMAIN}.pot").open("rb") as file:
        from babel.messages.pofile import read_po

        written = read_po(file)
    made = template(messages)
    assert sorted((m.context, m.id) for m in written if m.id) == sorted(
        (m.context, m.id) for m in made if m.id
    ), "run `make catalogs` and translate what is new"


@pytest.mark.parametrize("language", TRANSLATED)
def test_catalogs__the_compiled_catalog_is_not_older_than_its_source(language: str) -> None:
    source = po_path(language)
    compiled = source.with_suffix(".mo")
    assert compiled.exists(), "make compiles the catalogs"
    assert compiled.stat().st_mtime >= source.stat().st_mtime, "make compiles the catalogs"
