-- Telegram Stars. botedge records each `successful_payment` (the first payment and every
-- renewal) in the update's transaction; billing claims the row and applies it through the
-- same exactly-once path as a gateway's webhook (gateway `telegram_stars`, key the charge id).
CREATE TABLE telegram_payments (
    id                           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bot_id                       integer     NOT NULL REFERENCES bots (id),
    person_id                    integer     NOT NULL REFERENCES people (id),
    -- 'payment' for now; a refund's message names the same charge.
    kind                         text        NOT NULL DEFAULT 'payment'
                                             CHECK (kind IN ('payment')),
    -- Our order reference, as the invoice carried it.
    invoice_payload              text        NOT NULL,
    currency                     text        NOT NULL,
    total_amount                 bigint      NOT NULL CHECK (total_amount >= 0),
    telegram_payment_charge_id   text        NOT NULL,
    provider_payment_charge_id   text,
    is_recurring                 boolean     NOT NULL DEFAULT false,
    is_first_recurring           boolean     NOT NULL DEFAULT false,
    subscription_expiration_date timestamptz,
    -- The message's date: when Telegram took the Stars.
    paid_at                      timestamptz NOT NULL,
    received_at                  timestamptz NOT NULL,
    -- What billing made of it ('applied', 'duplicate', 'orphan', ...), once consumed.
    outcome                      text,
    -- Consumer side (billing): claimed with FOR UPDATE SKIP LOCKED, fenced by claim_token.
    state                        text        NOT NULL DEFAULT 'pending'
                                             CHECK (state IN ('pending', 'processing', 'done')),
    claim_token                  uuid,
    claim_expires_at             timestamptz,
    attempts                     integer     NOT NULL DEFAULT 0,
    available_at                 timestamptz NOT NULL DEFAULT now(),
    done_at                      timestamptz,
    last_error                   text,
    CONSTRAINT telegram_payments_charge UNIQUE (kind, telegram_payment_charge_id)
);
CREATE INDEX telegram_payments_claimable ON telegram_payments (available_at, id)
    WHERE state IN ('pending', 'processing');

-- A 30-day Stars subscription as Telegram reports it (botedge's record): made by its first
-- payment, its renewal date moved by each renewal, cancelled by the person (through the bot)
-- or by Telegram's `subscription` update. Access itself is the membership's, from billing.
CREATE TABLE star_subscriptions (
    id              integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bot_id          integer     NOT NULL REFERENCES bots (id),
    person_id       integer     NOT NULL REFERENCES people (id),
    invoice_payload text        NOT NULL,
    -- What editUserStarSubscription names the subscription by.
    first_charge_id text        NOT NULL UNIQUE,
    state           text        NOT NULL CHECK (state IN ('active', 'canceled', 'failed')),
    -- The latest payment's subscription_expiration_date: when Telegram charges again.
    renews_at       timestamptz,
    changed_at      timestamptz NOT NULL,
    CONSTRAINT star_subscriptions_one_per_invoice UNIQUE (bot_id, person_id, invoice_payload)
);
CREATE INDEX star_subscriptions_by_payload ON star_subscriptions (invoice_payload);
