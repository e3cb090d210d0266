-- lock_seed --
-- Two seeders started at once must not both decide the database is empty.
SELECT pg_advisory_xact_lock(hashtextextended('seed:workspace', 0));

-- any_team_member --
SELECT 1 FROM team_members LIMIT 1;

-- insert_workspace --
INSERT INTO workspace (name) VALUES (%(name)s) ON CONFLICT (id) DO NOTHING;

-- insert_owner --
INSERT INTO team_members (email, display_name, password_hash, role)
VALUES (%(email)s, 'Owner', %(password_hash)s, 'owner')
ON CONFLICT (email) DO NOTHING;

-- member_by_email --
SELECT id, email, role, password_hash, disabled_at FROM team_members WHERE email = %(email)s;

-- member_by_id --
SELECT id, email, role, disabled_at FROM team_members WHERE id = %(id)s;

-- insert_demo_channel --
-- A paid channel with its default plan, so the demo can sell something.
WITH channel AS (
    INSERT INTO channels (telegram_chat_id, title, username, is_paid)
    VALUES (-1001234567890, 'Demo paid channel', 'gatehouse_demo', true)
    ON CONFLICT (telegram_chat_id) DO NOTHING
    RETURNING id
)
INSERT INTO plans (channel_id, name, price_minor, currency, period_days, grace_days, is_default)
SELECT id, 'Monthly', 500, 'USD', 30, 3, true FROM channel;
