"""The panel API's contract: every route, the least role it takes, what it reads and answers.

`OPERATIONS` is the one table of who may do what; the app builds its routes from it and
`GET /openapi.json` is written from it, so the document cannot leave a route out. Problem
answers follow from what an operation takes (a token: 401 and 403; a body: 400, 413, 422; ...)
plus the ones it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from panel_api.access import Me, Page, Role
from panel_api.access_codes import (
    AccessCode,
    AccessCodeChange,
    AccessCodeQuery,
    AccessCodes,
    CodeUse,
    CodeUseExport,
    CodeUseQuery,
    Made,
    NewAccessCodes,
)
from panel_api.admission import (
    Admission,
    GrantAnswer,
    ImportBody,
    Imported,
    NewGrant,
    NewWhitelistEntry,
    WhitelistEntry,
    WhitelistQuery,
)
from panel_api.adshop import (
    AdShop,
    NewSlot,
    OrderDetail,
    OrderQuery,
    OrderStep,
    Slot,
    SlotChange,
    SlotQuery,
)
from panel_api.adshop import Order as AdOrder
from panel_api.auth import LoginBody, PasswordChange, SignIn, Tokens
from panel_api.bot_texts import (
    BotTexts,
    DefaultLanguage,
    NewText,
    TextReset,
    TextResetDone,
    Words,
    Written,
)
from panel_api.bots import (
    Bot,
    BotAdded,
    BotChanged,
    BotQuery,
    Bots,
    DeadQuery,
    DeadUpdate,
    NewBot,
    Replayed,
)
from panel_api.broadcasts import (
    Audience,
    AudienceQuery,
    AudienceSpec,
    Broadcast,
    BroadcastQuery,
    Broadcasts,
    BroadcastTest,
    NewBroadcast,
    TestSent,
)
from panel_api.campaigns import (
    Campaign,
    CampaignDetail,
    CampaignQuery,
    Campaigns,
    NewCampaign,
)
from panel_api.coupons import (
    Coupon,
    CouponChange,
    CouponQuery,
    Coupons,
    NewCoupon,
    Redemption,
    RedemptionExport,
    RedemptionQuery,
)
from panel_api.first_run import Setup, SetupBody
from panel_api.gate import (
    Channel as Channel,
)
from panel_api.gate import (
    ChannelChange,
    ChannelFound,
    ChannelQuery,
    Content,
    ContentBody,
    ContentQuery,
    DefaultGate,
    Gate,
    NewChannel,
)
from panel_api.ledger import (
    Attention,
    Dashboard,
    HeadlineQuery,
    Headlines,
    History,
    Invoice,
    InvoiceQuery,
    Ledger,
    Membership,
    MembershipExport,
    MembershipQuery,
    Payment,
    PaymentExport,
    PaymentQuery,
    PeopleExport,
    PeopleQuery,
    TelegramPerson,
    Visitor,
)
from panel_api.members import BulkExtended, BulkExtension, BulkRemoval, BulkRemoved, Members
from panel_api.operations import (
    AccessEvent,
    AccessEventQuery,
    AccessRetried,
    GatewayEvent,
    GatewayEventQuery,
    Gateways,
    InvoiceMade,
    NewInvoice,
    Operations,
    Reconciled,
    RefundAsked,
)
from panel_api.plans import NewPlan, Plan, PlanChange, PlanQuery, Plans
from panel_api.sessions import COOKIE, CSRF_HEADER, CSRF_VALUE
from panel_api.stats import Statistics, Stats, StatsQuery
from panel_api.team import (
    AuditEntry,
    AuditQuery,
    MemberChange,
    NewMember,
    Team,
    TeamMember,
    TeamQuery,
    Workspace,
    WorkspaceChange,
)
from shared.openapi import (
    Health,
    ProblemBody,
    Ready,
    query_parameters,
    responses,
    storable_strings,
    with_rules,
)

TITLE = "Gatehouse panel API"


@dataclass(frozen=True)
class Operation:
    summary: str
    least: Role | None
    """The least role that may call it; None: no bearer token (sign-in, setup, health)."""
    answer: Any = None
    """The type of a successful answer's JSON body; None: no body."""
    status: int = 200
    body: type[msgspec.Struct] | None = None
    query: type[msgspec.Struct] | None = None
    problems: tuple[int, ...] = ()
    """Problem answers beyond those that follow from the rest."""
    csrf: bool = False
    """Takes the refresh cookie and needs the anti-forgery header."""
    media_type: str = "application/json"
    handler: Any = None
    """The method that answers it, unbound: `Team.me` is served by the app's `Team`."""
    rules: tuple[str, ...] = ()
    """What it refuses with a 422 that a schema cannot say (`x-rules` in the document)."""


# What routes refuse beyond their schemas, where more than one route does.
PASSWORD_RULES = ("a password is at most 72 bytes in UTF-8",)
CONTENT_RULES = (
    "bot_id names a bot, and a content stays with its bot",
    "code is the bot's only content by it, and not one the bot keeps for itself",
    "a text has a body, a file its file_kind and file_id, a post its chat and message",
    "each gate channel once, each one known",
)
BROADCAST_RULES = (
    "a text or one of the bot's contents",
    "a member_status or a plan_id is within a channel; a plan_id names its own",
    "starts_at is now or within 90 days",
)
STATS_RULES = ("from and to between 2000-01-01 and 9999-12-30",)
PRICE_RULE = "a price has at most its currency's digits after the point and is above zero"
PLAN_RULES = (
    "a new plan has a name, a price and a period",
    PRICE_RULE,
    "a plan off sale is not the default",
    "each gateway once",
    "a bundle covers two or more known channels; only a bundle covers others",
)
COUPON_RULES = ("a percentage or an amount off, one of them",)
EXPIRY_RULE = "expires_at is in the future"
SLOT_RULES = ("price above zero", "takes USDT, TRX or both")

OPERATIONS: dict[tuple[str, str], Operation] = {
    ("POST", "/v1/auth/login"): Operation(
        "Sign in: an access token, and the refresh token in a cookie",
        None,
        Tokens,
        body=LoginBody,
        problems=(401, 429),
        handler=SignIn.login,
    ),
    ("POST", "/v1/auth/refresh"): Operation(
        "A new access token and a rotated refresh cookie",
        None,
        Tokens,
        problems=(401,),
        csrf=True,
        handler=SignIn.refresh,
    ),
    ("POST", "/v1/auth/logout"): Operation(
        "Sign out: the refresh token's whole family revoked",
        None,
        status=204,
        csrf=True,
        handler=SignIn.logout,
    ),
    ("POST", "/v1/setup"): Operation(
        "Create the owner with the one-time setup code printed at first start",
        None,
        Me,
        status=201,
        body=SetupBody,
        problems=(401, 404, 429),
        handler=Setup.create_owner,
        rules=PASSWORD_RULES,
    ),
    ("GET", "/v1/me"): Operation("The member the token names", Role.VIEWER, Me, handler=Team.me),
    ("POST", "/v1/me/password"): Operation(
        "Set one's own password, giving the current one; every other session ends",
        Role.VIEWER,
        Tokens,
        body=PasswordChange,
        problems=(429,),
        handler=SignIn.change_password,
        rules=PASSWORD_RULES,
    ),
    ("GET", "/v1/workspace"): Operation(
        "Workspace settings", Role.VIEWER, Workspace, problems=(404,), handler=Team.workspace
    ),
    ("PATCH", "/v1/workspace"): Operation(
        "Change the time zone, language, shop address or transaction explorer",
        Role.OWNER,
        Workspace,
        body=WorkspaceChange,
        problems=(404,),
        handler=Team.change_workspace,
        rules=("tron_address passes TRON's checksum",),
    ),
    ("GET", "/v1/team"): Operation(
        "The team", Role.OWNER, Page[TeamMember], query=TeamQuery, handler=Team.list_members
    ),
    ("POST", "/v1/team"): Operation(
        "Add a member",
        Role.OWNER,
        TeamMember,
        status=201,
        body=NewMember,
        problems=(409,),
        handler=Team.add,
        rules=PASSWORD_RULES,
    ),
    ("PATCH", "/v1/team/{member_id:int}"): Operation(
        "Change a member's role, name or disabled flag",
        Role.OWNER,
        TeamMember,
        body=MemberChange,
        problems=(409,),
        handler=Team.change,
    ),
    ("GET", "/v1/audit"): Operation(
        "Every write", Role.OWNER, Page[AuditEntry], query=AuditQuery, handler=Team.audit_log
    ),
    ("GET", "/v1/bots"): Operation(
        "The bots", Role.VIEWER, Page[Bot], query=BotQuery, handler=Bots.list_bots
    ),
    ("POST", "/v1/bots"): Operation(
        "Add a bot by its token (botedge checks it with Telegram)",
        Role.ADMIN,
        BotAdded,
        status=201,
        body=NewBot,
        problems=(502,),
        handler=Bots.add_bot,
        rules=("webhook mode only where PUBLIC_BASE_URL is set",),
    ),
    ("POST", "/v1/bots/{bot_id:int}/pause"): Operation(
        "Pause a bot: nobody sends for it and its webhook answers 404 until it is resumed",
        Role.ADMIN,
        BotChanged,
        problems=(404, 409),
        handler=Bots.pause,
    ),
    ("POST", "/v1/bots/{bot_id:int}/resume"): Operation(
        "Resume a paused bot (botedge points Telegram at it again first)",
        Role.ADMIN,
        BotChanged,
        problems=(404, 409, 422, 502),
        handler=Bots.resume,
        rules=("a bot in webhook mode resumes only where PUBLIC_BASE_URL is set",),
    ),
    ("POST", "/v1/bots/{bot_id:int}/remove"): Operation(
        "Remove a bot: its webhook is deleted and it counts nowhere; its history stays",
        Role.ADMIN,
        BotChanged,
        problems=(404, 502),
        handler=Bots.remove,
    ),
    ("GET", "/v1/bots/{bot_id:int}/texts"): Operation(
        "The texts of a bot its owner may reword: each as shipped in every language, and the"
        " owner's own where written (botedge lists them)",
        Role.VIEWER,
        BotTexts,
        problems=(503,),
        handler=Words.texts,
    ),
    ("PUT", "/v1/bots/{bot_id:int}/texts"): Operation(
        "Write a bot's text in one language in place of the one it ships; the bot's next"
        " update reads it",
        Role.EDITOR,
        Written,
        body=NewText,
        problems=(503,),
        handler=Words.write,
        rules=(
            "key names a text the owner may reword",
            "every placeholder of the text kept, written plainly (`{title}`), and no other",
            "Telegram's HTML where the text is sent in it, no tags where it is not",
            "within Telegram's limit with every placeholder at its longest",
        ),
    ),
    ("POST", "/v1/bots/{bot_id:int}/texts/reset"): Operation(
        "A bot's text in one language back to the one it ships",
        Role.EDITOR,
        TextResetDone,
        body=TextReset,
        handler=Words.reset,
    ),
    ("PUT", "/v1/bots/{bot_id:int}/language"): Operation(
        "The language a bot writes in to members whose own it does not speak",
        Role.EDITOR,
        DefaultLanguage,
        body=DefaultLanguage,
        handler=Words.set_language,
    ),
    ("GET", "/v1/dead-updates"): Operation(
        "Updates that failed every attempt",
        Role.ADMIN,
        Page[DeadUpdate],
        query=DeadQuery,
        handler=Bots.list_dead,
    ),
    ("POST", "/v1/dead-updates/{inbox_id:int}/replay"): Operation(
        "Queue a dead update again (botedge does it)",
        Role.ADMIN,
        Replayed,
        problems=(404, 503),
        handler=Bots.replay,
    ),
    ("GET", "/v1/attention"): Operation(
        "What needs the owner, counted by the page that lists it: ad orders to approve, access"
        " events failing, dead updates, bots with a problem",
        Role.VIEWER,
        Attention,
        handler=Ledger.attention,
    ),
    ("GET", "/v1/dashboard/headlines"): Operation(
        "How the business is doing over the last 7, 30 or 90 days or this month, each figure"
        " beside the period before: memberships active, begun and lost, renewals due in 7 days,"
        " trials ended and paid for, payments received and monthly recurring revenue per"
        " currency",
        Role.VIEWER,
        Headlines,
        query=HeadlineQuery,
        handler=Ledger.headlines,
    ),
    ("GET", "/v1/dashboard"): Operation(
        "Counts that need attention and 30 days of revenue by day and currency (payments, and"
        " the ad shop's income in USDT and TRX)",
        Role.VIEWER,
        Dashboard,
        handler=Ledger.dashboard,
    ),
    ("GET", "/v1/people"): Operation(
        "Each bot's visitors", Role.VIEWER, Page[Visitor], query=PeopleQuery, handler=Ledger.people
    ),
    ("GET", "/v1/memberships"): Operation(
        "Memberships of paid channels",
        Role.VIEWER,
        Page[Membership],
        query=MembershipQuery,
        handler=Ledger.memberships,
    ),
    ("POST", "/v1/memberships/extend"): Operation(
        "Extend the chosen members by a number of days (billing grants each one); the same"
        " request_key again extends nobody twice",
        Role.ADMIN,
        BulkExtended,
        body=BulkExtension,
        problems=(503,),
        handler=Members.extend,
    ),
    ("POST", "/v1/memberships/remove"): Operation(
        "Remove the chosen members from their channels now, with no grace (billing ends each"
        " membership and botedge takes them out); the same request_key again removes nobody"
        " twice",
        Role.ADMIN,
        BulkRemoved,
        body=BulkRemoval,
        problems=(503,),
        handler=Members.remove,
    ),
    ("GET", "/v1/memberships/{person_id:int}/{channel_id:int}/events"): Operation(
        "A membership's history, oldest first, and whose it is. `person_id` is our id for the"
        " person (a membership's `person_id`), not their Telegram id",
        Role.VIEWER,
        History,
        handler=Ledger.history,
    ),
    ("GET", "/v1/people/by-telegram-id/{telegram_user_id:int}"): Operation(
        "A person by their Telegram id: our `person_id` for them, their name, their bots",
        Role.VIEWER,
        TelegramPerson,
        handler=Ledger.person_by_telegram_id,
    ),
    ("GET", "/v1/invoices"): Operation(
        "Invoices", Role.VIEWER, Page[Invoice], query=InvoiceQuery, handler=Ledger.invoices
    ),
    ("POST", "/v1/invoices"): Operation(
        "Create an invoice (billing makes it)",
        Role.ADMIN,
        InvoiceMade,
        status=201,
        body=NewInvoice,
        problems=(404,),
        handler=Operations.create_invoice,
        rules=(
            "the gateway is on here",
            "the plan is sold through the gateway",
            "the plan is on sale in the channel",
        ),
    ),
    ("GET", "/v1/payments"): Operation(
        "Payments", Role.VIEWER, Page[Payment], query=PaymentQuery, handler=Ledger.payments
    ),
    ("GET", "/v1/reconcile"): Operation(
        "Each membership against the replay of its history: those that differ",
        Role.ADMIN,
        Reconciled,
        problems=(503,),
        handler=Operations.reconcile,
    ),
    ("POST", "/v1/reconcile/fix"): Operation(
        "Write each differing membership as its history has it (billing does it, each under"
        " its lock, with a reconcile row in its history)",
        Role.OWNER,
        Reconciled,
        problems=(503,),
        handler=Operations.reconcile_fix,
    ),
    ("POST", "/v1/payments/{payment_id:int}/refund"): Operation(
        "Refund a Telegram Stars payment: the Stars go back and what the payment bought is"
        " taken back (card payments are refunded in the gateway's dashboard, 422)",
        Role.ADMIN,
        RefundAsked,
        status=202,
        problems=(404, 422, 503),
        handler=Operations.refund_payment,
        rules=("only an applied Stars payment; a gateway's refund arrives by its webhook",),
    ),
    **{
        ("GET", f"/v1/exports/{name}.csv"): Operation(
            f"{name.capitalize()} as CSV, filtered and sorted as the list is; streamed",
            Role.ADMIN,
            str,
            query=export,
            media_type="text/csv; charset=utf-8",
            handler=handler,
        )
        for name, export, handler in (
            ("people", PeopleExport, Ledger.people_csv),
            ("memberships", MembershipExport, Ledger.memberships_csv),
            ("payments", PaymentExport, Ledger.payments_csv),
        )
    },
    ("GET", "/v1/gateways"): Operation(
        "The gateways billing can make an invoice for",
        Role.VIEWER,
        Gateways,
        problems=(503,),
        handler=Operations.gateways,
    ),
    ("GET", "/v1/gateway-events"): Operation(
        "Gateway deliveries that need the owner",
        Role.VIEWER,
        Page[GatewayEvent],
        query=GatewayEventQuery,
        handler=Operations.gateway_events,
    ),
    ("GET", "/v1/access-events"): Operation(
        "Channel access from billing as botedge does it: state, attempts, last error",
        Role.VIEWER,
        Page[AccessEvent],
        query=AccessEventQuery,
        handler=Operations.access_events,
    ),
    ("POST", "/v1/access-events/{event_id:int}/retry"): Operation(
        "Put a failed access event back in line",
        Role.ADMIN,
        AccessRetried,
        handler=Operations.retry_access_event,
    ),
    ("GET", "/v1/channels"): Operation(
        "Channels, their plans and each bot's rights there (flagged where it cannot act)",
        Role.VIEWER,
        Page[Channel],
        query=ChannelQuery,
        handler=Gate.channels,
    ),
    ("POST", "/v1/channels"): Operation(
        "Find a channel by @username, link, post link or id (botedge asks Telegram)",
        Role.ADMIN,
        ChannelFound,
        body=NewChannel,
        problems=(404, 502),
        handler=Gate.add_channel,
    ),
    ("GET", "/v1/channels/{channel_id:int}"): Operation(
        "A channel with the bots' rights there", Role.VIEWER, Channel, handler=Gate.channel
    ),
    ("PATCH", "/v1/channels/{channel_id:int}"): Operation(
        "Set a channel paid, its manager bot, its default plan, reminders and admission",
        Role.ADMIN,
        Channel,
        body=ChannelChange,
        handler=Gate.change_channel,
        rules=(PRICE_RULE, "manager_bot_id names a bot", "each channel once"),
    ),
    ("GET", "/v1/plans"): Operation(
        "Plans: what the bot offers for each paid channel, on sale or not, in the bot's order",
        Role.VIEWER,
        Page[Plan],
        query=PlanQuery,
        handler=Plans.plans,
    ),
    ("POST", "/v1/plans"): Operation(
        "Add a plan to a channel (its first plan becomes its default)",
        Role.ADMIN,
        Plan,
        status=201,
        body=NewPlan,
        handler=Plans.add_plan,
        rules=PLAN_RULES,
    ),
    ("GET", "/v1/plans/{plan_id:int}"): Operation(
        "A plan", Role.VIEWER, Plan, problems=(404,), handler=Plans.plan
    ),
    ("PATCH", "/v1/plans/{plan_id:int}"): Operation(
        "Change a plan: its name, price, gateways, place, on sale or not, or make it the default",
        Role.ADMIN,
        Plan,
        body=PlanChange,
        problems=(404, 409),
        handler=Plans.change_plan,
        rules=PLAN_RULES,
    ),
    ("GET", "/v1/coupons"): Operation(
        "Coupons with their uses (not given back) and how many of those were paid",
        Role.VIEWER,
        Page[Coupon],
        query=CouponQuery,
        handler=Coupons.coupons,
    ),
    ("POST", "/v1/coupons"): Operation(
        "Add a coupon: a percentage or an amount off, with its limits",
        Role.ADMIN,
        Coupon,
        status=201,
        body=NewCoupon,
        handler=Coupons.add_coupon,
        rules=(*COUPON_RULES, EXPIRY_RULE),
    ),
    ("GET", "/v1/coupons/{coupon_id:int}"): Operation(
        "A coupon", Role.VIEWER, Coupon, problems=(404,), handler=Coupons.coupon
    ),
    ("PATCH", "/v1/coupons/{coupon_id:int}"): Operation(
        "Change a coupon's limits, plans and customers, or switch it off",
        Role.ADMIN,
        Coupon,
        body=CouponChange,
        problems=(404,),
        handler=Coupons.change_coupon,
        rules=COUPON_RULES,
    ),
    ("GET", "/v1/coupon-redemptions"): Operation(
        "Each use of a coupon: who, for which invoice, and what came of it",
        Role.VIEWER,
        Page[Redemption],
        query=RedemptionQuery,
        handler=Coupons.redemptions,
    ),
    ("GET", "/v1/exports/coupon-redemptions.csv"): Operation(
        "Coupon uses as CSV, filtered and sorted as the list is; streamed",
        Role.ADMIN,
        str,
        query=RedemptionExport,
        media_type="text/csv; charset=utf-8",
        handler=Coupons.redemptions_csv,
    ),
    ("GET", "/v1/access-codes"): Operation(
        "Access codes with their uses and the bot's start link that redeems each",
        Role.VIEWER,
        Page[AccessCode],
        query=AccessCodeQuery,
        handler=AccessCodes.codes,
    ),
    ("POST", "/v1/access-codes"): Operation(
        "Make access codes: free days of a paid channel, for a number of people each",
        Role.ADMIN,
        Made,
        status=201,
        body=NewAccessCodes,
        handler=AccessCodes.add_codes,
        rules=("channel_id is a paid channel", EXPIRY_RULE),
    ),
    ("GET", "/v1/access-codes/{code_id:int}"): Operation(
        "An access code", Role.VIEWER, AccessCode, problems=(404,), handler=AccessCodes.code
    ),
    ("PATCH", "/v1/access-codes/{code_id:int}"): Operation(
        "Change an access code's uses, expiry or label, or switch it off",
        Role.ADMIN,
        AccessCode,
        body=AccessCodeChange,
        problems=(404,),
        handler=AccessCodes.change_code,
    ),
    ("GET", "/v1/access-code-uses"): Operation(
        "Each use of an access code: who and when",
        Role.VIEWER,
        Page[CodeUse],
        query=CodeUseQuery,
        handler=AccessCodes.uses,
    ),
    ("GET", "/v1/exports/access-code-uses.csv"): Operation(
        "Access code uses as CSV, filtered and sorted as the list is; streamed",
        Role.ADMIN,
        str,
        query=CodeUseExport,
        media_type="text/csv; charset=utf-8",
        handler=AccessCodes.uses_csv,
    ),
    ("GET", "/v1/channels/{channel_id:int}/whitelist"): Operation(
        "Who may be in a paid channel without paying",
        Role.VIEWER,
        Page[WhitelistEntry],
        query=WhitelistQuery,
        problems=(404,),
        handler=Admission.whitelist,
    ),
    ("POST", "/v1/channels/{channel_id:int}/whitelist"): Operation(
        "Let someone into a paid channel without paying (kept from intruder removal)",
        Role.ADMIN,
        WhitelistEntry,
        status=201,
        body=NewWhitelistEntry,
        problems=(404,),
        handler=Admission.add_to_whitelist,
        rules=("the channel is paid",),
    ),
    ("DELETE", "/v1/channels/{channel_id:int}/whitelist/{telegram_user_id:int}"): Operation(
        "Take someone off a channel's whitelist",
        Role.ADMIN,
        status=204,
        problems=(404,),
        handler=Admission.remove_from_whitelist,
    ),
    ("POST", "/v1/channels/{channel_id:int}/import"): Operation(
        "Import members by Telegram id (up to 10,000): whitelist them, or grant access until"
        " a date through billing; the bad ids listed",
        Role.ADMIN,
        Imported,
        body=ImportBody,
        problems=(404, 503),
        handler=Admission.import_members,
        rules=("the channel is paid", "a grant needs until, in the future"),
    ),
    ("POST", "/v1/grants"): Operation(
        "Grant access to a paid channel until a date, without a payment (billing)",
        Role.ADMIN,
        GrantAnswer,
        body=NewGrant,
        problems=(404, 503),
        handler=Admission.grant,
        rules=("until is in the future",),
    ),
    ("PUT", "/v1/bots/{bot_id:int}/default-gate"): Operation(
        "A bot's default gate channels",
        Role.EDITOR,
        DefaultGate,
        body=DefaultGate,
        handler=Gate.set_default_gate,
        rules=("each channel once, each one known",),
    ),
    ("GET", "/v1/contents"): Operation(
        "Contents with their gate and link",
        Role.VIEWER,
        Page[Content],
        query=ContentQuery,
        handler=Gate.contents,
    ),
    ("POST", "/v1/contents"): Operation(
        "Add a content behind the gate",
        Role.EDITOR,
        Content,
        status=201,
        body=ContentBody,
        handler=Gate.add_content,
        rules=CONTENT_RULES,
    ),
    ("PATCH", "/v1/contents/{content_id:int}"): Operation(
        "Replace a content",
        Role.EDITOR,
        Content,
        body=ContentBody,
        handler=Gate.change_content,
        rules=CONTENT_RULES,
    ),
    ("DELETE", "/v1/contents/{content_id:int}"): Operation(
        "Delete a content", Role.EDITOR, status=204, handler=Gate.delete_content
    ),
    ("GET", "/v1/campaigns"): Operation(
        "Campaigns with their invite links and who joined through each",
        Role.VIEWER,
        Page[Campaign],
        query=CampaignQuery,
        handler=Campaigns.campaigns,
    ),
    ("POST", "/v1/campaigns"): Operation(
        "Start a campaign: botedge has the bot make a named invite link into the channel",
        Role.EDITOR,
        Campaign,
        status=201,
        body=NewCampaign,
        problems=(502, 503),
        handler=Campaigns.add_campaign,
        rules=("the bot is active and may invite users to the channel",),
    ),
    ("GET", "/v1/campaigns/{campaign_id:int}"): Operation(
        "A campaign with its joins and leaves per day over the last 30 days",
        Role.VIEWER,
        CampaignDetail,
        problems=(404,),
        handler=Campaigns.campaign,
    ),
    ("GET", "/v1/broadcasts"): Operation(
        "Broadcasts with their progress: queued, sent, failed, skipped, dropped by a cancel",
        Role.VIEWER,
        Page[Broadcast],
        query=BroadcastQuery,
        handler=Broadcasts.broadcasts,
    ),
    ("POST", "/v1/broadcasts"): Operation(
        "Send a message to every person of a bot who can be reached, or to those of an audience"
        " (a channel, a membership status or plan there, a language, or people chosen by"
        " hand), at once or from starts_at",
        Role.EDITOR,
        Broadcast,
        status=201,
        body=NewBroadcast,
        handler=Broadcasts.send,
        rules=BROADCAST_RULES,
    ),
    ("POST", "/v1/broadcasts/test"): Operation(
        "Send a broadcast's message to one person who started the bot, before everyone",
        Role.EDITOR,
        TestSent,
        body=BroadcastTest,
        problems=(502, 503),
        handler=Broadcasts.test,
        rules=BROADCAST_RULES,
    ),
    ("GET", "/v1/broadcasts/audience"): Operation(
        "Who a broadcast of the bot would reach now",
        Role.VIEWER,
        Audience,
        query=AudienceQuery,
        handler=Broadcasts.audience,
    ),
    ("POST", "/v1/broadcasts/audience"): Operation(
        "Who a broadcast of the bot to this audience would reach now",
        Role.VIEWER,
        Audience,
        body=AudienceSpec,
        rules=("a member_status or a plan_id is within a channel; a plan_id names its own",),
        handler=Broadcasts.audience_of,
    ),
    ("GET", "/v1/broadcasts/{broadcast_id:int}"): Operation(
        "A broadcast with its progress",
        Role.VIEWER,
        Broadcast,
        problems=(404,),
        handler=Broadcasts.broadcast,
    ),
    ("POST", "/v1/broadcasts/{broadcast_id:int}/cancel"): Operation(
        "Stop a broadcast: its sends not yet made are dropped",
        Role.EDITOR,
        Broadcast,
        problems=(404, 409, 503),
        handler=Broadcasts.cancel,
    ),
    ("GET", "/v1/stats"): Operation(
        "The funnel, new people, blocks, joins per campaign and revenue over a range of days"
        " in the workspace's zone, with a series per hour or day",
        Role.VIEWER,
        Stats,
        query=StatsQuery,
        handler=Statistics.stats,
        rules=STATS_RULES,
    ),
    ("GET", "/v1/stats.csv"): Operation(
        "The statistics' series as CSV, one line per hour or day",
        Role.VIEWER,
        str,
        query=StatsQuery,
        media_type="text/csv; charset=utf-8",
        handler=Statistics.stats_csv,
        rules=STATS_RULES,
    ),
    ("GET", "/v1/ad-slots"): Operation(
        "What the bots sell", Role.VIEWER, Page[Slot], query=SlotQuery, handler=AdShop.slots
    ),
    ("POST", "/v1/ad-slots"): Operation(
        "Add an ad slot; price in USDT, at most 6 decimals",
        Role.ADMIN,
        Slot,
        status=201,
        body=NewSlot,
        handler=AdShop.add_slot,
        rules=SLOT_RULES,
    ),
    ("PATCH", "/v1/ad-slots/{slot_id:int}"): Operation(
        "Change or deactivate an ad slot",
        Role.ADMIN,
        Slot,
        body=SlotChange,
        handler=AdShop.change_slot,
        rules=SLOT_RULES,
    ),
    ("GET", "/v1/ad-orders"): Operation(
        "Ad orders", Role.VIEWER, Page[AdOrder], query=OrderQuery, handler=AdShop.orders
    ),
    ("GET", "/v1/ad-orders/{order_id:int}"): Operation(
        "An ad order with its claims, credits and events",
        Role.VIEWER,
        OrderDetail,
        handler=AdShop.order,
    ),
    **{
        ("POST", f"/v1/ad-orders/{{order_id:int}}/{step}"): Operation(
            f"{step.capitalize()} an ad order (billing does it)",
            Role.ADMIN,
            OrderStep,
            problems=(409, 422),
            handler=getattr(AdShop, step),
            rules=("the shop's TRON address is set",) if step == "approve" else (),
        )
        for step in ("approve", "reject", "cancel")
    },
}

# Served by every service (shared.web); documented here for the panel's clients.
SERVICE_ROUTES: dict[tuple[str, str], Operation] = {
    ("GET", "/healthz"): Operation("The process answers", None, Health),
    ("GET", "/readyz"): Operation("The database answers and is migrated", None, Ready),
    ("GET", "/metrics"): Operation(
        "Prometheus metrics", None, str, media_type="text/plain; version=0.0.4"
    ),
    ("GET", "/openapi.json"): Operation("This document", None, dict[str, Any]),
}

# The page (panel_api.page): `index.html` for `/` and every other GET outside the API, so that
# a reload keeps the view. Documented, not built from this table: the page's routes come last.
PAGE_ROUTES: dict[tuple[str, str], Operation] = {
    ("GET", "/"): Operation("The panel page", None, str, media_type="text/html"),
    ("GET", "/{path:path}"): Operation(
        "The panel page, for any path outside /v1, /internal, /assets and the service's own"
        " (a reload keeps the view)",
        None,
        str,
        media_type="text/html",
    ),
}

_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")
_REASONS = {
    400: "The body is not JSON, or its length is malformed",
    401: "No valid credentials",
    403: "The role, or the anti-forgery header, does not allow it",
    404: "Nothing by that id, or not any more",
    409: "It conflicts with what exists",
    413: "The body is too large",
    422: "A value is missing, of the wrong type or out of range",
    429: "Too many failures; wait `Retry-After` seconds",
    502: "Telegram refused",
    503: "The database, billing, botedge or Telegram is unavailable; retry shortly",
}


def problems_of(path: str, op: Operation) -> list[int]:
    statuses = {503, *op.problems}
    if op.least is not None:
        statuses |= {401, 403}
    if op.csrf:
        statuses |= {401, 403}
    if op.body is not None:
        statuses |= {400, 413, 422}
    if op.rules:
        statuses.add(422)
    if op.query is not None:
        statuses.add(422)
    if _PARAM.search(path):
        statuses.add(404)
    return sorted(statuses)


def openapi(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every route in `OPERATIONS`, `SERVICE_ROUTES` and
    `PAGE_ROUTES`."""
    everything = {**OPERATIONS, **SERVICE_ROUTES, **PAGE_ROUTES}
    types: list[Any] = [ProblemBody]
    for op in everything.values():
        types += [t for t in (op.answer, op.body) if t is not None and t is not str]
    refs, components = msgspec.json.schema_components(
        types, ref_template="#/components/schemas/{name}"
    )
    schema_of = dict(zip(map(_key, types), refs, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for (method, route), op in everything.items():
        path = _PARAM.sub(r"{\1}", route)
        paths.setdefault(path, {})[method.lower()] = _operation(method, route, op, schema_of)
    return {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": version},
        "paths": paths,
        "components": {
            "schemas": storable_strings(components),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "refreshCookie": {"type": "apiKey", "in": "cookie", "name": COOKIE},
            },
        },
    }


def _key(kind: Any) -> str:
    return repr(kind)


def _operation(method: str, route: str, op: Operation, schema_of: dict[str, Any]) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "integer", "minimum": 0}
            if f"{{{name}:path}}" not in route
            else {"type": "string", "pattern": r"^[a-z][a-z0-9-]*(/[0-9]+)?$"},
        }
        for name in _PARAM.findall(route)
    ]
    if op.query is not None:
        parameters += _query_parameters(op.query)
    if op.csrf:
        parameters.append(
            {
                "name": CSRF_HEADER,
                "in": "header",
                "required": True,
                "schema": {"type": "string", "enum": [CSRF_VALUE]},
            }
        )
    doc: dict[str, Any] = {
        "summary": op.summary,
        "operationId": _operation_id(method, route),
        "parameters": parameters,
        "responses": _responses(route, op, schema_of),
    }
    if op.least is not None:
        doc["security"] = [{"bearer": []}]
        doc["x-least-role"] = op.least.value
    elif op.csrf:
        doc["security"] = [{"refreshCookie": []}, {}]
    else:
        doc["security"] = []
    if op.body is not None:
        doc["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": schema_of[_key(op.body)]}},
        }
    return with_rules(doc, rules_of(op))


CURSOR_RULE = "cursor is one this API gave out for this list and sort"


def rules_of(op: Operation) -> tuple[str, ...]:
    """What an operation refuses with a 422 beyond its schema: its own rules, and for a list
    read page by page, a cursor it did not give out."""
    if op.query is not None and "cursor" in op.query.__struct_fields__:
        return (*op.rules, CURSOR_RULE)
    return op.rules


def _operation_id(method: str, route: str) -> str:
    """`patch_team_member_id` for PATCH /v1/team/{member_id:int}."""
    words = re.findall(r"[a-z0-9]+", _PARAM.sub(r"\1", route).lower())
    return "_".join([method.lower(), *([w for w in words if w != "v1"] or ["page"])])


def _responses(route: str, op: Operation, schema_of: dict[str, Any]) -> dict[str, Any]:
    success = (op.status, op.summary, op.answer, op.media_type)
    return responses(success, problems_of(route, op), _REASONS, schema_of)


def _query_parameters(kind: type[msgspec.Struct]) -> list[dict[str, Any]]:
    parameters = query_parameters(kind)
    for parameter in parameters:
        if parameter["name"] == "sort":
            parameter["description"] = (
                "A field of the items to order by, descending when it starts with `-`;"
                " a cursor follows the sort it was given for"
            )
    return parameters
