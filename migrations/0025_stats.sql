-- Statistics: append-only events written in the transaction of what they count, and an hourly
-- roll-up per bot in the workspace's time zone.
--
-- No foreign keys: an event never share-locks the content, campaign or person it names, so a
-- popular content's row does not pile up lockers (and multixacts) under load.
CREATE TABLE stat_events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('start', 'gate_shown', 'gate_passed',
                                                     'content_delivered', 'blocked',
                                                     'campaign_join', 'campaign_leave',
                                                     'payment')),
    bot_id      integer,
    person_id   integer,
    content_id  integer,
    campaign_id integer,
    -- A payment's amount in minor units and its currency.
    amount      bigint,
    currency    text,
    CHECK ((kind = 'payment') = (currency IS NOT NULL AND amount IS NOT NULL))
);
CREATE INDEX stat_events_at ON stat_events (at);

-- Closed hours, counted once by the roll-up (one worker, under the lease `stats-rollup`).
-- An hour starts where `date_trunc('hour', at, zone)` says: on the half hour in Asia/Tehran.
-- "None" is 0 (a bot, a content, a campaign) or '' (a currency): the key holds no NULL. Each
-- hour has its counts per content and campaign, and its totals per bot, kind and currency
-- under content and campaign -1, so a series over everything reads one row per bot and kind
-- an hour, not one per content.
CREATE TABLE stat_hours (
    hour        timestamptz NOT NULL,
    bot_id      integer     NOT NULL,
    kind        text        NOT NULL,
    content_id  integer     NOT NULL,
    campaign_id integer     NOT NULL,
    currency    text        NOT NULL,
    events      bigint      NOT NULL,
    amount      bigint      NOT NULL,
    PRIMARY KEY (hour, bot_id, kind, content_id, campaign_id, currency)
);

CREATE INDEX stat_hours_totals ON stat_hours (hour) INCLUDE (bot_id, kind, currency, events, amount)
    WHERE content_id = -1;
CREATE INDEX stat_hours_by_content ON stat_hours (content_id, hour) WHERE content_id > 0;
CREATE INDEX stat_hours_by_campaign ON stat_hours (campaign_id, hour) WHERE campaign_id > 0;

-- How far the roll-up has gone, in which zone. A zone change starts it over.
CREATE TABLE stat_rollup (
    one        boolean     PRIMARY KEY DEFAULT true CHECK (one),
    zone       text        NOT NULL,
    done_until timestamptz NOT NULL
);

-- New people per hour come from when each bot first met them.
CREATE INDEX bot_people_first_seen ON bot_people (first_seen_at);
