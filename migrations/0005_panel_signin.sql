-- Failed sign-ins, kept in the database so that every panel process throttles alike: by the
-- account named and by the client's address.
CREATE TABLE login_failures (
    id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email   text        NOT NULL,
    address inet        NOT NULL,
    at      timestamptz NOT NULL
);
CREATE INDEX login_failures_by_email ON login_failures (email, at);
CREATE INDEX login_failures_by_address ON login_failures (address, at);
-- Rows older than the window are deleted as new failures come in.
CREATE INDEX login_failures_by_time ON login_failures (at);
