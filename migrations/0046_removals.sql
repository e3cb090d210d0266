-- An owner's removal of a member: the membership ends now (expired, out of the channel), a
-- membership event of its own cause carrying the moment it ended, so replaying the history
-- gives `expires_at = least(expires_at, until)` and an ended status until a later payment or
-- grant. Each removal is asked under a request key (one per person, channel and press), kept
-- on its event: the same request again finds it and removes nobody twice, and a payment made
-- after it is never undone by a retry.
ALTER TABLE membership_events ADD COLUMN request_key text
    CHECK (request_key ~ '^[A-Za-z0-9:_-]{8,120}$');
ALTER TABLE membership_events DROP CONSTRAINT membership_events_cause_check;
ALTER TABLE membership_events ADD CONSTRAINT membership_events_cause_check
    CHECK (cause IN ('payment', 'sweep', 'grant', 'trial', 'refund', 'reconcile', 'removal'));
ALTER TABLE membership_events DROP CONSTRAINT membership_events_grant;
ALTER TABLE membership_events ADD CONSTRAINT membership_events_grant
    CHECK ((cause IN ('grant', 'trial', 'removal')) = (until IS NOT NULL AND reason IS NOT NULL));
ALTER TABLE membership_events ADD CONSTRAINT membership_events_removal
    CHECK ((cause = 'removal') = (request_key IS NOT NULL));
CREATE UNIQUE INDEX membership_events_one_per_removal ON membership_events (request_key)
    WHERE request_key IS NOT NULL;
