"""The bot's message catalogs from its code: `python -m tests.catalogs --write` (`make catalogs`)
writes `locales/bot.pot` from every `words.msg` in botedge and merges it into each language's
`bot.po`, keeping what is translated (a changed English text comes back fuzzy, for a translator
to look at). The tests in tests/botedge/unit/test_catalogs.py fail while a catalog lags."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

import botedge
from botedge import words


def load_messages() -> dict[str, words.Msg]:
    """Every message botedge declares: its modules imported, each declaring its own."""
    for module in pkgutil.walk_packages(botedge.__path__, "botedge."):
        if module.name != "botedge.__main__":
            importlib.import_module(module.name)
    return dict(words.REGISTRY)


def template(messages: dict[str, words.Msg]) -> Catalog:
    found = Catalog(domain=words.DOMAIN, project="Gatehouse", fuzzy=False)
    for key in sorted(messages):
        message = messages[key]
        text: str | tuple[str, str] = message.text
        if message.plural is not None:
            text = (message.text, message.plural)
        found.add(text, context=key)
    return found


def po_path(language: str, directory: Path = words.LOCALES) -> Path:
    return directory / language / "LC_MESSAGES" / f"{words.DOMAIN}.po"


def read(path: Path, language: str) -> Catalog:
    with path.open("rb") as file:
        return read_po(file, locale=language, domain=words.DOMAIN)


def write(directory: Path = words.LOCALES) -> None:
    source = template(load_messages())
    with (directory / f"{words.DOMAIN}.pot").open("wb") as file:
        write_po(file, source, width=100, omit_header=False)
    for language in words.LANGUAGES:
        if language == words.SOURCE:
            continue
        path = po_path(language, directory)
        if path.exists():
            catalog = read(path, language)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            catalog = Catalog(
                locale=language, domain=words.DOMAIN, project="Gatehouse", fuzzy=False
            )
        catalog.update(source, no_fuzzy_matching=True)
        with path.open("wb") as file:
            write_po(file, catalog, width=100, ignore_obsolete=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", required=True)
    parser.parse_args()
    write()


if __name__ == "__main__":
    main()
