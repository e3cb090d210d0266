"""The bot edge's Prometheus metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

WEBHOOK_UPDATES = Counter(
    "botedge_webhook_updates_total",
    "Updates received on webhooks, by what was done with them",
    ["result"],
)
IGNORED_KINDS = Counter(
    "botedge_ignored_updates_total", "Updates of kinds the edge does not act on", ["kind"]
)
INBOX_DEPTH = Gauge("botedge_inbox_depth", "Unfinished updates per bot", ["bot_id"])
INBOX_OLDEST_AGE = Gauge(
    "botedge_inbox_oldest_age_seconds",
    "Age of the oldest unfinished update per bot (grows behind a wedged worker)",
    ["bot_id"],
)
UPDATES_HANDLED = Counter(
    "botedge_updates_handled_total", "Claimed updates by outcome", ["outcome"]
)
INBOX_CLAIMS = Counter(
    "botedge_inbox_claims_total",
    "Claims of the inbox, by whether they found updates (many finding none: wasted wake-ups)",
    ["found"],
)
DEAD_UPDATES = Gauge("botedge_dead_updates", "Updates that ran out of attempts", ["bot_id"])
HANDLING_SECONDS = Histogram(
    "botedge_update_handling_seconds",
    "Time from claim to commit of one update",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
OUTBOX_DEPTH = Gauge("botedge_outbox_depth", "Unsent outbox rows per bot", ["bot_id"])
SENDS = Counter("botedge_sends_total", "Bot API sends by outcome", ["outcome"])
CONTENT_LOOKUPS = Counter(
    "botedge_content_lookups_total",
    "Contents looked up for links and presses, by where they came from",
    ["source"],
)
REPLIES_QUEUED = Counter(
    "botedge_replies_queued_total",
    "Updates' replies committed to the outbox, by how their sender learned of them: handed "
    "to this worker's sender, or a NOTIFY for whichever worker sends for the bot",
    ["via"],
)
LEASE_CHANGES = Counter(
    "botedge_lease_changes_total", "Leases taken over or lost by this process", ["kind", "change"]
)
POLLED_UPDATES = Counter("botedge_polled_updates_total", "Updates received by getUpdates")
SEND_LEASES = Gauge(
    "botedge_send_leases", "Send leases this worker holds, and its share of them", ["of"]
)
BOTS_SERVED = Gauge(
    "botedge_bots_served", "Active bots with a working token this worker contends for"
)
LISTENING = Gauge(
    "botedge_listening",
    "1 while the LISTEN connection is up: wake-ups arrive and contents may be cached",
)
PRE_CHECKOUTS = Counter(
    "botedge_pre_checkouts_total",
    "Stars pre-checkout queries answered at intake: ok, refused, or unanswered (the call failed)",
    ["answer"],
)
PRE_CHECKOUT_SECONDS = Histogram(
    "botedge_pre_checkout_seconds",
    "From a pre-checkout query's arrival to Telegram's acknowledgement of the answer",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
CATALOG_MISSES = Counter(
    "botedge_catalog_misses_total",
    "Texts looked up in a language whose catalog lacks them (sent in English instead)",
    ["language"],
)
