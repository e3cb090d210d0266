-- The forced-join gate: content behind sponsor channels, each bot's standing in the channels
-- it works with, and the members seen there.

-- The bot that acts for a paid channel: invite links, removals. `chat_type` as Telegram says
-- (`channel`, `supergroup`, `group`), written by botedge's channel check.
ALTER TABLE channels ADD COLUMN manager_bot_id integer REFERENCES bots (id);
ALTER TABLE channels ADD COLUMN chat_type text;

-- A bot's own status and rights in a channel, as Telegram last told them; botedge writes it.
-- `default_gate`: the channel is in the bot's default gate set (panel-api's choice).
CREATE TABLE bot_channels (
    bot_id               integer     NOT NULL REFERENCES bots (id),
    channel_id           integer     NOT NULL REFERENCES channels (id),
    status               text        NOT NULL DEFAULT 'unknown',
    is_admin             boolean     NOT NULL DEFAULT false,
    can_invite_users     boolean     NOT NULL DEFAULT false,
    can_restrict_members boolean     NOT NULL DEFAULT false,
    default_gate         boolean     NOT NULL DEFAULT false,
    -- Where a visitor joins: the channel's public link, or an invite link for a private one.
    join_url             text,
    checked_at           timestamptz,
    last_error           text,
    PRIMARY KEY (bot_id, channel_id)
);
CREATE INDEX bot_channels_default_gate ON bot_channels (bot_id) WHERE default_gate;

-- What a deep link t.me/<bot>?start=<code> opens. panel-api writes it.
CREATE TABLE contents (
    id           integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bot_id       integer     NOT NULL REFERENCES bots (id),
    -- Telegram's deep-link payload: 1-64 of A-Z, a-z, 0-9, _ and -.
    code         text        NOT NULL CHECK (code ~ '^[A-Za-z0-9_-]{1,64}$'),
    kind         text        NOT NULL CHECK (kind IN ('text', 'file', 'post')),
    -- The text of a `text`, the caption of a `file`.
    body         text        NOT NULL DEFAULT '',
    file_kind    text        CHECK (file_kind IN ('photo', 'video', 'document')),
    file_id      text,
    from_chat_id bigint,
    message_id   bigint,
    -- False: the gate is the channels in content_gate_channels, not the bot's default set.
    default_gate boolean     NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT contents_bot_code UNIQUE (bot_id, code),
    CHECK (kind <> 'text' OR body <> ''),
    CHECK ((kind = 'file') = (file_kind IS NOT NULL AND file_id IS NOT NULL)),
    CHECK ((kind = 'post') = (from_chat_id IS NOT NULL AND message_id IS NOT NULL))
);

CREATE TABLE content_gate_channels (
    content_id integer NOT NULL REFERENCES contents (id) ON DELETE CASCADE,
    channel_id integer NOT NULL REFERENCES channels (id),
    PRIMARY KEY (content_id, channel_id)
);

-- Content sent after the gate opened: once per person.
CREATE TABLE content_deliveries (
    content_id   integer     NOT NULL REFERENCES contents (id) ON DELETE CASCADE,
    person_id    integer     NOT NULL REFERENCES people (id),
    delivered_at timestamptz NOT NULL,
    PRIMARY KEY (content_id, person_id)
);

-- The last status seen for a person in a channel, from chat_member updates.
CREATE TABLE channel_members (
    channel_id  integer     NOT NULL REFERENCES channels (id),
    person_id   integer     NOT NULL REFERENCES people (id),
    status      text        NOT NULL CHECK (status IN (
                    'creator', 'administrator', 'member', 'restricted', 'left', 'kicked')),
    is_member   boolean     NOT NULL,
    invite_link text,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (channel_id, person_id)
);
