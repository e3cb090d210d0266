-- Free trials: a plan of kind `trial` costs nothing and runs for its own length. A person
-- takes a channel's trial once: the primary key of `trials` is that rule. The membership event
-- of a trial has its own cause and, like a grant, the date it runs to.
ALTER TABLE plans DROP CONSTRAINT plans_price_minor_check;
ALTER TABLE plans
    ADD CONSTRAINT plans_price CHECK (CASE WHEN kind = 'trial' THEN price_minor = 0
                                           ELSE price_minor > 0 END),
    ADD CONSTRAINT plans_trial_not_default CHECK (kind <> 'trial' OR NOT is_default);
-- The bot offers one trial per channel.
CREATE UNIQUE INDEX plans_one_trial_on_sale ON plans (channel_id) WHERE kind = 'trial' AND active;

CREATE TABLE trials (
    person_id  integer     NOT NULL REFERENCES people (id),
    channel_id integer     NOT NULL REFERENCES channels (id),
    plan_id    integer     NOT NULL REFERENCES plans (id),
    taken_at   timestamptz NOT NULL,
    PRIMARY KEY (person_id, channel_id)
);
CREATE INDEX trials_by_plan ON trials (plan_id);

ALTER TABLE membership_events DROP CONSTRAINT membership_events_cause_check;
ALTER TABLE membership_events ADD CONSTRAINT membership_events_cause_check
    CHECK (cause IN ('payment', 'sweep', 'grant', 'trial'));
ALTER TABLE membership_events DROP CONSTRAINT membership_events_grant;
ALTER TABLE membership_events ADD CONSTRAINT membership_events_grant
    CHECK ((cause IN ('grant', 'trial')) = (until IS NOT NULL AND reason IS NOT NULL));
