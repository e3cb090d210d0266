-- Booking an ad from the bot: a person's step in a multi-step exchange, kept in PostgreSQL so
-- any worker can take the next update, and a key that makes one booking one order.

-- botedge owns it. One row per person and bot: starting over replaces it. A row past
-- `expires_at` is kept (until the prune) because it tells "your request expired" from "you
-- never started one".
CREATE TABLE conversations (
    bot_id     integer     NOT NULL REFERENCES bots (id),
    person_id  integer     NOT NULL REFERENCES people (id),
    step       text        NOT NULL CHECK (step IN ('ad', 'confirm', 'which_order')),
    data       jsonb       NOT NULL DEFAULT '{}',
    expires_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (bot_id, person_id)
);
CREATE INDEX conversations_expired ON conversations (expires_at);

-- The booking an order came from: a confirmation applied twice still makes one order. Rows
-- written any other way get a key of their own.
ALTER TABLE ad_orders
    ADD COLUMN request_key uuid NOT NULL DEFAULT gen_random_uuid(),
    ADD CONSTRAINT ad_orders_request_key UNIQUE (request_key);
