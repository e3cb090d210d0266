-- Refunds and chargebacks. Any refund of a payment, whole or part, takes back all the payment
-- bought: each membership it extended goes back to the replay of the payments and grants that
-- survive it, under the memberships' locks. A payment is refunded once: a redelivery (the same
-- key) and a second refund of it write nothing.
CREATE TABLE refunds (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    gateway            text        NOT NULL,
    external_refund_id text        NOT NULL,
    payment_id         bigint      NOT NULL REFERENCES payments (id),
    -- What the gateway says went back, in its minor units (for the owner; any amount reverses
    -- the whole payment).
    amount_minor       numeric     CHECK (amount_minor >= 0),
    currency           text,
    kind               text        NOT NULL CHECK (kind IN ('refund', 'chargeback')),
    received_at        timestamptz NOT NULL,
    CONSTRAINT refunds_gateway_external_id UNIQUE (gateway, external_refund_id),
    CONSTRAINT refunds_one_per_payment UNIQUE (payment_id)
);

-- A refund's change to a membership, and a reconciliation's, are history rows of their own.
ALTER TABLE membership_events ADD COLUMN refund_id bigint REFERENCES refunds (id);
ALTER TABLE membership_events DROP CONSTRAINT membership_events_cause_check;
ALTER TABLE membership_events ADD CONSTRAINT membership_events_cause_check
    CHECK (cause IN ('payment', 'sweep', 'grant', 'trial', 'refund', 'reconcile'));
ALTER TABLE membership_events ADD CONSTRAINT membership_events_refund
    CHECK ((cause = 'refund') = (refund_id IS NOT NULL));

ALTER TABLE gateway_events DROP CONSTRAINT gateway_events_outcome_check;
ALTER TABLE gateway_events ADD CONSTRAINT gateway_events_outcome_check CHECK (outcome IN (
    'applied', 'duplicate', 'not_success', 'ignored', 'orphan', 'amount_mismatch', 'conflict',
    'gateway_mismatch', 'refund_applied', 'refund_duplicate', 'refund_unknown'));
DROP INDEX gateway_events_needing_attention;
CREATE INDEX gateway_events_needing_attention ON gateway_events (received_at)
    WHERE outcome IN ('orphan', 'amount_mismatch', 'conflict', 'gateway_mismatch',
                      'refund_unknown');
