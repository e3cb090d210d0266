"""Broadcasts through the panel: sent by a real worker to the simulated Telegram with progress,
the refusals at their fields with nothing written, the test message through botedge, cancel."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import psycopg
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.telegram_text import html_problem
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.botedge.e2e.conftest import FAST
from tests.conftest import (
    HTTP,
    TEST_BCRYPT_ROUNDS,
    Serve,
    ServiceProcess,
    panel_settings,
    serve_botedge_api,
    serve_simtelegram,
    service_env,
    wait_until,
)
from tests.panel_api.e2e.conftest import PASSWORD, Panel, owner_and_viewer

BOT = 5550001
PEOPLE = range(7_300_001, 7_300_031)


@dataclass
class EdgePanel(Panel):
    """The panel with the simulated Telegram it sends through, and a worker's environment."""

    sim: str
    env: dict[str, str]


@pytest.fixture
def panel(serve: Serve, database_url: str) -> Iterator[EdgePanel]:
    """The panel with botedge's API and the simulated Telegram behind it; a bot with 30 people
    who started it (@p7300001 ...), the first two of whom blocked it."""
    sim = serve_simtelegram(serve, SIM_ENFORCE_LIMITS="false")
    env = service_env(database_url, TELEGRAM_API_BASE=sim.url, **FAST)
    botedge = serve_botedge_api(serve, database_url, TELEGRAM_API_BASE=sim.url)
    bot, token, _ = insert_bot(database_url, BOT)
    HTTP.post(f"{sim.url}/_sim/bots", json={"token": token}).raise_for_status()
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "WITH p AS (INSERT INTO people (telegram_user_id, first_name, username)"
            " SELECT u, 'P', 'p' || u FROM generate_series(%s::bigint, %s::bigint) u"
            " RETURNING id, telegram_user_id)"
            " INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at, blocked_at,"
            " started_at) SELECT %s, id, now(), now(),"
            " CASE WHEN telegram_user_id < %s THEN now() END, now() FROM p",
            (PEOPLE[0], PEOPLE[-1], bot, PEOPLE[2]),
        )
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BOTEDGE_URL=botedge.url)
    with serve_in_thread(create_app(settings)) as url:
        yield EdgePanel(url, owner_and_viewer(url), bot, database_url, "", sim.url, env)


def test_broadcast__a_worker_sends_it_to_everyone_reachable_with_its_progress(
    panel: EdgePanel, start_service: Callable[..., ServiceProcess]
) -> None:
    audience = panel.call("GET", f"/v1/broadcasts/audience?bot={panel.bot}", role="viewer")
    assert audience.json() == {
        "bot_id": panel.bot,
        "people": 30,
        "reachable": 28,
        "blocked": 2,
        "unreachable": 0,
    }
    body = {
        "bot_id": panel.bot,
        "text": '  New posts: <b>3</b> &amp; a <a href="https://example.com">link</a>  ',
        "button_text": "Open",
        "button_url": "https://example.com/open",
    }
    assert panel.call("POST", "/v1/broadcasts", body, role="viewer").status_code == 403
    made = panel.call("POST", "/v1/broadcasts", body)
    assert made.status_code == 201, made.text
    broadcast = made.json()
    assert broadcast["state"] == "queued"
    assert broadcast["text"] == body["text"].strip()
    assert broadcast["created_by"] == "Owner"
    start_service("botedge", "--role", "worker", env=panel.env)
    url = f"/v1/broadcasts/{broadcast['id']}"
    wait_until(lambda: panel.call("GET", url).json()["state"] == "done", 30, "the broadcast done")
    done = panel.call("GET", url, role="viewer").json()
    assert {k: done[k] for k in ("recipients", "skipped", "queued", "sent", "failed")} == {
        "recipients": 28,
        "skipped": 2,
        "queued": 0,
        "sent": 28,
        "failed": 0,
    }
    assert done["finished_at"] >= done["started_at"] >= done["created_at"]
    sent = HTTP.get(f"{panel.sim}/_sim/sent", params={"bot_id": BOT}).json()
    assert sorted(m["chat_id"] for m in sent) == list(PEOPLE[2:])
    [(payload,)] = panel.query(
        "SELECT payload FROM outbox WHERE broadcast_id = %s LIMIT 1", broadcast["id"]
    )
    assert payload["parse_mode"] == "HTML"
    assert payload["reply_markup"] == {
        "inline_keyboard": [[{"text": "Open", "url": "https://example.com/open"}]]
    }
    # Listed, filtered by state; audited.
    listed = panel.call("GET", "/v1/broadcasts?state=done", role="viewer").json()
    assert [b["id"] for b in listed["items"]] == [broadcast["id"]]
    assert panel.call("GET", "/v1/broadcasts?state=queued").json()["items"] == []
    [(action,)] = panel.query(
        "SELECT action FROM audit_log WHERE target = %s", f"broadcast:{broadcast['id']}"
    )
    assert action == "broadcasts.send"


def test_broadcast__refusals_at_their_fields_and_nothing_written(panel: EdgePanel) -> None:
    with psycopg.connect(panel.database_url) as conn:
        [(other_bot,)] = conn.execute(
            "INSERT INTO bots (telegram_bot_id, username, token_encrypted,"
            " webhook_secret_encrypted, status, mode)"
            " SELECT 5550999, 'other_bot', token_encrypted, webhook_secret_encrypted, 'paused',"
            " mode FROM bots"
            " WHERE id = %s RETURNING id",
            (panel.bot,),
        ).fetchall()
        [(content,)] = conn.execute(
            "INSERT INTO contents (bot_id, code, kind, body) VALUES (%s, 'x', 'text', 'Hi')"
            " RETURNING id",
            (other_bot,),
        ).fetchall()
    base = {"bot_id": panel.bot}
    for body, field, code in (
        ({}, "text", "required"),
        ({"text": "   "}, "text", "required"),
        ({"text": "Hi", "content_id": content}, "content_id", "invalid"),
        ({"text": "x" * 4097}, "text", "too-long"),
        ({"text": "\U0001f600" * 2049}, "text", "too-long"),
        ({"text": "a < b"}, "text", "invalid"),
        ({"text": "<b>bold"}, "text", "invalid"),
        ({"text": "Hi", "button_text": "Open"}, "button_url", "required"),
        ({"text": "Hi", "button_url": "https://e.com"}, "button_text", "required"),
        ({"text": "Hi", "button_text": "Open", "button_url": "e.com"}, "button_url", "bad-format"),
        (
            {"text": "Hi", "button_text": "x" * 65, "button_url": "tg://x"},
            "button_text",
            "too-long",
        ),
        ({"content_id": content}, "content_id", "not-found"),
        ({"text": "Hi", "bot_id": other_bot}, "bot_id", "invalid"),
        ({"text": "Hi", "bot_id": 999_999}, "bot_id", "not-found"),
    ):
        refused = panel.call("POST", "/v1/broadcasts", {**base, **body})
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["errors"] == [{"field": field, "code": code}], body
    assert panel.query("SELECT count(*) FROM broadcasts") == [(0,)]


def test_broadcast__a_test_message_first_then_cancel_before_it_starts(panel: EdgePanel) -> None:
    body = {"bot_id": panel.bot, "text": "Tonight <i>live</i>"}
    sent = panel.call("POST", "/v1/broadcasts/test", {**body, "to": f"@p{PEOPLE[5]}"})
    assert sent.status_code == 200, sent.text
    assert sent.json()["sent"] is True
    [message] = HTTP.get(f"{panel.sim}/_sim/sent", params={"chat_id": PEOPLE[5]}).json()
    assert message["text"] == "Tonight <i>live</i>"
    by_id = panel.call("POST", "/v1/broadcasts/test", {**body, "to": str(PEOPLE[6])})
    assert by_id.status_code == 200
    for to, code in (("@nobody_here", "not-found"), (str(PEOPLE[0]), "unreachable")):
        refused = panel.call("POST", "/v1/broadcasts/test", {**body, "to": to})
        assert refused.status_code == 422
        assert refused.json()["errors"] == [{"field": "to", "code": code}]
    # Nothing queued by a test.
    assert panel.query("SELECT count(*) FROM broadcasts") == [(0,)]

    # No worker runs here: the broadcast waits queued, and the cancel stops it before it starts.
    made = panel.call("POST", "/v1/broadcasts", body).json()
    stopped = panel.call("POST", f"/v1/broadcasts/{made['id']}/cancel")
    assert stopped.status_code == 200, stopped.text
    assert (stopped.json()["state"], stopped.json()["recipients"]) == ("cancelled", 0)
    again = panel.call("POST", f"/v1/broadcasts/{made['id']}/cancel")
    assert again.status_code == 409
    assert panel.call("POST", "/v1/broadcasts/999999/cancel").status_code == 404
    actions = panel.query("SELECT action FROM audit_log ORDER BY id")
    assert [a for (a,) in actions if a.startswith("broadcasts.")] == [
        "broadcasts.send",
        "broadcasts.cancel",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "<b>b</b> <strong>s</strong> <i>i</i> <u>u</u> <s>s</s> <code>c</code> <pre>p</pre>",
        '<a href="https://e.com">x</a> &lt;tag&gt; &amp; &quot; &#128512; &#x1F600;',
        '<span class="tg-spoiler">x</span> <tg-spoiler>y</tg-spoiler> <blockquote>q</blockquote>',
        "a > b",
    ],
)
def test_html_telegram_reads(text: str) -> None:
    assert html_problem(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "a < b",
        "<div>x</div>",
        "<b>x",
        "x</b>",
        "<b><i>x</b></i>",
        "Tom & Jerry",
        "&nbsp;",
        "<a>x</a>",
    ],
)
def test_html_telegram_refuses(text: str) -> None:
    assert html_problem(text) is not None


def test_broadcast_audience__counted_as_the_fan_out_counts_refused_at_its_field_and_kept(
    panel: EdgePanel,
) -> None:
    with psycopg.connect(panel.database_url) as conn:
        [(channel,), (other,)] = conn.execute(
            "INSERT INTO channels (telegram_chat_id, title, is_paid)"
            " VALUES (-1007300001, 'Club', true), (-1007300002, 'Other', true) RETURNING id"
        ).fetchall()
        [(plan,)] = conn.execute(
            "INSERT INTO plans (channel_id, name, price_minor, currency, period_days,"
            " grace_days, is_default) VALUES (%s, 'Monthly', 500, 'USD', 30, 3, true)"
            " RETURNING id",
            (other,),
        ).fetchall()
        # Ten of the people in the club: the first two of them blocked the bot; five active.
        conn.execute(
            "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
            " next_check_at, updated_at)"
            " SELECT id, %s, CASE WHEN telegram_user_id < %s THEN 'active' ELSE 'grace' END,"
            " now(), 3, now(), now() FROM people WHERE telegram_user_id < %s",
            (channel, PEOPLE[5], PEOPLE[10]),
        )
        persons = [
            person
            for (person,) in conn.execute(
                "SELECT id FROM people WHERE telegram_user_id = ANY(%s) ORDER BY id",
                ([PEOPLE[1], PEOPLE[20], PEOPLE[21]],),
            ).fetchall()
        ]

    def counted(**audience: object) -> dict[str, int]:
        body = {"bot_id": panel.bot, **audience}
        answer = panel.call("POST", "/v1/broadcasts/audience", body, role="viewer")
        assert answer.status_code == 200, answer.text
        return {k: answer.json()[k] for k in ("people", "reachable", "blocked")}

    assert counted() == {"people": 30, "reachable": 28, "blocked": 2}
    assert counted(channel_id=channel) == {"people": 10, "reachable": 8, "blocked": 2}
    assert counted(channel_id=channel, member_status="active") == {
        "people": 5,
        "reachable": 3,
        "blocked": 2,
    }
    assert counted(language="fa") == {"people": 0, "reachable": 0, "blocked": 0}
    assert counted(people=persons) == {"people": 3, "reachable": 2, "blocked": 1}
    # Nobody paid for the plan yet.
    assert counted(plan_id=plan)["people"] == 0

    base = {"bot_id": panel.bot, "text": "Hi"}
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)).replace(microsecond=0)
    for body, field, code in (
        ({"member_status": "active"}, "channel_id", "required"),
        ({"channel_id": channel, "plan_id": plan}, "plan_id", "invalid"),
        ({"plan_id": 999_999}, "plan_id", "not-found"),
        ({"channel_id": 999_999}, "channel_id", "not-found"),
        ({"starts_at": "2020-01-01T00:00:00Z"}, "starts_at", "out-of-range"),
        ({"starts_at": (soon + dt.timedelta(days=91)).isoformat()}, "starts_at", "out-of-range"),
        ({"starts_at": soon.replace(tzinfo=None).isoformat()}, "starts_at", "invalid"),
        ({"language": "de"}, "language", "invalid"),
        ({"people": []}, "people", "too-short"),
    ):
        refused = panel.call("POST", "/v1/broadcasts", {**base, **body})
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["errors"][0]["field"] == field, (body, refused.text)
        if code != "invalid":
            assert refused.json()["errors"] == [{"field": field, "code": code}], body
    assert panel.query("SELECT count(*) FROM broadcasts") == [(0,)]
    made = panel.call(
        "POST",
        "/v1/broadcasts",
        {**base, "plan_id": plan, "language": "en", "starts_at": soon.isoformat()},
    )
    assert made.status_code == 201, made.text
    kept = made.json()
    # The plan's channel filled in; set to start in two hours.
    assert (kept["channel_id"], kept["channel_title"], kept["plan_name"]) == (
        other,
        "Other",
        "Monthly",
    )
    assert (kept["language"], kept["chosen"]) == ("en", None)
    assert dt.datetime.fromisoformat(kept["starts_at"]) == soon
    chosen = panel.call("POST", "/v1/broadcasts", {**base, "people": persons * 2}).json()
    assert chosen["chosen"] == 3
