"""The panel page in headless Chromium (Debian's, driven by Playwright): sign-in, a reload that
keeps the session through the refresh cookie, Persian right to left, the API's own messages."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from panel_api.settings import load
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot, new_token
from tests.conftest import ROOT, service_env
from tests.panel_api.e2e.conftest import owner_and_viewer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "tests" / "artifacts"
PASSWORD = "correct horse battery"

if CHROMIUM is None:
    if os.environ.get("CI") == "true":
        pytest.fail("Chromium is missing: .ci/run installs it (apt-get install chromium)")
    pytest.skip(
        "no Chromium: `apt-get install chromium` to run the browser tests", allow_module_level=True
    )

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402


@pytest.fixture
def panel(database_url: str) -> Iterator[str]:
    insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD) is True
    with serve_in_thread(create_app(load(service_env(database_url)))) as url:
        yield url


@pytest.fixture
def page() -> Iterator[Page]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(15_000)
        yield page
        context.close()
        browser.close()


def sign_in(page: Page, url: str, password: str = PASSWORD) -> None:
    page.goto(url)
    page.fill("input[name=email]", "owner@example.com")
    page.fill("input[name=password]", password)
    page.click("#sign-in button[type=submit]")


def test_page__sign_in_then_a_reload_keeps_the_session(page: Page, panel: str) -> None:
    sign_in(page, panel)
    expect(page.locator("#who")).to_have_text("Signed in as owner@example.com (owner)")
    expect(page.locator("[data-figure=bots]")).to_have_text("1")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    # The access token lived in memory only: the reload signs in again by the refresh cookie.
    page.reload()
    expect(page.locator("#who")).to_have_text("Signed in as owner@example.com (owner)")
    page.click("#sign-out")
    expect(page.locator("#sign-in")).to_be_visible()
    page.reload()
    expect(page.locator("#sign-in")).to_be_visible()


def test_page__persian_lays_out_right_to_left_with_persian_digits(page: Page, panel: str) -> None:
    sign_in(page, panel)
    expect(page.locator("[data-figure=bots]")).to_have_text("1")
    page.select_option("#language", "fa")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    expect(page.locator("html")).to_have_attribute("lang", "fa")
    expect(page.locator("[data-figure=bots]")).to_have_text("\u06f1")  # Persian one
    expect(page.locator("#who")).to_contain_text("وارد شده با")
    # Remembered by this browser.
    page.reload()
    expect(page.locator("html")).to_have_attribute("dir", "rtl")


def test_page__a_refused_sign_in_shows_the_apis_message(page: Page, panel: str) -> None:
    sign_in(page, panel, password="not the password")
    expect(page.locator("#message")).to_be_visible()
    answer = httpx.post(
        f"{panel}/v1/auth/login", json={"email": "owner@example.com", "password": "nope"}
    ).json()
    expect(page.locator("#message")).to_have_text(f"{answer['title']}: {answer['detail']}")


def test_page__served_for_any_view_never_for_the_api(panel: str) -> None:
    for path in ("/", "/channels", "/ad-orders/12"):
        answer = httpx.get(f"{panel}{path}")
        assert answer.status_code == 200, path
        assert '<script type="module" src="/assets/app.js">' in answer.text
        assert "default-src 'self'" in answer.headers["content-security-policy"]
    for path in ("/v1/nothing", "/internal/x", "/assets/missing.js", "/openapi.json/x"):
        answer = httpx.get(f"{panel}{path}")
        assert answer.status_code == 404, path
    assert httpx.post(f"{panel}/channels").status_code == 404
    script = httpx.get(f"{panel}/assets/app.js")
    assert (script.status_code, script.headers["content-type"].split(";")[0]) == (
        200,
        "text/javascript",
    )


def test_page__first_run_setup_on_an_empty_database(page: Page, database_url: str) -> None:
    codes: list[str] = []
    app = create_app(load(service_env(database_url)), announce=codes.append)
    with serve_in_thread(app) as url:
        page.goto(url)
        page.click("#first-start")
        page.fill("#setup input[name=code]", "WRONG-CODE-0000")
        page.fill("#setup input[name=email]", "first@example.com")
        page.fill("#setup input[name=password]", PASSWORD)
        page.click("#setup button[type=submit]")
        expect(page.locator("#message")).to_be_visible()
        assert codes, "panel-api announced a setup code"
        page.fill("#setup input[name=code]", codes[-1])
        page.click("#setup button[type=submit]")
        expect(page.locator("#who")).to_have_text("Signed in as first@example.com (owner)")


@pytest.fixture
def with_botedge(database_url: str, start_service: Any) -> Iterator[str]:
    """The panel beside botedge's API and the simulated Telegram, a viewer added."""
    sim = start_service("botedge.simtelegram", env=service_env(database_url))
    botedge = start_service(
        "botedge", "--role", "api", env=service_env(database_url, TELEGRAM_API_BASE=sim.url)
    )
    assert seed(database_url, "owner@example.com", PASSWORD) is True
    settings = load(service_env(database_url, BOTEDGE_URL=botedge.url))
    with serve_in_thread(create_app(settings)) as url:
        owner_and_viewer(url)
        yield url


def test_page__an_admin_adds_a_bot_and_a_viewer_finds_no_form(
    page: Page, with_botedge: str
) -> None:
    sign_in(page, with_botedge)
    page.click("a[data-view=bots]")
    expect(page.locator("#bots tbody tr")).to_have_count(0)
    page.fill("#add-bot input[name=token]", "not a token")
    page.click("#add-bot button[type=submit]")
    # botedge's refusal, relayed, in its own words.
    expect(page.locator("#message")).to_be_visible()
    refused = page.locator("#message").inner_text()
    assert refused and "token" in refused.lower()
    page.fill("#add-bot input[name=token]", new_token(5559001))
    page.click("#add-bot button[type=submit]")
    expect(page.locator("#bots tbody tr")).to_have_count(1)
    expect(page.locator("#bots tbody tr td").first).to_have_text("@sim5559001_bot")
    page.click("#sign-out")
    page.fill("input[name=email]", "v@example.com")
    page.fill("input[name=password]", "viewer password")
    page.click("#sign-in button[type=submit]")
    # Signed in again on the page they were on: the bots, without the form.
    expect(page.locator("#bots tbody tr")).to_have_count(1)
    expect(page.locator("#add-bot")).to_have_count(0)


def test_page__the_owner_sets_the_workspace_and_a_bad_address_is_refused(
    page: Page, panel: str
) -> None:
    sign_in(page, panel)
    page.click("a[data-view=workspace]")
    page.fill("#workspace input[name=tron_address]", "T123")
    page.click("#workspace button[type=submit]")
    expect(page.locator("#message")).to_contain_text("Unprocessable")
    page.fill("#workspace input[name=tron_address]", "")
    page.fill("#workspace input[name=time_zone]", "Asia/Tehran")
    page.click("#workspace button[type=submit]")
    expect(page.locator("#saved")).to_be_visible()
    expect(page.locator("#message")).to_be_hidden()
    assert httpx.get(f"{panel}/v1/workspace", headers=bearer(panel)).json()["time_zone"] == (
        "Asia/Tehran"
    )


def test_page__too_many_tries_say_how_long_to_wait(page: Page, panel: str) -> None:
    for _ in range(10):
        httpx.post(f"{panel}/v1/auth/login", json={"email": "owner@example.com", "password": "x"})
    sign_in(page, panel, password="still wrong")
    expect(page.locator("#message")).to_contain_text("Try again in")


def bearer(url: str) -> dict[str, str]:
    token = httpx.post(
        f"{url}/v1/auth/login", json={"email": "owner@example.com", "password": PASSWORD}
    ).json()["access_token"]
    return {"Authorization": f"Bearer {token}"}
