-- People, channels and their plans; invoices, payments, memberships and their histories;
-- the access events botedge consumes.
--
-- people.id and channels.id are int4 on purpose: a membership's lock is
-- pg_advisory_xact_lock(person_id, channel_id), the two-int4 form, and the ids go in as they are.

CREATE TABLE people (
    id               integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    telegram_user_id bigint      NOT NULL UNIQUE CHECK (telegram_user_id > 0),
    username         text,
    first_name       text        NOT NULL DEFAULT '',
    last_name        text,
    language_code    text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE channels (
    id               integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    telegram_chat_id bigint      NOT NULL UNIQUE,
    title            text        NOT NULL DEFAULT '',
    username         text,
    is_gate          boolean     NOT NULL DEFAULT false,
    is_paid          boolean     NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- What a paid channel sells. One default plan per channel for now; more plans, bundles,
-- trials and coupons add rows and columns here without changing invoices or memberships.
CREATE TABLE plans (
    id          integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id  integer     NOT NULL REFERENCES channels (id),
    name        text        NOT NULL DEFAULT 'default',
    price_minor bigint      NOT NULL CHECK (price_minor > 0),
    currency    text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    period_days integer     NOT NULL CHECK (period_days > 0),
    grace_days  integer     NOT NULL CHECK (grace_days >= 0),
    is_default  boolean     NOT NULL DEFAULT false,
    active      boolean     NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX plans_one_default_per_channel ON plans (channel_id) WHERE is_default;

CREATE TABLE invoices (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_reference text        NOT NULL UNIQUE,
    person_id       integer     NOT NULL REFERENCES people (id),
    channel_id      integer     NOT NULL REFERENCES channels (id),
    plan_id         integer     NOT NULL REFERENCES plans (id),
    -- Price and period copied from the plan: editing a plan does not change what was offered.
    amount_minor    bigint      NOT NULL CHECK (amount_minor > 0),
    currency        text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    period_days     integer     NOT NULL CHECK (period_days > 0),
    grace_days      integer     NOT NULL CHECK (grace_days >= 0),
    gateway         text        NOT NULL,
    status          text        NOT NULL DEFAULT 'open'
                                CHECK (status IN ('open', 'paid', 'expired', 'cancelled')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    paid_at         timestamptz
);
-- The sweep expires open invoices past their 24 hours.
CREATE INDEX invoices_open_by_expiry ON invoices (expires_at) WHERE status = 'open';

-- Money received. The key (gateway, external_payment_id) is what makes a redelivery a no-op.
CREATE TABLE payments (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    gateway             text        NOT NULL,
    external_payment_id text        NOT NULL,
    invoice_id          bigint      NOT NULL REFERENCES invoices (id),
    person_id           integer     NOT NULL REFERENCES people (id),
    channel_id          integer     NOT NULL REFERENCES channels (id),
    -- Exact minor units as delivered; whole for any amount the currency can express.
    amount_minor        numeric     NOT NULL CHECK (amount_minor >= 0),
    currency            text        NOT NULL,
    paid_at             timestamptz NOT NULL,
    -- False when the amount or currency did not match the invoice: kept, not applied.
    applied             boolean     NOT NULL,
    -- Why the owner should look: 'amount_mismatch', 'invoice_already_paid', ...
    flag                text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT payments_gateway_external_id UNIQUE (gateway, external_payment_id)
);
CREATE INDEX payments_by_invoice ON payments (invoice_id);
CREATE INDEX payments_flagged ON payments (created_at) WHERE flag IS NOT NULL;

CREATE TABLE memberships (
    person_id     integer     NOT NULL REFERENCES people (id),
    channel_id    integer     NOT NULL REFERENCES channels (id),
    status        text        NOT NULL CHECK (status IN ('active', 'grace', 'expired')),
    expires_at    timestamptz NOT NULL,
    grace_days    integer     NOT NULL CHECK (grace_days >= 0),
    -- When the sweep next has a decision to make: expires_at while active, the end of grace
    -- while in grace, NULL once expired. Kept by the same statements that change status.
    next_check_at timestamptz,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (person_id, channel_id),
    CHECK ((status = 'expired') = (next_check_at IS NULL))
);
-- The sweep's way in: only memberships with a decision ahead, oldest first.
CREATE INDEX memberships_due ON memberships (next_check_at) WHERE next_check_at IS NOT NULL;

-- Append-only history, in the order changes were made (id order under the membership lock).
CREATE TABLE membership_events (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    person_id      integer     NOT NULL,
    channel_id     integer     NOT NULL,
    from_status    text        CHECK (from_status IN ('active', 'grace', 'expired')),
    to_status      text        NOT NULL CHECK (to_status IN ('active', 'grace', 'expired')),
    old_expires_at timestamptz,
    new_expires_at timestamptz NOT NULL,
    cause          text        NOT NULL CHECK (cause IN ('payment', 'sweep')),
    payment_id     bigint      REFERENCES payments (id),
    paid_at        timestamptz,
    period_days    integer,
    at             timestamptz NOT NULL,
    FOREIGN KEY (person_id, channel_id) REFERENCES memberships (person_id, channel_id),
    CHECK ((cause = 'payment') = (payment_id IS NOT NULL AND paid_at IS NOT NULL
                                  AND period_days IS NOT NULL))
);
CREATE INDEX membership_events_history ON membership_events (person_id, channel_id, id);
-- A payment extends a membership at most once.
CREATE UNIQUE INDEX membership_events_one_per_payment ON membership_events (payment_id)
    WHERE payment_id IS NOT NULL;

-- Every authentic delivery, as received, with what came of it. Append-only.
CREATE TABLE gateway_events (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    gateway             text        NOT NULL,
    event_type          text        NOT NULL,
    order_reference     text,
    external_payment_id text,
    outcome             text        NOT NULL CHECK (outcome IN (
                            'applied', 'duplicate', 'not_success', 'ignored', 'orphan',
                            'amount_mismatch', 'conflict')),
    payment_id          bigint      REFERENCES payments (id),
    detail              text,
    payload             jsonb       NOT NULL,
    received_at         timestamptz NOT NULL
);
CREATE INDEX gateway_events_by_payment_key ON gateway_events (gateway, external_payment_id);
CREATE INDEX gateway_events_needing_attention ON gateway_events (received_at)
    WHERE outcome IN ('orphan', 'amount_mismatch', 'conflict');

-- The queue botedge consumes: what to do in Telegram because a membership changed.
-- Written in the transaction that made the change; see docs/contracts.md.
CREATE TABLE access_events (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind                text        NOT NULL CHECK (kind IN ('grant', 'reminder', 'revoke')),
    person_id           integer     NOT NULL REFERENCES people (id),
    channel_id          integer     NOT NULL REFERENCES channels (id),
    membership_event_id bigint      NOT NULL UNIQUE REFERENCES membership_events (id),
    expires_at          timestamptz NOT NULL,
    created_at          timestamptz NOT NULL,
    -- Consumer side (botedge): claimed with FOR UPDATE SKIP LOCKED, fenced by claim_token.
    state               text        NOT NULL DEFAULT 'pending'
                                    CHECK (state IN ('pending', 'processing', 'done', 'failed')),
    claim_token         uuid,
    claim_expires_at    timestamptz,
    attempts            integer     NOT NULL DEFAULT 0,
    available_at        timestamptz NOT NULL DEFAULT now(),
    done_at             timestamptz,
    last_error          text
);
CREATE INDEX access_events_claimable ON access_events (available_at, id)
    WHERE state IN ('pending', 'processing');
