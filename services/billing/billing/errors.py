"""Billing's errors: one base, a kind per way a request can fail. No HTTP here: the app maps
each kind to a status in one table (`billing.app.STATUS`)."""

from __future__ import annotations

from shared.errors import ServiceError


class BillingError(ServiceError):
    """Something billing refuses or cannot do; `slug` names it in docs/errors.md."""

    slug = "billing-error"


class Malformed(BillingError):
    """The body is not JSON that can be read as written."""

    slug = "malformed-json"


class InvalidBody(BillingError):
    """Well-formed, but a field is missing, of the wrong type or out of range."""

    slug = "invalid-body"


class BadSignature(BillingError):
    """The signature is missing, empty or does not match."""

    slug = "bad-signature"


class StaleTimestamp(BillingError):
    """Signed, but too far from now to be a fresh delivery."""

    slug = "stale-timestamp"


class UnknownGateway(BillingError):
    """No such gateway is switched on."""

    slug = "unknown-gateway"


class UnknownChannel(BillingError):
    """No paid channel with a default plan by that id."""

    slug = "unknown-channel"


class UnknownPlan(BillingError):
    """No plan by that id on sale in that paid channel."""

    slug = "unknown-plan"


class CouponRefused(BillingError):
    """The coupon does not apply: unknown, expired, used up, or not for this plan or person;
    the field code says which."""

    slug = "coupon-refused"


class TrialRefused(BillingError):
    """The person had the channel's free trial, or a membership there, before."""

    slug = "trial-refused"


class CodeRefused(BillingError):
    """An access code that is unknown, off, expired or used up, or used by this person."""

    slug = "code-refused"


class TooManyGuesses(BillingError):
    """Too many wrong access codes from this person lately."""

    slug = "too-many-guesses"


class GatewayNotOffered(BillingError):
    """The gateway is on, but the plan is not sold through it."""

    slug = "gateway-not-offered"


class KeyReused(BillingError):
    """A request key already names an invoice asked for by someone else, or elsewhere."""

    slug = "request-key-reused"


class UnknownMembership(BillingError):
    """The person has no membership in that channel."""

    slug = "not-found"


class UnknownPayment(BillingError):
    """No payment by that id."""

    slug = "not-found"


class NotPayableThere(BillingError):
    """The plan's currency is not one the gateway takes (Stars and a card gateway)."""

    slug = "invalid-values"


class BotedgeRefused(BillingError):
    """botedge refused a question about a channel or a bot (a 4xx): asking again will not
    help until the owner changes something."""

    slug = "botedge-refused"


class BotedgeUnavailable(BillingError):
    """botedge could not be asked (for Telegram's side of a channel): retry."""

    slug = "unavailable"


class DatabaseUnavailable(BillingError):
    """PostgreSQL could not be reached or dropped the connection; retrying later may work."""

    slug = "unavailable"


class StoreError(BillingError):
    """A statement failed for another reason than the database being away: a bug."""

    slug = "internal-error"


class UnknownAdOrder(BillingError):
    """No ad order by that id."""

    slug = "not-found"


class OrderConflict(BillingError):
    """The order's state does not allow this step."""

    slug = "conflict"


class NoShopAddress(BillingError):
    """The workspace has no TRON address to be paid at."""

    slug = "invalid-values"


class RateUnavailable(BillingError):
    """No TRX rate source answered: the order cannot take TRX at a locked rate yet."""

    slug = "rate-unavailable"
