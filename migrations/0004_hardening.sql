-- Hardening: deliveries through the wrong gateway, a stable sweep order, 429 pauses that
-- survive a restart.

-- A delivery through another gateway than its invoice's is recorded and not applied.
ALTER TABLE gateway_events DROP CONSTRAINT gateway_events_outcome_check;
ALTER TABLE gateway_events ADD CONSTRAINT gateway_events_outcome_check CHECK (outcome IN (
    'applied', 'duplicate', 'not_success', 'ignored', 'orphan', 'amount_mismatch', 'conflict',
    'gateway_mismatch'));
DROP INDEX gateway_events_needing_attention;
CREATE INDEX gateway_events_needing_attention ON gateway_events (received_at)
    WHERE outcome IN ('orphan', 'amount_mismatch', 'conflict', 'gateway_mismatch');

-- The sweep reads due memberships in (time, key) order: equal times in one stable order.
DROP INDEX memberships_due;
CREATE INDEX memberships_due ON memberships (next_check_at, person_id, channel_id)
    WHERE next_check_at IS NOT NULL;

-- Telegram's "retry after N seconds" for a bot, kept where every worker (and the next one
-- after a restart) sees it: no call with the bot's token before this time.
ALTER TABLE bots ADD COLUMN paused_until timestamptz;
