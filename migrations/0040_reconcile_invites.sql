-- Reconciliation tells a payer who has not yet used their invite link from a member who left:
-- when each person was last seen inside a channel, and each person's invites by channel
-- (partial: the event claim's check for an earlier open event keeps its own index).
ALTER TABLE channel_members ADD COLUMN last_inside_at timestamptz;
UPDATE channel_members SET last_inside_at = updated_at WHERE is_member;
CREATE INDEX access_events_grants ON access_events (person_id, channel_id, id)
    WHERE kind = 'grant';
