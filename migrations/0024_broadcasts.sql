-- Broadcasts: one message to every person of a bot. panel-api writes a queued broadcast;
-- botedge claims it (fenced like the inbox), fans it out into the outbox in batches keyed on
-- the person, and closes it once nothing of it is pending.
CREATE TABLE broadcasts (
    id           integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bot_id       integer     NOT NULL REFERENCES bots (id),
    -- Telegram HTML as the owner wrote it, or one of the bot's contents.
    text         text        CHECK (char_length(text) BETWEEN 1 AND 4096),
    content_id   integer     REFERENCES contents (id) ON DELETE SET NULL,
    button_text  text        CHECK (char_length(button_text) BETWEEN 1 AND 64),
    button_url   text        CHECK (button_url ~ '^(https?|tg)://'),
    -- The call the fan-out queues, chat_id added per person: made when fanning out begins, so
    -- an edit of the content half-way changes no one's message.
    method       text,
    payload      jsonb,
    state        text        NOT NULL DEFAULT 'queued'
                             CHECK (state IN ('queued', 'fanning_out', 'sending', 'done',
                                              'cancelled')),
    -- The last person id fanned out to: a fan-out cut short resumes after it.
    fanned_to    integer     NOT NULL DEFAULT 0,
    -- Rows queued, and people passed over (blocked the bot, or unreachable).
    recipients   integer     NOT NULL DEFAULT 0,
    skipped      integer     NOT NULL DEFAULT 0,
    -- Counted when it ends: the outbox rows they come from are pruned later.
    sent         integer,
    failed       integer,
    unsent       integer,
    -- Why it ended without sending (its content was removed before it started).
    error        text,
    lock_token   uuid,
    locked_until timestamptz,
    locked_by    text,
    created_by   bigint      REFERENCES team_members (id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz,
    CHECK ((text IS NULL) <> (content_id IS NULL) OR state IN ('done', 'cancelled')),
    CHECK ((button_text IS NULL) = (button_url IS NULL)),
    CHECK ((state IN ('done', 'cancelled')) = (finished_at IS NOT NULL)),
    CHECK ((method IS NULL) = (payload IS NULL))
);
CREATE INDEX broadcasts_open ON broadcasts (id) WHERE state IN ('queued', 'fanning_out', 'sending');
CREATE INDEX broadcasts_bot ON broadcasts (bot_id, id);

-- Which broadcast a send belongs to (no foreign key: a send never locks its broadcast's row).
ALTER TABLE outbox ADD COLUMN broadcast_id integer;
CREATE INDEX outbox_by_broadcast ON outbox (broadcast_id, state) WHERE broadcast_id IS NOT NULL;
-- A cancelled broadcast's sends that had not gone yet.
ALTER TABLE outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sent', 'failed', 'cancelled'));

-- Telegram said the person cannot be written to ("user is deactivated", "chat not found"):
-- broadcasts pass them over until they write to the bot again.
ALTER TABLE bot_people ADD COLUMN unreachable_at timestamptz;
