-- The bot edge: bots, the inbox of Telegram updates, the outbox of Bot API calls, leases.

CREATE TABLE bots (
    id                integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Telegram's id of the bot (the number before the colon of its token).
    telegram_bot_id   bigint      NOT NULL UNIQUE,
    username          text        NOT NULL DEFAULT '',
    -- Fernet(BOT_TOKEN_KEY) ciphertexts; the plain token never reaches the database.
    token_encrypted   text        NOT NULL,
    webhook_secret_encrypted text NOT NULL,
    mode              text        NOT NULL DEFAULT 'polling' CHECK (mode IN ('webhook', 'polling')),
    status            text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
    token_invalid_at  timestamptz,
    -- getUpdates offset: the highest update_id committed to the inbox, plus one.
    poll_offset       bigint      NOT NULL DEFAULT 0,
    poll_backoff_until timestamptz,
    last_error        text,
    last_error_at     timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now()
);

-- Per-bot state of a person beside the shared people row.
CREATE TABLE bot_people (
    bot_id        integer     NOT NULL REFERENCES bots (id),
    person_id     integer     NOT NULL REFERENCES people (id),
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    -- Set on a 403 from Telegram or a my_chat_member "kicked"; cleared when they come back.
    blocked_at    timestamptz,
    PRIMARY KEY (bot_id, person_id)
);

-- Telegram updates, one row per (bot, update_id) for ever: a redelivery finds the key and
-- adds nothing, even long after the update was handled.
CREATE TABLE inbox (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bot_id       integer     NOT NULL REFERENCES bots (id),
    update_id    bigint      NOT NULL CHECK (update_id > 0),
    -- The person (chat) whose updates must run one at a time, in order.
    chat_key     bigint      NOT NULL,
    kind         text        NOT NULL,
    payload      jsonb       NOT NULL,
    state        text        NOT NULL DEFAULT 'waiting'
                             CHECK (state IN ('waiting', 'processing', 'done', 'dead')),
    attempt      integer     NOT NULL DEFAULT 0,
    available_at timestamptz NOT NULL DEFAULT now(),
    -- The claim's fencing token and lease; finishing compares both.
    lock_token   uuid,
    locked_until timestamptz,
    -- Which worker process holds the claim (host:pid:run), for operators.
    locked_by    text,
    received_at  timestamptz NOT NULL DEFAULT now(),
    done_at      timestamptz,
    last_error   text,
    CONSTRAINT inbox_bot_update UNIQUE (bot_id, update_id),
    CHECK ((state = 'processing') = (lock_token IS NOT NULL AND locked_until IS NOT NULL))
);
-- The claim walks waiting rows oldest first ...
CREATE INDEX inbox_waiting ON inbox (id) WHERE state = 'waiting';
-- ... and asks, per row, whether the person has an earlier unfinished one.
CREATE INDEX inbox_unfinished_by_person ON inbox (bot_id, chat_key, id)
    WHERE state IN ('waiting', 'processing');
-- The real guard: at most one update in hand per person, whatever the claim query does.
-- Small by construction (one row per update in hand), it also finds claims whose lease ran out.
CREATE UNIQUE INDEX inbox_one_in_hand ON inbox (bot_id, chat_key) WHERE state = 'processing';
CREATE INDEX inbox_dead ON inbox (id) WHERE state = 'dead';
ALTER TABLE inbox SET (autovacuum_vacuum_scale_factor = 0.01, fillfactor = 80);

-- Bot API calls to make: replies written in the update's transaction, broadcasts later.
CREATE TABLE outbox (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bot_id              integer     NOT NULL REFERENCES bots (id),
    chat_id             bigint      NOT NULL,
    method              text        NOT NULL,
    payload             jsonb       NOT NULL,
    -- 0 replies, 1 broadcasts: lower goes first.
    priority            smallint    NOT NULL DEFAULT 0 CHECK (priority IN (0, 1)),
    -- What produced it ('inbox:<id>:<n>', 'broadcast:<id>:<person>'): the same message
    -- cannot be queued twice.
    dedupe_key          text        NOT NULL UNIQUE,
    state               text        NOT NULL DEFAULT 'pending'
                                    CHECK (state IN ('pending', 'sent', 'failed')),
    attempts            integer     NOT NULL DEFAULT 0,
    available_at        timestamptz NOT NULL DEFAULT now(),
    telegram_message_id bigint,
    error               text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    sent_at             timestamptz
);
CREATE INDEX outbox_pending ON outbox (bot_id, priority, id) WHERE state = 'pending';
ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0.01, fillfactor = 80);

-- Named leases ('send:<bot>', 'poll:<bot>'): one holder at a time, taken over once expired.
CREATE TABLE leases (
    name        text        PRIMARY KEY,
    holder      text        NOT NULL,
    -- Grows on every change of holder: a fencing token for whoever needs one.
    term        bigint      NOT NULL,
    expires_at  timestamptz NOT NULL,
    acquired_at timestamptz NOT NULL
);
