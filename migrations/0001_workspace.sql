-- The workspace (one per installation) and the people who sign in to its panel.

CREATE TABLE workspace (
    -- One row only: one installation serves one workspace.
    id          boolean     PRIMARY KEY DEFAULT true CHECK (id),
    name        text        NOT NULL,
    time_zone   text        NOT NULL DEFAULT 'UTC',
    language    text        NOT NULL DEFAULT 'en',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE team_members (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Stored lower-cased by the panel; unique so a login names one person.
    email         text        NOT NULL UNIQUE CHECK (email = lower(email) AND email LIKE '%_@_%'),
    display_name  text        NOT NULL DEFAULT '',
    password_hash text        NOT NULL,
    role          text        NOT NULL CHECK (role IN ('owner', 'admin', 'editor', 'viewer')),
    disabled_at   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- At most one owner.
CREATE UNIQUE INDEX team_members_one_owner ON team_members (role) WHERE role = 'owner';
