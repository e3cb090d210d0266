-- A sender keeps its bot's queue in memory and reads only what is new, the way PgQ batches
-- events: each row carries the transaction that wrote it, and a read returns the rows whose
-- transaction was not yet visible in the snapshot of the previous read. Ids alone cannot do
-- this: a transaction that took a lower id may commit after one that took a higher id.
ALTER TABLE outbox ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX outbox_pending_xid ON outbox (bot_id, xid) WHERE state = 'pending';
