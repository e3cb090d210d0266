"""The demo as a newcomer walks it: `make run`'s launcher brings everything up (with a small
demo month, which must come out as its plan says), and each walk goes through the pages alone:
the simulated Telegram's chat window, the checkout, the simulated TRON wallet and the owner's
panel. Screenshots go to tests/artifacts/walks/."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from shared.testing import free_port
from simulators.demo_month import DAY, Plan, plan
from simulators.launcher import CHILDREN
from tests.conftest import HTTP, ROOT, wait_until
from tests.panel_api.browser.conftest import sign_in
from tests.shared.e2e.test_launcher import launcher_env, start_launcher, wait_all_ready

# The bot isolates the owner's words (a plan's name) in invisible marks a label may start with.
ISOLATE = "[\u2066-\u2069]?"

pytestmark = [pytest.mark.slow(110)]
WALKS = ROOT / "tests" / "artifacts" / "walks"
# A small month whose plan has a visitor on each walk, campaign joins and a leave, a block, a
# declined card, and buyers active, in grace and expired.
SEED, VISITORS = 69, 12


@dataclass(frozen=True)
class Demo:
    ports: dict[str, int]
    banner: str
    # When the launcher started and when its banner was out: the month was played in between.
    started: dt.datetime
    up: dt.datetime

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    @property
    def password(self) -> str:
        found = re.search(r"password  (\S+)", self.banner)
        assert found is not None, self.banner
        return found.group(1)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    ports = {child.name: free_port() for child in CHILDREN}
    log = tmp_path / "launcher.log"
    env = launcher_env(tmp_path / "data", ports)
    env.update(DEMO_MONTH=str(VISITORS), DEMO_SEED=str(SEED))
    started = dt.datetime.now(dt.UTC)
    proc = start_launcher(env, log)
    # A payment goes through billing and botedge, and a TRON claim is checked every 5 s.
    expect.set_options(timeout=30_000)
    try:
        wait_all_ready(ports, proc, log)
        WALKS.mkdir(parents=True, exist_ok=True)
        yield Demo(ports, log.read_text(), started, dt.datetime.now(dt.UTC))
    finally:
        expect.set_options(timeout=5_000)
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


@contextmanager
def fresh_page(browser: Browser, width: int = 1280, height: int = 800) -> Iterator[Page]:
    """A browser context of its own (its own storage, so a new person in the chat window)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        yield page
    finally:
        context.close()


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(WALKS / f"{name}.png"), full_page=True)


def new_person(page: Page, demo: Demo, name: str) -> None:
    """Opens the chat window as someone new, talking to the demo bot."""
    page.goto(demo.url("simtelegram"))
    expect(page.locator("#bots button[aria-pressed=true]")).to_have_count(1)
    page.fill("#first-name", name)
    page.click("#new-person button[type=submit]")
    expect(page.locator("#person option:checked")).to_contain_text(name)


def say(page: Page, text: str) -> None:
    page.fill("#text", text)
    page.press("#text", "Enter")
    expect(page.locator("#messages li.mine").last).to_contain_text(text)


def from_bot(page: Page, text: str) -> Locator:
    """The bot's newest message containing `text` as a person reads it (the marks isolating
    the owner's words unseen), once it has arrived."""
    seen = re.compile("".join(re.escape(c) + ISOLATE for c in text))
    message = page.locator("#messages li.theirs", has_text=seen).last
    expect(message).to_be_visible()
    return message


def channel(page: Page, title: str) -> Locator:
    return page.locator("#channels li", has_text=title)


def walk_a_visitor(page: Page, demo: Demo) -> None:
    """Meets the gate, joins both sponsors and gets the content, on a phone."""
    new_person(page, demo, "سارا")
    # Persian reads right to left in the chat as in Telegram.
    say(page, "سلام")
    expect(page.locator("#messages li.mine p.text").last).to_have_css("direction", "rtl")
    from_bot(page, "I did not understand")
    # The banner's content link is a /start code; a plain /start lists what the bot offers.
    say(page, "/start")
    from_bot(page, "/ads")
    say(page, "/start welcome")
    gate = from_bot(page, "I've joined")
    gate.get_by_role("button", name="Demo news").click()
    expect(channel(page, "Demo news")).to_contain_text("member")
    gate.get_by_role("button", name="Demo talk").click()
    expect(channel(page, "Demo talk")).to_contain_text("member")
    gate.get_by_role("button", name="I've joined").click()
    from_bot(page, "behind the gate")
    shot(page, "visitor")


def walk_a_subscriber(page: Page, demo: Demo, gateway: str, decline_first: bool = False) -> None:
    """Pays for the channel with `gateway` and joins it through the invite link; with
    `decline_first`, the card is declined once and the chat offers to try again."""
    new_person(page, demo, f"Payer by {gateway}")
    say(page, "/start")
    # The offer's button is a link to the bot itself: /start pay_<channel>.
    from_bot(page, "Demo paid channel").get_by_role("button", name=re.compile("Demo paid")).click()
    if decline_first:
        checkout(page, gateway, "Decline")
        declined = from_bot(page, "did not go through")
        shot(page, f"subscriber-{gateway}-declined")
        declined.get_by_role("button", name="Try again").click()
    checkout(page, gateway, "Pay")
    invite = from_bot(page, "access to Demo paid channel is open")
    shot(page, f"subscriber-{gateway}")
    invite.get_by_role("button").first.click()
    expect(channel(page, "Demo paid channel")).to_contain_text("member")
    shot(page, f"subscriber-{gateway}-joined")


def checkout(page: Page, gateway: str, press: str) -> None:
    """From the newest offer: the monthly plan, the gateway, its pay button, and `press` on
    the checkout page."""
    from_bot(page, "Choose a plan").get_by_role(
        "button", name=re.compile(f"^{ISOLATE}Monthly{ISOLATE}:")
    ).click()
    offer = from_bot(page, "Pay with")
    offer.get_by_role("button", name=re.compile(f"Pay with .*{gateway}", re.IGNORECASE)).click()
    pay_at_the_checkout(page, "5.00 USD", press)


def pay_at_the_checkout(page: Page, amount: str, press: str) -> None:
    """The newest pay link for `amount` opened, and `press` on the checkout page."""
    pay = from_bot(page, amount).get_by_role("button", name=f"Pay {amount}")
    with page.context.expect_page() as opened:
        pay.click()
    tab = opened.value
    expect(tab.locator("body")).to_contain_text(amount)
    tab.get_by_role("button", name=press).click()
    expect(tab.locator("body")).to_contain_text("Paid." if press == "Pay" else "was declined")
    tab.close()


def walk_a_yearly_subscriber_with_a_coupon(page: Page, demo: Demo) -> None:
    """Picks the yearly plan, has a coupon refused, then WELCOME20 takes 20% off; pays the
    discounted link and joins."""
    new_person(page, demo, "Yearly with a coupon")
    say(page, "/start")
    from_bot(page, "Demo paid channel").get_by_role("button", name=re.compile("Demo paid")).click()
    from_bot(page, "Choose a plan").get_by_role(
        "button", name=re.compile(f"^{ISOLATE}Yearly")
    ).click()
    from_bot(page, "Yearly").get_by_role("button", name="Pay with Stripe").click()
    from_bot(page, "50.00 USD").get_by_role("button", name="I have a coupon").click()
    from_bot(page, "Send your coupon code")
    say(page, "NOSUCHCODE")
    from_bot(page, "That coupon cannot be used")
    say(page, "welcome20")
    discounted = from_bot(page, "instead of 50.00 USD")
    expect(discounted).to_contain_text("Pay 40.00 USD")
    expect(discounted).to_contain_text("WELCOME20")
    shot(page, "subscriber-coupon")
    pay_at_the_checkout(page, "40.00 USD", "Pay")
    invite = from_bot(page, "access to Demo paid channel is open")
    invite.get_by_role("button").first.click()
    expect(channel(page, "Demo paid channel")).to_contain_text("member")


def pay_in_the_wallet(page: Page, demo: Demo, kind: str, to: str, amount: str) -> str:
    """Sends a transfer from the simulated TRON wallet page; the hash it shows."""
    page.goto(f"{demo.url('simtrongrid')}/?to={to}")
    page.select_option("#kind", kind)
    page.fill("#amount", amount)
    page.click("#send button[type=submit]")
    expect(page.locator("#sent")).to_be_visible()
    hash_text = page.locator("#hash").inner_text()
    assert re.fullmatch(r"[0-9a-f]{64}", hash_text), hash_text
    return hash_text


def walk_a_stars_subscriber(page: Page, demo: Demo) -> None:
    """Subscribes in Telegram Stars through the invoice link, joins, then cancels the
    renewal: access stays to the end of the month paid."""
    new_person(page, demo, "Stars subscriber")
    say(page, "/start")
    from_bot(page, "Demo paid channel").get_by_role("button", name=re.compile("Demo paid")).click()
    plans = from_bot(page, "Choose a plan")
    plans.get_by_role("button", name=re.compile(f"^{ISOLATE}Monthly in Stars")).click()
    from_bot(page, "Monthly in Stars").get_by_role(
        "button", name="Subscribe: 250 ⭐ every 30 days"
    ).click()
    # Telegram's payment form: the bot accepts the pre-checkout, the Stars are taken.
    from_bot(page, "every 30 days: Telegram renews it").get_by_role(
        "button", name="Subscribe for 250 ⭐"
    ).click()
    expect(page.locator("#messages li.mine").last).to_contain_text("You paid 250 ⭐.")
    invite = from_bot(page, "access to Demo paid channel is open")
    invite.get_by_role("button").first.click()
    expect(channel(page, "Demo paid channel")).to_contain_text("member")
    shot(page, "subscriber-stars")
    subscribed = from_bot(page, "Subscribed to Demo paid channel")
    subscribed.get_by_role("button", name="Cancel renewal").click()
    from_bot(page, "Renewal cancelled: no more Stars are taken for Demo paid channel")
    shot(page, "subscriber-stars-cancelled")


def walk_an_advertiser(page: Page, browser: Browser, demo: Demo) -> None:
    """Books the slot, the owner approves it, pays in USDT and then the rest in TRX."""
    new_person(page, demo, "Advertiser")
    say(page, "/ads")
    from_bot(page, "Pinned post").get_by_role("button", name=re.compile("Pinned post")).click()
    from_bot(page, "Booking")
    say(page, "Fresh coffee, 20% off this week")
    from_bot(page, "Fresh coffee").get_by_role("button", name="Send for review").click()
    booked = from_bot(page, "is with the owner for review").inner_text()
    number = re.search(r"Order #(\d+)", booked)
    assert number is not None, booked

    # The owner approves it in the panel, in a browser of their own.
    owner = browser.new_context().new_page()
    owner.set_default_timeout(30_000)
    sign_in(owner, demo.url("panel-api"), demo.password)
    expect(owner.locator("#who")).to_contain_text("owner@example.com")
    owner.goto(f"{demo.url('panel-api')}/orders?status=requested")
    row = owner.locator("#orders tbody tr", has_text="Fresh coffee")
    row.get_by_role("button", name="Approve").click()
    expect(owner.locator("#orders tbody tr", has_text="Fresh coffee")).to_have_count(0)
    owner.context.close()

    approved = from_bot(page, f"Order #{number.group(1)} (Pinned post, 24 hours) is approved")
    # The QR code of the address, as the photo Telegram would show.
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0",
        arg=approved.locator("img").element_handle(),
    )
    caption = approved.inner_text()
    address = re.search(r"\bT[1-9A-HJ-NP-Za-km-z]{33}\b", caption)
    assert address is not None and "10 USDT" in caption, caption
    shot(page, "advertiser-approved")

    wallet = page.context.new_page()
    # A slip is refused at its field, and nothing is sent.
    wallet.goto(f"{demo.url('simtrongrid')}/?to={address.group(0)[:-1]}")
    wallet.fill("#amount", "4.1234567")
    wallet.click("#send button[type=submit]")
    expect(wallet.locator("#to-problem")).to_contain_text("A TRON address")
    expect(wallet.locator("#amount-problem")).to_contain_text("at most six decimals")
    expect(wallet.locator("#sent")).to_be_hidden()
    first = pay_in_the_wallet(wallet, demo, "usdt", address.group(0), "4")
    shot(wallet, "wallet")
    say(page, first)
    part = from_bot(page, "4 USDT arrived").inner_text()
    rest = re.search(r"6 USDT or ([\d.]+) TRX left", part)
    assert rest is not None, part
    second = pay_in_the_wallet(wallet, demo, "trx", address.group(0), rest.group(1))
    say(page, second)
    paid = from_bot(page, "is paid in full").inner_text()
    assert f"order #{number.group(1)}" in paid and "10 USDT of 10 USDT" in paid, paid
    shot(page, "advertiser-paid")


def walk_the_owner(page: Page, demo: Demo) -> None:
    """After the walks above: their purchases and the paid order are in the owner's pages."""
    sign_in(page, demo.url("panel-api"), demo.password)
    expect(page.locator("#who")).to_contain_text("owner@example.com")
    # The advertiser's USDT and TRX are revenue beside the card payments.
    legend = page.locator("#revenue")
    for coin in ("USD:", "USDT:", "TRX:", "XTR: 250 ⭐"):
        expect(legend).to_contain_text(coin)
    shot(page, "owner-dashboard")
    page.goto(f"{demo.url('panel-api')}/payments?q=Payer")
    rows = page.locator("#payments tbody tr")
    expect(rows).to_have_count(3)
    for gateway in ("wayforpay", "subgate", "stripe"):
        expect(rows.filter(has_text=f"Payer by {gateway}")).to_contain_text("$5.00")
    page.goto(f"{demo.url('panel-api')}/orders?status=paid")
    expect(page.locator("#orders tbody tr", has_text="Fresh coffee")).to_contain_text("10 USDT")
    shot(page, "owner-orders")
    # The coupon's one use, by the yearly subscriber, paid.
    page.goto(f"{demo.url('panel-api')}/coupons")
    row = page.locator("#coupons tbody tr", has_text="WELCOME20")
    row.locator("a[href^='/coupon-uses']").click()
    used = page.locator("#coupon-uses tbody tr")
    expect(used).to_have_count(1)
    expect(used).to_contain_text("Yearly with a coupon")
    expect(used).to_contain_text("$10.00")
    shot(page, "owner-coupon-uses")
    # The Stars subscriber's membership runs on, its renewal cancelled.
    page.goto(f"{demo.url('panel-api')}/memberships?q=Stars")
    stars = page.locator("#memberships tbody tr", has_text="Stars subscriber")
    expect(stars).to_contain_text("Stars, cancelled")
    shot(page, "owner-memberships-stars")


def planned_events(month: Plan) -> list[tuple[dt.timedelta, str]]:
    """What each person of the plan leaves in the statistics, and how long ago."""
    events = []
    for v in month.visitors:
        kinds = ["new_person", "start"]
        kinds += ["gate_shown"] if v.walk != "start" else []
        kinds += ["gate_passed", "content_delivered"] if v.walk == "gate" else []
        # A buyer's /start, and the offer's link: /start pay_<channel>.
        kinds += ["start", "start"] if v.gateway else []
        kinds += ["payment"] if v.gateway and not v.declines else []
        kinds += ["campaign_join"] if v.campaign is not None else []
        kinds += ["campaign_leave"] if v.leaves else []
        kinds += ["blocked"] if v.blocks else []
        events += [(v.ago, kind) for kind in kinds]
    return events + [(a.ago, "new_person") for a in month.advertisers]


def check_the_month(demo: Demo) -> None:
    """The month the launcher played is the plan's: each event on its day (an event the few
    seconds of playing could put on either side of midnight may be on either), memberships in
    the states their payment's age gives once the sweep has run, the campaigns' joins and
    leaves, both broadcasts sent to everyone who did not block the bot, and the ad orders."""
    lines = [json.loads(line) for line in demo.banner.splitlines() if '"demo month: ' in line]
    assert len(lines) == 1, demo.banner
    assert json.loads(lines[0]["msg"].removeprefix("demo month: "))["failed"] == {}
    month = plan(SEED, VISITORS)
    # Its progress, a line at each quarter where the output is not a terminal, to the end.
    parts = len(month.visitors) + len(month.advertisers) + len(month.broadcasts)
    bars = re.findall(r"demo month \[([#-]{30})\] (\d+)/(\d+)", demo.banner)
    assert 2 <= len(bars) <= 5, demo.banner
    assert bars[-1] == ("#" * 30, str(parts), str(parts))
    token = HTTP.post(
        f"{demo.url('panel-api')}/v1/auth/login",
        json={"email": "owner@example.com", "password": demo.password},
    ).json()["access_token"]

    def get(path: str, **params: object) -> dict:
        answer = HTTP.get(
            f"{demo.url('panel-api')}/v1/{path}",
            params=params,
            headers={"authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    today = dt.date.today()
    stats = get("stats", **{"from": str(today - dt.timedelta(days=45)), "to": str(today)})
    assert stats["zone"] == "UTC"
    sure: Counter[tuple[str, str]] = Counter()
    unsure: Counter[tuple[str, str]] = Counter()
    totals = Counter(kind for _, kind in planned_events(month))
    for ago, kind in planned_events(month):
        first, last = str((demo.started - ago).date()), str((demo.up - ago).date())
        if first == last:
            sure[first, kind] += 1
        else:
            unsure[first, kind] += 1
            unsure[last, kind] += 1
    seen: Counter[str] = Counter()
    for point in stats["series"]:
        for kind in totals:
            key = (point["at"], kind)
            assert sure[key] <= point[kind] <= sure[key] + unsure[key], (key, point)
            seen[kind] += point[kind]
    assert seen == totals
    assert len({day for day, _ in sure}) >= 8

    buyers = [v for v in month.visitors if v.gateway and not v.declines]
    states = Counter(
        "active" if v.ago < 30 * DAY else "grace" if v.ago < 33 * DAY else "expired" for v in buyers
    )
    assert set(states) == {"active", "grace", "expired"}
    # The sweep runs once the month is played, and every minute.
    wait_until(
        lambda: Counter(m["status"] for m in get("memberships", limit=200)["items"]) == states,
        90,
        "the sweep to move the lapsed memberships",
    )
    campaigns = {c["name"]: c for c in get("campaigns")["items"]}
    for n, name in enumerate(("Spring sponsor", "Podcast ad")):
        joined = [v for v in month.visitors if v.campaign == n]
        assert (campaigns[name]["joins"], campaigns[name]["leaves"]) == (
            len(joined),
            sum(v.leaves for v in joined),
        )
    reachable = len(month.visitors) + len(month.advertisers) - sum(v.blocks for v in month.visitors)
    sent = [(b["state"], b["recipients"], b["sent"]) for b in get("broadcasts")["items"]]
    assert sent == [("done", reachable, reachable)] * 2
    orders = Counter(o["status"] for o in get("ad-orders", limit=50)["items"])
    assert orders == {"requested": 1, "rejected": 1, "part_paid": 1, "paid": 2}


def test_walks__the_demo_month_as_planned_then_a_visitor_subscribers_advertiser_and_owner(
    browser: Browser, demo: Demo
) -> None:
    """The demo month first, then the walks in order on the same system (the owner's
    looks at what the others did), each in a browser context of its own; the visitor's on a
    phone, as the pages must work from 390 px."""
    check_the_month(demo)
    with fresh_page(browser, 390, 844) as phone:
        walk_a_visitor(phone, demo)
    for gateway in ("stripe", "subgate", "wayforpay"):
        with fresh_page(browser) as page:
            walk_a_subscriber(page, demo, gateway, decline_first=gateway != "subgate")
    with fresh_page(browser, 390, 844) as phone:
        walk_a_yearly_subscriber_with_a_coupon(phone, demo)
    with fresh_page(browser, 390, 844) as phone:
        walk_a_stars_subscriber(phone, demo)
    with fresh_page(browser) as page:
        walk_an_advertiser(page, browser, demo)
    with fresh_page(browser) as page:
        walk_the_owner(page, demo)
