-- A broadcast's audience and start: everyone of the bot (as before), or those matching a
-- filter (a channel, and in it a membership status or a plan they paid for; the language the
-- bot writes to them in), or people the owner chose on the Memberships page; sent from a time
-- the owner set, or at once.
ALTER TABLE broadcasts
    ADD COLUMN channel_id    integer REFERENCES channels (id),
    ADD COLUMN plan_id       integer REFERENCES plans (id),
    ADD COLUMN member_status text CHECK (member_status IN ('active', 'grace', 'expired')),
    ADD COLUMN language      text CHECK (language IN ('en', 'fa', 'ru', 'ar')),
    ADD COLUMN people        integer[] CHECK (cardinality(people) BETWEEN 1 AND 2000),
    ADD COLUMN starts_at     timestamptz,
    -- A membership's status and a plan are a channel's.
    ADD CONSTRAINT broadcasts_audience_channel
        CHECK ((member_status IS NULL AND plan_id IS NULL) OR channel_id IS NOT NULL);
CREATE INDEX broadcasts_waiting ON broadcasts (starts_at) WHERE state = 'queued';

-- Whether a person of a bot is in a broadcast's audience: the one test the fan-out queues by
-- and the panel counts by. The language is the one the bot writes to them in, as
-- botedge.words.pick decides it (their choice, else Telegram's when the bot has it, else the
-- bot's default); a test holds the two to the same answer.
CREATE FUNCTION in_audience(person integer, chosen_language text, telegram_language text,
                            default_language text, channel integer, plan integer,
                            member_status text, wanted_language text, people integer[])
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT (channel IS NULL
            OR EXISTS (SELECT FROM memberships m
                        WHERE m.person_id = person AND m.channel_id = channel
                          AND (member_status IS NULL OR m.status = member_status)))
       AND (plan IS NULL
            OR EXISTS (SELECT FROM payments p JOIN invoices i ON i.id = p.invoice_id
                        WHERE p.person_id = person AND p.applied AND i.plan_id = plan))
       AND (wanted_language IS NULL
            OR coalesce(CASE WHEN chosen_language IN ('en', 'fa', 'ru', 'ar')
                             THEN chosen_language END,
                        CASE WHEN lower(split_part(telegram_language, '-', 1))
                                  IN ('en', 'fa', 'ru', 'ar')
                             THEN lower(split_part(telegram_language, '-', 1)) END,
                        CASE WHEN default_language IN ('en', 'fa', 'ru', 'ar')
                             THEN default_language END,
                        'en') = wanted_language)
       AND (people IS NULL OR person = ANY (people))
$$;
