-- Refunding a Stars payment: the owner asks (panel -> billing), billing writes the request,
-- botedge claims it and calls refundStarPayment; Telegram's `refunded_payment` message, which
-- botedge records in `telegram_payments` as kind `refund`, is what billing then applies.
CREATE TABLE star_refund_requests (
    id                         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- One request per payment: asking again changes nothing.
    payment_id                 bigint      NOT NULL UNIQUE REFERENCES payments (id),
    bot_id                     integer     NOT NULL REFERENCES bots (id),
    telegram_user_id           bigint      NOT NULL,
    telegram_payment_charge_id text        NOT NULL,
    requested_by               text,
    created_at                 timestamptz NOT NULL,
    -- Consumer side (botedge), as access_events.
    state                      text        NOT NULL DEFAULT 'pending'
                                           CHECK (state IN ('pending', 'processing', 'done',
                                                            'failed')),
    claim_token                uuid,
    claim_expires_at           timestamptz,
    attempts                   integer     NOT NULL DEFAULT 0,
    available_at               timestamptz NOT NULL DEFAULT now(),
    done_at                    timestamptz,
    last_error                 text
);
CREATE INDEX star_refund_requests_claimable ON star_refund_requests (available_at, id)
    WHERE state IN ('pending', 'processing');

ALTER TABLE telegram_payments DROP CONSTRAINT telegram_payments_kind_check;
ALTER TABLE telegram_payments ADD CONSTRAINT telegram_payments_kind_check
    CHECK (kind IN ('payment', 'refund'));
