-- The ad shop's orders and their payment in USDT (TRC-20) or TRX, verified on TRON from a
-- transaction hash. No private key is held anywhere: money can be seen arriving, never sent.

-- Where advertisers pay; panel-api writes it (the owner), billing copies it into each order at
-- approval.
ALTER TABLE workspace ADD COLUMN tron_address text
    CHECK (tron_address ~ '^T[1-9A-HJ-NP-Za-km-z]{33}$');

-- What a bot sells; panel-api writes them. Prices in USDT micros (6 decimals).
CREATE TABLE ad_slots (
    id           integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bot_id       integer     NOT NULL REFERENCES bots (id),
    kind         text        NOT NULL CHECK (kind IN ('pinned_post', 'broadcast', 'button')),
    title        text        NOT NULL,
    price_micros bigint      NOT NULL CHECK (price_micros > 0),
    accepts_usdt boolean     NOT NULL DEFAULT true,
    accepts_trx  boolean     NOT NULL DEFAULT false,
    active       boolean     NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (accepts_usdt OR accepts_trx)
);

-- botedge inserts `requested` with the ad; billing writes the rest.
CREATE TABLE ad_orders (
    id              integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slot_id         integer     NOT NULL REFERENCES ad_slots (id),
    person_id       integer     NOT NULL REFERENCES people (id),
    ad              jsonb       NOT NULL,
    -- Copied from the slot when requested: what the advertiser agreed to.
    price_micros    bigint      NOT NULL CHECK (price_micros > 0),
    accepts_usdt    boolean     NOT NULL,
    accepts_trx     boolean     NOT NULL,
    status          text        NOT NULL DEFAULT 'requested' CHECK (status IN (
                        'requested', 'approved', 'part_paid', 'paid', 'rejected', 'cancelled',
                        'expired')),
    approved_at     timestamptz,
    pay_to          text,
    -- USDT per TRX, exact, locked at approval when TRX is accepted.
    trx_rate        numeric,
    trx_rate_source text,
    trx_rate_at     timestamptz,
    paid_micros     bigint      NOT NULL DEFAULT 0 CHECK (paid_micros >= 0),
    due_at          timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (status IN ('requested', 'rejected', 'cancelled')
           OR (approved_at IS NOT NULL AND pay_to IS NOT NULL)),
    CHECK (NOT accepts_trx OR status IN ('requested', 'rejected', 'cancelled')
           OR trx_rate IS NOT NULL)
);
CREATE INDEX ad_orders_due ON ad_orders (due_at) WHERE status IN ('approved', 'part_paid');

-- A transaction hash sent for an order; botedge inserts it. The hash pays one order once.
CREATE TABLE tron_claims (
    id                integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx_hash           text        NOT NULL UNIQUE CHECK (tx_hash ~ '^[0-9a-f]{64}$'),
    order_id          integer     NOT NULL REFERENCES ad_orders (id),
    submitted_at      timestamptz NOT NULL DEFAULT now(),
    state             text        NOT NULL DEFAULT 'pending' CHECK (state IN (
                          'pending', 'processing', 'credited', 'rejected')),
    reason            text,
    -- Summed time TronGrid answered "not found"; 15 minutes of it refuses the hash.
    not_found_seconds double precision NOT NULL DEFAULT 0,
    last_checked_at   timestamptz,
    next_check_at     timestamptz NOT NULL DEFAULT now(),
    claim_token       uuid,
    claim_expires_at  timestamptz,
    attempts          integer     NOT NULL DEFAULT 0
);
CREATE INDEX tron_claims_due ON tron_claims (next_check_at) WHERE state IN ('pending', 'processing');

-- One per credited claim.
CREATE TABLE ad_credits (
    id          integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    claim_id    integer     NOT NULL UNIQUE REFERENCES tron_claims (id),
    order_id    integer     NOT NULL REFERENCES ad_orders (id),
    coin        text        NOT NULL CHECK (coin IN ('usdt', 'trx')),
    -- In the coin's base units: USDT micros, or sun.
    amount      numeric     NOT NULL CHECK (amount > 0),
    micros      bigint      NOT NULL CHECK (micros >= 0),
    sender      text        NOT NULL,
    block_time  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- billing -> botedge: what the advertiser is told. Consumed as access_events are.
CREATE TABLE ad_order_events (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id         integer     NOT NULL REFERENCES ad_orders (id),
    kind             text        NOT NULL CHECK (kind IN (
                         'approved', 'credited', 'part_paid', 'paid', 'claim_rejected',
                         'reminder', 'expired')),
    detail           jsonb       NOT NULL DEFAULT '{}',
    -- What caused it ('claim:<id>', 'reminder:24h', ...): one event per cause.
    cause            text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    state            text        NOT NULL DEFAULT 'pending'
                                 CHECK (state IN ('pending', 'processing', 'done', 'failed')),
    claim_token      uuid,
    claim_expires_at timestamptz,
    attempts         integer     NOT NULL DEFAULT 0,
    available_at     timestamptz NOT NULL DEFAULT now(),
    done_at          timestamptz,
    last_error       text,
    CONSTRAINT ad_order_events_cause UNIQUE (order_id, kind, cause)
);
CREATE INDEX ad_order_events_claimable ON ad_order_events (available_at, id)
    WHERE state IN ('pending', 'processing');
