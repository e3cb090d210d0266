"""Polling mode end to end, and what a webhook conflict or a bad token does to the poller."""

from __future__ import annotations

import signal
import time

import pytest

from botedge.words import FSI, PDI
from tests.botedge.conftest import new_token as new_token_of
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, SECRETS


def test_polling__updates_flow_and_the_offset_advances_after_commit(edge: Edge) -> None:
    bot_id, token, _ = edge.add_bot(9201, mode="polling")
    edge.start_worker()
    for n in range(5):
        edge.sim_post("/_sim/messages", {"token": token, "user_id": 5001, "text": f"m{n}"})
    edge.sim_post("/_sim/messages", {"token": token, "user_id": 5002, "text": "/start"})
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9201)) == 6, 30, "replies")
    texts = [r["text"] for r in edge.sim_get("/_sim/sent", bot_id=9201, chat_id=5001)]
    assert texts == [
        f'I did not understand "{FSI}m{n}{PDI}". Send /start to begin.' for n in range(5)
    ]
    assert edge.sim_get("/_sim/sent", bot_id=9201, chat_id=5002)[0]["text"].startswith("Welcome")
    (offset,) = edge.query("SELECT poll_offset FROM bots WHERE id = %s", bot_id)[0]
    highest = edge.query("SELECT max(update_id) FROM inbox")[0][0]
    assert offset == highest + 1
    assert edge.query("SELECT count(*) FROM inbox") == [(6,)]


def test_polling__after_a_quiet_week_ids_below_the_offset_are_still_taken(edge: Edge) -> None:
    bot_id, token, _ = edge.add_bot(9205, mode="polling")
    worker = edge.start_worker()
    edge.sim_post("/_sim/messages", {"token": token, "user_id": 5005, "text": "/start"})
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9205)) == 1, 30, "a reply")
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=40) == 0
    [(offset,)] = edge.query("SELECT poll_offset FROM bots WHERE id = %s", bot_id)
    # A week goes by with no update; Telegram's next id is then random, here below the offset,
    # where getUpdates(offset) would confirm it unseen.
    edge.query(
        "UPDATE bots SET last_update_at = now() - interval '8 days' WHERE id = %s RETURNING id",
        bot_id,
    )
    edge.sim_post("/_sim/bots", {"token": token, "next_update_id": 500})
    edge.sim_post("/_sim/messages", {"token": token, "user_id": 5005, "text": "after the week"})
    assert offset > 500
    edge.start_worker()
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9205)) == 2, 30, "the reply")
    assert edge.sim_get("/_sim/sent", bot_id=9205)[1]["text"].startswith("I did not understand")
    # The offset starts over from the new numbering.
    assert edge.query("SELECT poll_offset FROM bots WHERE id = %s", bot_id) == [(501,)]
    assert edge.query(
        "SELECT update_id FROM inbox WHERE bot_id = %s ORDER BY update_id", bot_id
    ) == [(500,), (offset - 1,)]


@pytest.mark.slow(18)
def test_polling__webhook_conflict_is_recorded_and_backed_off(edge: Edge) -> None:
    bot_id, token, _ = edge.add_bot(9202, mode="polling")
    # Someone set a webhook for this token behind our back: getUpdates answers 409.
    HTTP.post(f"{edge.sim.url}/bot{token}/setWebhook", json={"url": "https://example.test/x"})
    edge.start_worker()
    edge.wait_until(
        lambda: edge.query("SELECT last_error FROM bots WHERE id = %s", bot_id)[0][0] is not None,
        20,
        "the conflict recorded",
    )
    error, backoff = edge.query(
        "SELECT last_error, poll_backoff_until > now() FROM bots WHERE id = %s", bot_id
    )[0]
    assert error.startswith("409: Conflict: can't use getUpdates method while webhook is active")
    assert backoff is True
    # Not a hot loop: the next poll waits out the backoff (5 s, then 10 s).
    edge.wait_until(
        lambda: len(edge.sim_get("/_sim/calls", bot_id=9202, method="getUpdates")) >= 3,
        30,
        "three polls",
    )
    starts = sorted(
        c["started"] for c in edge.sim_get("/_sim/calls", bot_id=9202, method="getUpdates")
    )
    assert starts[1] - starts[0] >= 4.8 and starts[2] - starts[1] >= 9.8, starts


def test_polling__revoked_token_marks_the_bot(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9203, mode="polling")
    edge.sim_post("/_sim/bots/9203/revoke", {})
    edge.start_worker()
    edge.wait_until(
        lambda: (
            edge.query("SELECT token_invalid_at IS NOT NULL FROM bots WHERE id = %s", bot_id)
            == [(True,)]
        ),
        20,
        "the token marked invalid",
    )
    edge.wait_until(lambda: edge.bots_served(edge.workers[0]) == 0, 20, "the bot dropped")
    assert len(edge.sim_get("/_sim/calls", bot_id=9203)) <= 3


# How long a bot with a refused token is watched for calls: two of the supervisor's refreshes
# and then some, long enough for a retaking loop to show (54-60 getMe in 12 s before).
WATCHED = 12.0


@pytest.mark.slow(16)
def test_refused_token__sender_and_poller_stop_within_three_calls_until_a_new_token(
    edge: Edge,
) -> None:
    bot_id, _, _ = edge.add_bot(9205, mode="polling")
    edge.start_api()
    # Short long polls: the refusal comes within a second of the revoke.
    worker = edge.start_worker(TELEGRAM_POLL_TIMEOUT="1")
    edge.wait_for_sender(bot_id)
    edge.sim_post("/_sim/bots/9205/revoke", {})
    edge.wait_until(
        lambda: any(c["status"] == 401 for c in edge.sim_get("/_sim/calls", bot_id=9205)),
        30,
        "the first refusal",
    )
    # The behaviour is what does not happen over a window: no call is retried in it.
    time.sleep(WATCHED)
    calls = edge.sim_get("/_sim/calls", bot_id=9205)
    refused = [c for c in calls if c["status"] == 401]
    assert len(refused) <= 3, [
        (c["method"], round(c["started"] - refused[0]["started"], 2)) for c in refused
    ]
    assert edge.query("SELECT token_invalid_at IS NOT NULL FROM bots WHERE id = %s", bot_id) == [
        (True,)
    ]
    assert edge.bots_served(worker) == 0

    # The owner gives the bot its new token (BotFather's /revoke): it is served again.
    new_token = new_token_of(9205)
    edge.sim_post("/_sim/bots/9205/revoke", {"new_token": new_token})
    assert edge.api is not None
    registered = HTTP.post(
        f"{edge.api.url}/internal/bots",
        json={"token": new_token, "mode": "polling"},
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
        timeout=30,
    )
    assert registered.status_code == 201, registered.text
    edge.wait_until(lambda: edge.bots_served(worker) == 1, 30, "the bot served again")
    edge.sim_post("/_sim/messages", {"bot_id": 9205, "user_id": 4242, "text": "/start"})
    edge.wait_until(lambda: bool(edge.sim_get("/_sim/sent", chat_id=4242)), 30, "an answer")


@pytest.mark.slow(16)
def test_polling__a_long_poll_does_not_hold_up_a_stop(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9204, mode="polling")
    worker = edge.start_worker(
        TELEGRAM_POLL_TIMEOUT="45", LEASE_SECONDS="60", SHUTDOWN_TIMEOUT="30"
    )
    edge.wait_until(
        lambda: bool(edge.query("SELECT 1 FROM leases WHERE name = %s", f"poll:{bot_id}")),
        15,
        "the poller",
    )
    edge.wait_until(
        lambda: edge.sim_get("/_sim/inflight").get("getupdates", 0) >= 1, 15, "a long poll"
    )
    # The simulator logs a call when it is answered: the long poll is still in flight.
    assert edge.sim_get("/_sim/calls", bot_id=9204, method="getUpdates") == []
    started = time.monotonic()
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=40) == 0
    assert time.monotonic() - started < 5
    assert edge.query("SELECT count(*) FROM leases") == [(0,)]
