-- A channel's plans as its owner sells them: each with a name, the gateways it may be paid
-- through (NULL: every gateway billing has on), on sale or not, and its place in the bot's list.
-- The kind is `regular` until trials and bundles come.
ALTER TABLE plans
    ADD COLUMN kind       text        NOT NULL DEFAULT 'regular'
                                      CHECK (kind IN ('regular', 'trial', 'bundle')),
    ADD COLUMN gateways   text[]      CHECK (cardinality(gateways) BETWEEN 1 AND 16),
    ADD COLUMN position   integer     NOT NULL DEFAULT 0 CHECK (position BETWEEN 0 AND 999),
    ADD COLUMN updated_at timestamptz;

-- A new price used to retire the default plan and leave it marked on sale; nothing offered it.
UPDATE plans SET active = false WHERE NOT is_default AND active;
UPDATE plans SET name = 'Monthly' WHERE name = 'default' AND period_days = 30;
UPDATE plans SET name = period_days || ' days' WHERE name = 'default';

ALTER TABLE plans
    ADD CONSTRAINT plans_name CHECK (char_length(name) BETWEEN 1 AND 64),
    -- What the bot offers when nothing else is asked for is on sale.
    ADD CONSTRAINT plans_default_on_sale CHECK (active OR NOT is_default);

-- Two plans on sale in one channel never share a name: the bot's buttons tell them apart.
CREATE UNIQUE INDEX plans_name_on_sale ON plans (channel_id, lower(name)) WHERE active;
