-- A worker hands its replies to its own sender without a read only when the sender already
-- holds every older unsent row of the same chats: another worker may have queued one for the
-- person's previous update. The finish statement asks this index which those are.
CREATE INDEX outbox_pending_by_chat ON outbox (bot_id, chat_id, id) WHERE state = 'pending';
