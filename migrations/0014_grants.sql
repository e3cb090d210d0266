-- Access granted by the owner without a payment (members from before Gatehouse, partners):
-- a membership event of its own cause, carrying the date it runs to. Replaying the history
-- applies it as `expires_at = greatest(expires_at, until)`.
ALTER TABLE membership_events
    ADD COLUMN until  timestamptz,
    ADD COLUMN reason text CHECK (length(reason) <= 200);
ALTER TABLE membership_events DROP CONSTRAINT membership_events_cause_check;
ALTER TABLE membership_events ADD CONSTRAINT membership_events_cause_check
    CHECK (cause IN ('payment', 'sweep', 'grant'));
ALTER TABLE membership_events ADD CONSTRAINT membership_events_grant
    CHECK ((cause = 'grant') = (until IS NOT NULL AND reason IS NOT NULL));
