-- When a polled bot last received an update. Telegram numbers the next update at random after a
-- week with none, possibly below the stored offset, where getUpdates would confirm it unseen:
-- a poller whose bot has been quiet that long asks once without an offset.
ALTER TABLE bots ADD COLUMN last_update_at timestamptz;
UPDATE bots SET last_update_at = now() WHERE poll_offset > 0;
