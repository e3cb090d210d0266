-- Reminders before a membership expires: when, per channel, and one notice per period.

-- Hours before `expires_at` at which a member is reminded (72 and 24 by default).
ALTER TABLE channels ADD COLUMN reminder_hours integer[] NOT NULL DEFAULT '{72,24}'
    CHECK (cardinality(reminder_hours) <= 10
           AND 0 < ALL (reminder_hours) AND 8760 >= ALL (reminder_hours));

-- An expiry notice is an access event with no membership event behind it: its unique
-- `notice_key` (person:channel:expires_at:hours) is what sends it once per period, however
-- many sweeps find it due. Every other event keeps its membership event; exactly one of the
-- two is set.
ALTER TABLE access_events DROP CONSTRAINT access_events_kind_check;
ALTER TABLE access_events ADD CONSTRAINT access_events_kind_check
    CHECK (kind IN ('grant', 'reminder', 'revoke', 'expiry_notice'));
ALTER TABLE access_events ALTER COLUMN membership_event_id DROP NOT NULL;
ALTER TABLE access_events
    ADD COLUMN notice_key   text,
    ADD COLUMN notice_hours integer CHECK (notice_hours > 0),
    ADD CONSTRAINT access_events_notice_key UNIQUE (notice_key),
    ADD CONSTRAINT access_events_one_cause
        CHECK ((membership_event_id IS NULL) <> (notice_key IS NULL)),
    ADD CONSTRAINT access_events_notice
        CHECK ((kind = 'expiry_notice') = (notice_key IS NOT NULL)
               AND (notice_key IS NULL) = (notice_hours IS NULL));
