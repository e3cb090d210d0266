-- The one-time setup code of a workspace with no owner yet, as its SHA-256 hash.
CREATE TABLE setup_codes (
    -- One row only: one code at a time.
    id         boolean     PRIMARY KEY DEFAULT true CHECK (id),
    code_hash  bytea       NOT NULL CHECK (length(code_hash) = 32),
    expires_at timestamptz NOT NULL
);
