-- Every write made through the panel, in the write's own transaction: who, what, on what,
-- the before and after, when, and the request it came with.
CREATE TABLE audit_log (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    member_id  bigint      REFERENCES team_members (id),
    action     text        NOT NULL,
    target     text        NOT NULL,
    before     jsonb,
    after      jsonb,
    at         timestamptz NOT NULL,
    request_id text
);
CREATE INDEX audit_log_by_member ON audit_log (member_id, id);
CREATE INDEX audit_log_by_action ON audit_log (action, id);
CREATE INDEX audit_log_by_target ON audit_log (target, id);
