"""A bot's texts through the panel API, with botedge's API behind it: the list of what may be
reworded with the shipped words, a text botedge refuses refused at its field with nothing
written, one written and reset with an audit entry each, the default language, and who may."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import TEST_BCRYPT_ROUNDS, Serve, panel_settings, serve_botedge_api
from tests.panel_api.e2e.conftest import PASSWORD, Panel, owner_and_viewer

KEY = "access.runs_to"


@pytest.fixture
def panel(serve: Serve, database_url: str) -> Iterator[Panel]:
    botedge = serve_botedge_api(serve, database_url)
    bot, _, _ = insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    with serve_in_thread(create_app(panel_settings(database_url, BOTEDGE_URL=botedge.url))) as url:
        yield Panel(url, owner_and_viewer(url), bot, database_url, "")


def entry(panel: Panel, key: str = KEY) -> dict[str, Any]:
    found = panel.call("GET", f"/v1/bots/{panel.bot}/texts")
    assert found.status_code == 200, found.text
    [text] = [t for t in found.json()["texts"] if t["key"] == key]
    return dict(text)


def test_bot_texts__listed_with_the_shipped_words_in_every_language(panel: Panel) -> None:
    found = panel.call("GET", f"/v1/bots/{panel.bot}/texts", role="viewer").json()
    assert found["default_language"] == "en"
    keys = [t["key"] for t in found["texts"]]
    assert {"welcome", "gate.join_first", "pay.choose_gateway", "access.ends_in"} <= set(keys)
    runs_to = entry(panel)
    assert runs_to["form"] == "text"
    assert runs_to["placeholders"] == ["title", "until"]
    assert sorted(runs_to["shipped"]) == ["ar", "en", "fa", "ru"]
    assert runs_to["shipped"]["en"].startswith("Payment received")
    assert runs_to["written"] == {}
    assert panel.call("GET", "/v1/bots/999999/texts").status_code == 404


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Paid: {title}.", "placeholder-missing"),
        ("{title} to {until} {price}", "placeholder-unknown"),
        ("{title} to {until} }", "braces"),
        ("<b>{title}</b> to {until}", "html-plain"),
        ("{title} {until}" + "x" * 4000, "too-long"),
    ],
)
def test_bot_texts__a_text_that_cannot_stand_is_refused_at_its_field_and_not_written(
    panel: Panel, text: str, code: str
) -> None:
    refused = panel.call(
        "PUT", f"/v1/bots/{panel.bot}/texts", {"key": KEY, "language": "fa", "text": text}
    )
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"] == [{"field": "text", "code": code}]
    assert panel.query("SELECT count(*) FROM bot_texts") == [(0,)]


def test_bot_texts__written_then_reset_each_audited_and_the_bots_version_moved(
    panel: Panel,
) -> None:
    text = "تمدید شد: {title} تا {until}."
    saved = panel.call(
        "PUT", f"/v1/bots/{panel.bot}/texts", {"key": KEY, "language": "fa", "text": text}
    )
    assert saved.status_code == 200, saved.text
    assert saved.json()["updated_by"] == "owner@example.com"
    assert entry(panel)["written"]["fa"]["text"] == text
    # A key that cannot be reworded is botedge's 404, relayed.
    unknown = panel.call(
        "PUT", f"/v1/bots/{panel.bot}/texts", {"key": "hours", "language": "fa", "text": "x"}
    )
    assert unknown.status_code == 404, unknown.text
    reset = panel.call("POST", f"/v1/bots/{panel.bot}/texts/reset", {"key": KEY, "language": "fa"})
    assert reset.json() == {"reset": True}
    assert entry(panel)["written"] == {}
    again = panel.call("POST", f"/v1/bots/{panel.bot}/texts/reset", {"key": KEY, "language": "fa"})
    assert again.json() == {"reset": False}
    audited = panel.query(
        "SELECT action, target, after FROM audit_log WHERE action LIKE 'bots.text%%' ORDER BY id"
    )
    target = f"bot:{panel.bot}:text:{KEY}:fa"
    assert audited == [("bots.text", target, {"text": text}), ("bots.text_reset", target, None)]
    assert panel.query("SELECT texts_version FROM bots WHERE id = %s", panel.bot) == [(2,)]


def test_bot_texts__the_default_language_set_and_only_by_an_editor(panel: Panel) -> None:
    path = f"/v1/bots/{panel.bot}/language"
    assert panel.call("PUT", path, {"default_language": "ru"}, role="viewer").status_code == 403
    body = {"key": KEY, "language": "fa", "text": "{title} {until}"}
    assert panel.call("PUT", f"/v1/bots/{panel.bot}/texts", body, role="viewer").status_code == 403
    refused = panel.call("PUT", path, {"default_language": "de"})
    assert refused.status_code == 422
    assert refused.json()["errors"] == [{"field": "default_language", "code": "not-one-of"}]
    assert panel.call("PUT", path, {"default_language": "ru"}).json() == {"default_language": "ru"}
    assert panel.query("SELECT default_language FROM bots WHERE id = %s", panel.bot) == [("ru",)]
    assert entry(panel)["shipped"]["ru"]
    assert panel.call("GET", f"/v1/bots/{panel.bot}/texts").json()["default_language"] == "ru"
