-- A bulk extension of members (panel-api), one row per person and channel per request: the date
-- each was extended to is fixed the first time the request is made, so a request sent again
-- (a retry, a double click) asks billing for the same date, which billing grants once.
CREATE TABLE bulk_extensions (
    request_key text        NOT NULL CHECK (request_key ~ '^[A-Za-z0-9_-]{8,64}$'),
    person_id   integer     NOT NULL,
    channel_id  integer     NOT NULL,
    days        integer     NOT NULL CHECK (days BETWEEN 1 AND 3650),
    until       timestamptz NOT NULL,
    created_by  bigint      REFERENCES team_members (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (request_key, person_id, channel_id),
    FOREIGN KEY (person_id, channel_id) REFERENCES memberships (person_id, channel_id)
);
