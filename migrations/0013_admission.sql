-- How payers get into a paid channel, and who may be there without paying.

-- `single_use_link`: each grant sends a link with member_limit 1. `join_request`: one link
-- that asks to join (Telegram forbids member_limit with it), made by the manager bot and kept
-- here; requests from payers are approved, others declined with the pay link.
ALTER TABLE channels
    ADD COLUMN admission text NOT NULL DEFAULT 'single_use_link'
        CHECK (admission IN ('single_use_link', 'join_request')),
    ADD COLUMN join_request_link text;

-- People the owner lets into a paid channel without a membership (staff, partners, members
-- from before Gatehouse). By Telegram id: they need not have talked to any bot.
CREATE TABLE channel_whitelist (
    channel_id       integer     NOT NULL REFERENCES channels (id),
    telegram_user_id bigint      NOT NULL CHECK (telegram_user_id > 0),
    note             text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel_id, telegram_user_id)
);

-- The last single-use link sent to a member for a channel: "send my link again" revokes it
-- before sending a fresh one. botedge writes it with the message that carries the link.
CREATE TABLE access_links (
    channel_id integer     NOT NULL REFERENCES channels (id),
    person_id  integer     NOT NULL REFERENCES people (id),
    link       text        NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (channel_id, person_id)
);

-- The chat's admins and owner by Telegram id, from getChatAdministrators when the bot's rights
-- are checked (and every RIGHTS_CHECK_INTERVAL): never removed as intruders.
ALTER TABLE bot_channels ADD COLUMN admin_ids bigint[] NOT NULL DEFAULT '{}';
