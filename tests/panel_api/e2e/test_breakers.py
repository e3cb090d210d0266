"""billing failing behind the panel: after ten 5xx in the window its breaker opens, and the
panel answers 503 `billing-unavailable` with `Retry-After` without asking it; `/readyz` names it
in its body while staying 200; once billing answers, the probe closes it."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import HTTP, TEST_BCRYPT_ROUNDS, panel_settings, wait_until
from tests.panel_api.e2e.conftest import PASSWORD, Panel, owner_and_viewer


class FlakyBilling:
    """A billing stand-in over real HTTP that answers 502 until told to recover."""

    def __init__(self) -> None:
        self.asked = 0
        self.failing = True

    async def invoices(self, request: Request) -> JSONResponse:
        self.asked += 1
        if self.failing:
            return JSONResponse({"oops": True}, status_code=502)
        return JSONResponse({"order_reference": "gh_x"}, status_code=201)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/internal/invoices", self.invoices, methods=["POST"])])


def test_billing_failing__breaker_opens_panel_answers_503_unasked_then_recovers(
    database_url: str,
) -> None:
    billing = FlakyBilling()
    insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    with serve_in_thread(billing.app()) as billing_url:
        settings = panel_settings(database_url, BILLING_URL=billing_url)
        with serve_in_thread(create_app(settings)) as url:
            panel = Panel(url, owner_and_viewer(url), 0, database_url, billing_url)
            body = {"telegram_user_id": 4242, "channel_id": 1, "gateway": "subgate"}
            answers = [panel.call("POST", "/v1/invoices", body) for _ in range(12)]
            assert [a.status_code for a in answers] == [503] * 12
            assert {a.json()["type"] for a in answers} == {"/problems/billing-unavailable"}
            # Ten asked and failed; the next two were not asked and say when to come back.
            assert billing.asked == 10
            assert [a.headers.get("retry-after") for a in answers[10:]] == ["5", "5"]
            assert "not asked" in answers[-1].json()["detail"]
            ready = HTTP.get(f"{url}/readyz")
            assert ready.status_code == 200
            [(name, state)] = ready.json()["breakers"].items()
            assert name.startswith("billing 127.0.0.1:") and state["state"] == "open"

            billing.failing = False
            wait_until(
                lambda: panel.call("POST", "/v1/invoices", body).status_code == 201,
                30,
                "the probe after the cool-off, answered",
            )
            assert HTTP.get(f"{url}/readyz").json()["breakers"] == {}
