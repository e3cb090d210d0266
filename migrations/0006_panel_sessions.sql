-- Refresh tokens: stored only as SHA-256 hashes, rotated on every use, in families. A rotated
-- token presented again after its grace window revokes its whole family (it was stolen, or
-- its holder is confused: either way nobody keeps that session).
CREATE TABLE refresh_tokens (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    family       uuid        NOT NULL,
    member_id    bigint      NOT NULL REFERENCES team_members (id),
    token_hash   bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    rotated_at   timestamptz,
    successor_id bigint      REFERENCES refresh_tokens (id),
    -- The pair handed out at rotation, sealed, kept only through the grace window so a second
    -- tab presenting the same token gets the same pair.
    successor_sealed text,
    revoked_at   timestamptz,
    CHECK ((rotated_at IS NULL) = (successor_id IS NULL))
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family);
CREATE INDEX refresh_tokens_sealed ON refresh_tokens (rotated_at)
    WHERE successor_sealed IS NOT NULL;
