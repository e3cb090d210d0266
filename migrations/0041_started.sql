-- Whom a broadcast may reach: a person who started the bot (a private chat with it), not one
-- it only saw join a channel or write in a group, whom Telegram refuses to message. Existing
-- rows count as started: the broadcasts already sent to them marked the refused ones
-- unreachable.
ALTER TABLE bot_people ADD COLUMN started_at timestamptz;
UPDATE bot_people SET started_at = first_seen_at;
