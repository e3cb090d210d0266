"""The documents that follow from the code stay equal to it: the API reference to the
services' OpenAPI documents, the configuration table to the variables the services read, and
the README a user's guide of at most 400 lines."""

from __future__ import annotations

import re

from billing.settings import read as billing_settings
from billing.sweeper import read as sweeper_settings
from botedge.settings import read as botedge_settings
from panel_api.settings import read as panel_settings
from shared.settings import Reader
from tests.apidoc import PATH, render
from tests.conftest import ROOT, SECRETS


def test_api_doc__is_what_the_services_openapi_documents_say() -> None:
    assert PATH.read_text() == render(), "docs/api.md is stale: run `make docs`"


def read_names() -> set[str]:
    """Every variable a service's settings ask for, as each service reads them."""
    env = {**SECRETS, "DATABASE_URL": "postgresql://u@127.0.0.1/db"}
    readers = []
    for read in (billing_settings, sweeper_settings, panel_settings):
        reader = Reader(env)
        read(reader)
        readers.append(reader)
    for role in ("api", "worker"):
        reader = Reader(env)
        botedge_settings(reader, role)
        readers.append(reader)
    return {name for reader in readers for name in reader.names}


def test_configuration_doc__names_every_variable_the_services_read_and_no_other() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text()
    table = text.split("| --- |", 1)[1].split("\n\n", 1)[0]
    documented = {
        name
        for line in table.splitlines()
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1] if "|" in line else "")
    }
    assert documented == read_names()


def test_readme__is_a_users_guide_of_at_most_400_lines() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 400
    for command in ("make run", "make test"):
        assert command in readme
