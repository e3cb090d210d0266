-- Campaigns: a named invite link into a channel, made by one of the bots there, and the people
-- who joined through it. panel-api writes `campaigns`; botedge credits `campaign_joins` from
-- `chat_member` updates, in the update's transaction.
CREATE TABLE campaigns (
    id          integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Telegram's own limit on an invite link's name.
    name        text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 32),
    bot_id      integer     NOT NULL REFERENCES bots (id),
    channel_id  integer     NOT NULL REFERENCES channels (id),
    invite_link text        NOT NULL CHECK (invite_link LIKE 'https://t.me/%'),
    created_at  timestamptz NOT NULL,
    CONSTRAINT campaigns_invite_link UNIQUE (invite_link),
    CONSTRAINT campaigns_channel_name UNIQUE (channel_id, name)
);
CREATE INDEX campaigns_bot ON campaigns (bot_id, id);

-- One row per person a campaign brought in: a rejoin is not a second join, and `left_at` is
-- the first leave after it. The foreign key to the campaign is checked at commit, so a popular
-- campaign's row is not share-locked for the whole of every joining update.
CREATE TABLE campaign_joins (
    campaign_id integer     NOT NULL
                REFERENCES campaigns (id) DEFERRABLE INITIALLY DEFERRED,
    person_id   integer     NOT NULL REFERENCES people (id) DEFERRABLE INITIALLY DEFERRED,
    joined_at   timestamptz NOT NULL,
    left_at     timestamptz,
    PRIMARY KEY (campaign_id, person_id),
    CHECK (left_at IS NULL OR left_at >= joined_at)
);
-- A leave finds the person's joins still counted.
CREATE INDEX campaign_joins_staying ON campaign_joins (person_id) WHERE left_at IS NULL;
