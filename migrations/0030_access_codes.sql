-- Access codes: free days of a channel for whoever sends the code to the bot, up to a number
-- of people and until an expiry. Codes are 10 to 32 symbols of RFC 4648's base32 alphabet
-- (A-Z, 2-7), matched whatever the case. A person uses a code once: the key of
-- `access_code_uses`; the total is a count taken under the code row's lock.
CREATE TABLE access_codes (
    id         integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    code       text        NOT NULL UNIQUE CHECK (code ~ '^[A-Z2-7]{10,32}$'),
    channel_id integer     NOT NULL REFERENCES channels (id),
    days       integer     NOT NULL CHECK (days BETWEEN 1 AND 3660),
    max_uses   integer     NOT NULL DEFAULT 1 CHECK (max_uses BETWEEN 1 AND 100000),
    expires_at timestamptz,
    -- The owner's word for whom it was made.
    label      text        CHECK (char_length(label) <= 100),
    active     boolean     NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE INDEX access_codes_by_channel ON access_codes (channel_id, id);

CREATE TABLE access_code_uses (
    -- For the panel's list of uses.
    id        bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    code_id   integer     NOT NULL REFERENCES access_codes (id),
    person_id integer     NOT NULL REFERENCES people (id),
    used_at   timestamptz NOT NULL,
    PRIMARY KEY (code_id, person_id)
);

-- Codes sent that were not good ones, per Telegram user: five in ten minutes and the next
-- waits. A user's rows older than that go when they miss again.
CREATE TABLE access_code_misses (
    telegram_user_id bigint      NOT NULL,
    at               timestamptz NOT NULL
);
CREATE INDEX access_code_misses_by_user ON access_code_misses (telegram_user_id, at);
