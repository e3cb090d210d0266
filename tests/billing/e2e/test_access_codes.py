"""Access codes (`POST /internal/access-codes/redeem`): a code's free days through the grants
path, once per person, up to its number of uses and until its expiry; unknown, used up or
expired is one plain refusal with nothing granted; wrong codes are throttled per person."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from billing.app import create_app
from billing.settings import load
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.billing.e2e.test_grants import BEARER, DAY, Billing
from tests.conftest import HTTP, service_env

PLAIN = "the code is unknown, used up or expired"


@pytest.fixture
def billing(database_url: str) -> Iterator[Billing]:
    clock = ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
    with serve_in_thread(create_app(load(service_env(database_url)), clock=clock)) as url:
        yield Billing(url, clock, database_url)


def add_code(billing: Billing, channel: int, code: str, **values: Any) -> int:
    row = {"code": code, "channel_id": channel, "days": 10, "created_at": billing.clock.now()}
    return gateways.insert_row(billing.database_url, "access_codes", {**row, **values})


def redeem(billing: Billing, user: int, code: str) -> httpx.Response:
    body = {"telegram_user_id": user, "code": code}
    return HTTP.post(
        f"{billing.url}/internal/access-codes/redeem", json=body, headers=BEARER, timeout=30
    )


def granted(billing: Billing) -> list[tuple[Any, ...]]:
    return billing.query(
        "SELECT p.telegram_user_id, e.cause, e.reason FROM membership_events e"
        " JOIN people p ON p.id = e.person_id ORDER BY e.id"
    )


def test_code__grants_its_days_once_per_person_up_to_its_uses(billing: Billing) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    add_code(billing, channel, "ABCDEFGH2345", max_uses=2)
    now = billing.clock.now()
    # Sent as people type it: any case, spaces around.
    first = redeem(billing, 901, " abcdefgh2345 ")
    assert first.status_code == 200, first.text
    assert first.json() == {
        "channel_id": channel,
        "title": "Paid",
        "days": 10,
        "membership": {"status": "active", "expires_at": (now + 10 * DAY).isoformat()},
    }
    again = redeem(billing, 901, "ABCDEFGH2345")
    assert (again.status_code, again.json()["type"]) == (422, "/problems/code-refused")
    assert again.json()["detail"] == "you have used this code already"
    assert redeem(billing, 902, "ABCDEFGH2345").status_code == 200
    used_up = redeem(billing, 903, "ABCDEFGH2345")
    assert (used_up.status_code, used_up.json()["detail"]) == (422, PLAIN)
    assert granted(billing) == [(901, "grant", "access_code"), (902, "grant", "access_code")]
    assert billing.query("SELECT kind FROM access_events") == [("grant",), ("grant",)]


def test_code__expired_or_off_refused_plainly_and_a_member_extended_from_their_end(
    billing: Billing,
) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    now = billing.clock.now()
    add_code(billing, channel, "EXPIREDCODE2", expires_at=now - DAY)
    add_code(billing, channel, "SWITCHEDOFF2", active=False)
    add_code(billing, channel, "MEMBERSCODE2", days=5)
    for code in ("EXPIREDCODE2", "SWITCHEDOFF2"):
        refused = redeem(billing, 904, code)
        assert (refused.status_code, refused.json()["detail"]) == (422, PLAIN), code
    assert granted(billing) == []
    assert billing.grant(905, channel, now + 20 * DAY).status_code == 200
    extended = redeem(billing, 905, "MEMBERSCODE2").json()
    assert extended["membership"]["expires_at"] == (now + 25 * DAY).isoformat()


def test_code__five_wrong_then_a_wait_even_for_a_good_one(billing: Billing) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    add_code(billing, channel, "GOODCODE2345")
    for n in range(5):
        assert redeem(billing, 906, f"WRONGCODE{n + 2}").json()["detail"] == PLAIN
    waiting = redeem(billing, 906, "GOODCODE2345")
    assert waiting.status_code == 429
    assert waiting.json()["type"] == "/problems/too-many-guesses"
    assert 1 <= int(waiting.headers["retry-after"]) <= 601
    # Someone else is not held up, and after ten minutes this person is not either.
    assert redeem(billing, 907, "WRONGCODE9").status_code == 422
    billing.clock.advance((10 * DAY / (24 * 6)).total_seconds() + 1)
    assert redeem(billing, 906, "GOODCODE2345").status_code == 200
    assert granted(billing) == [(906, "grant", "access_code")]


def test_code__a_single_use_code_sent_by_twenty_people_at_once_grants_once(
    billing: Billing,
) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    add_code(billing, channel, "ONLYONCE2345")

    async def race() -> list[int]:
        async with httpx.AsyncClient(headers=BEARER, timeout=30, verify=verified()) as client:
            answers = await asyncio.gather(
                *(
                    client.post(
                        f"{billing.url}/internal/access-codes/redeem",
                        json={"telegram_user_id": 1000 + n, "code": "ONLYONCE2345"},
                    )
                    for n in range(20)
                )
            )
        return sorted(a.status_code for a in answers)

    assert asyncio.run(race()) == [200] + [422] * 19
    assert len(granted(billing)) == 1
    assert billing.query("SELECT count(*) FROM access_code_uses") == [(1,)]
    # Refusals of a real code are not guesses.
    assert billing.query("SELECT count(*) FROM access_code_misses") == [(0,)]
