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

-- installation_name --
SELECT name::text AS name FROM installation;

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

-- failures_blocking --
-- For each count that has reached its limit, the oldest failure of it (its `limit`-th newest)
-- is what must age out of the window before the caller may try again. One row per count, at
-- most. A caller with a device cookie of the account is judged by its device's failures
-- alone; strangers by their address, by the account from their address, and by the account
-- from anywhere (a guesser spread over many addresses).
(SELECT 'address' AS key, at FROM login_failures
  WHERE %(device)s::text IS NULL AND address = %(address)s AND device IS NULL
    AND at > %(since)s
  ORDER BY at DESC OFFSET %(address_offset)s LIMIT 1)
UNION ALL
(SELECT 'pair' AS key, at FROM login_failures
  WHERE %(device)s::text IS NULL AND email = %(email)s AND address = %(address)s
    AND device IS NULL AND at > %(since)s
  ORDER BY at DESC OFFSET %(pair_offset)s LIMIT 1)
UNION ALL
(SELECT 'account' AS key, at FROM login_failures
  WHERE %(device)s::text IS NULL AND email = %(email)s AND device IS NULL AND at > %(since)s
  ORDER BY at DESC OFFSET %(account_offset)s LIMIT 1)
UNION ALL
(SELECT 'device' AS key, at FROM login_failures
  WHERE device = %(device)s AND at > %(since)s
  ORDER BY at DESC OFFSET %(device_offset)s LIMIT 1);

-- record_failure --
INSERT INTO login_failures (email, address, device, at)
VALUES (%(email)s, %(address)s, %(device)s, %(now)s);

-- forget_old_failures --
DELETE FROM login_failures WHERE at <= %(since)s;

-- forget_account_failures --
-- A correct password clears the count it was judged by: its device's, or the account's from
-- its address. A stranger's guesses from elsewhere keep counting.
DELETE FROM login_failures
WHERE CASE WHEN %(device)s::text IS NULL
           THEN email = %(email)s AND address = %(address)s AND device IS NULL
           ELSE device = %(device)s END;

-- insert_refresh_token --
INSERT INTO refresh_tokens (family, member_id, token_hash, created_at, expires_at)
VALUES (%(family)s, %(member_id)s, %(token_hash)s, %(now)s, %(expires_at)s)
RETURNING id;

-- refresh_token_for_update --
-- Locked: two tabs refreshing at once take turns, and the second sees the first's rotation.
SELECT t.id, t.family, t.member_id, t.expires_at, t.rotated_at, t.successor_sealed,
       t.revoked_at, m.role, m.email, m.disabled_at
  FROM refresh_tokens t
  JOIN team_members m ON m.id = t.member_id
 WHERE t.token_hash = %(token_hash)s
   FOR UPDATE OF t;

-- mark_rotated --
UPDATE refresh_tokens
   SET rotated_at = %(now)s, successor_id = %(successor_id)s, successor_sealed = %(sealed)s
 WHERE id = %(id)s;

-- revoke_family --
UPDATE refresh_tokens
   SET revoked_at = coalesce(revoked_at, %(now)s), successor_sealed = NULL
 WHERE family = %(family)s;

-- forget_sealed_pairs --
-- Past the grace window a sealed pair is of no use to anyone.
UPDATE refresh_tokens SET successor_sealed = NULL
 WHERE successor_sealed IS NOT NULL AND rotated_at < %(before)s;

-- owner_exists --
SELECT 1 FROM team_members WHERE role = 'owner';

-- save_setup_code --
-- One code at a time: a process started later replaces an earlier one's.
INSERT INTO setup_codes (id, code_hash, expires_at) VALUES (true, %(code_hash)s, %(expires_at)s)
ON CONFLICT (id) DO UPDATE SET code_hash = excluded.code_hash, expires_at = excluded.expires_at;

-- setup_code --
SELECT code_hash, expires_at FROM setup_codes;

-- take_setup_code --
-- Used once: whoever deletes it creates the owner.
DELETE FROM setup_codes WHERE code_hash = %(code_hash)s RETURNING id;

-- insert_setup_owner --
INSERT INTO team_members (email, display_name, password_hash, role)
VALUES (%(email)s, 'Owner', %(password_hash)s, 'owner')
RETURNING id, email, role, password_hash, disabled_at;

-- team_list --
-- The lists' statements carry their filters; `access.Listing` adds the order and the page.
SELECT id, email, display_name, role, disabled_at, created_at
  FROM team_members;

-- member_for_update --
SELECT id, email, display_name, role, disabled_at, created_at
  FROM team_members WHERE id = %(id)s FOR UPDATE;

-- insert_member --
INSERT INTO team_members (email, display_name, password_hash, role)
VALUES (%(email)s, %(display_name)s, %(password_hash)s, %(role)s)
ON CONFLICT (email) DO NOTHING
RETURNING id, email, display_name, role, disabled_at, created_at;

-- update_member --
UPDATE team_members
   SET role = %(role)s, display_name = %(display_name)s, disabled_at = %(disabled_at)s
 WHERE id = %(id)s
RETURNING id, email, display_name, role, disabled_at, created_at;

-- set_password --
UPDATE team_members SET password_hash = %(password_hash)s WHERE id = %(id)s;

-- revoke_member_sessions --
-- A disabled member's refresh tokens stop working at once.
UPDATE refresh_tokens SET revoked_at = coalesce(revoked_at, %(now)s), successor_sealed = NULL
 WHERE member_id = %(id)s;

-- insert_audit --
INSERT INTO audit_log (member_id, action, target, before, after, at, request_id)
VALUES (%(member_id)s, %(action)s, %(target)s, %(before)s, %(after)s, %(now)s, %(request_id)s);

-- audit_list --
-- Each filter applies only when given; `kind` is what an action is done to, the part of its
-- name before the dot ("channels" of "channels.update").
SELECT a.id, a.member_id, m.email AS member_email, a.action, a.target, a.before, a.after,
       a.at, a.request_id
  FROM audit_log a
  LEFT JOIN team_members m ON m.id = a.member_id
 WHERE (%(member_id)s::bigint IS NULL OR a.member_id = %(member_id)s)
   AND (%(action)s::text IS NULL OR a.action = %(action)s)
   AND (%(kind)s::text IS NULL OR split_part(a.action, '.', 1) = %(kind)s)
   AND (%(target)s::text IS NULL OR a.target = %(target)s)
   AND (%(since)s::timestamptz IS NULL OR a.at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR a.at < %(until)s);

-- workspace --
SELECT name, time_zone, language, tron_address, tx_explorer FROM workspace;

-- workspace_for_update --
SELECT name, time_zone, language, tron_address, tx_explorer FROM workspace FOR UPDATE;

-- update_workspace --
UPDATE workspace
   SET time_zone = %(time_zone)s, language = %(language)s, tron_address = %(tron_address)s,
       tx_explorer = %(tx_explorer)s
RETURNING name, time_zone, language, tron_address, tx_explorer;

-- bots_list --
SELECT id, telegram_bot_id, username, mode, status, token_invalid_at, last_error,
       last_error_at, token_encrypted, created_at, removed_at
  FROM bots;

-- dead_updates_list --
-- Dead updates for the owner, with the cursor botedge's own listing (100 at most) lacks.
SELECT id, bot_id, update_id, chat_key, kind, attempt, last_error, received_at, done_at,
       payload
  FROM inbox
 WHERE state = 'dead';

-- people_list --
-- Each bot's visitors.
SELECT bp.bot_id, p.id AS person_id, p.telegram_user_id, p.username, p.first_name,
       p.last_name, bp.first_seen_at, bp.last_seen_at, bp.blocked_at IS NOT NULL AS blocked
  FROM bot_people bp
  JOIN people p ON p.id = bp.person_id
 WHERE (%(bot_id)s::integer IS NULL OR bp.bot_id = %(bot_id)s)
   AND (%(q)s::text IS NULL OR p.telegram_user_id::text = %(q)s
        OR p.username ILIKE %(q_start)s
        OR concat_ws(' ', p.first_name, p.last_name) ILIKE %(q_any)s
        -- A payment's reference: the invoice's, or the gateway's for the payment.
        OR EXISTS (SELECT 1 FROM payments rp JOIN invoices ri ON ri.id = rp.invoice_id
                    WHERE rp.person_id = p.id
                      AND (ri.order_reference = %(q)s OR rp.external_payment_id = %(q)s)));

-- memberships_list --
SELECT m.person_id, p.telegram_user_id, json_build_object('username', p.username, 'first_name', p.first_name,
                         'last_name', p.last_name) AS person, m.channel_id, c.title AS channel_title, m.status,
       m.expires_at, m.grace_days, m.updated_at, ss.state AS stars_renewal,
       ss.renews_at AS stars_renews_at
  FROM memberships m
  JOIN people p ON p.id = m.person_id
  JOIN channels c ON c.id = m.channel_id
  -- The person's latest Stars subscription covering the channel, if any.
  LEFT JOIN LATERAL (
      SELECT s.state, s.renews_at
        FROM star_subscriptions s
        JOIN invoices i ON i.order_reference = s.invoice_payload
       WHERE s.person_id = m.person_id
         AND m.channel_id = ANY (coalesce(i.bundle_channel_ids, ARRAY[i.channel_id]))
       ORDER BY s.id DESC
       LIMIT 1
  ) ss ON true
 WHERE (%(status)s::text IS NULL OR m.status = %(status)s)
   AND (%(channel_id)s::integer IS NULL OR m.channel_id = %(channel_id)s)
   AND (%(person_id)s::integer IS NULL OR m.person_id = %(person_id)s)
   AND (%(q)s::text IS NULL OR p.telegram_user_id::text = %(q)s
        OR p.username ILIKE %(q_start)s
        OR concat_ws(' ', p.first_name, p.last_name) ILIKE %(q_any)s
        -- A payment's reference: the invoice's, or the gateway's for the payment.
        OR EXISTS (SELECT 1 FROM payments rp JOIN invoices ri ON ri.id = rp.invoice_id
                    WHERE rp.person_id = p.id
                      AND (ri.order_reference = %(q)s OR rp.external_payment_id = %(q)s)));

-- membership_history --
SELECT id, from_status, to_status, old_expires_at, new_expires_at, cause, payment_id, paid_at,
       period_days, at
  FROM membership_events
 WHERE person_id = %(person_id)s AND channel_id = %(channel_id)s
 ORDER BY id;

-- person_by_telegram_id --
-- Who a Telegram user is here: our person id (what paths with `person_id` take), their name
-- as Telegram last told a bot, and the bots they have written to.
SELECT p.id AS person_id, p.telegram_user_id,
       json_build_object('username', p.username, 'first_name', p.first_name,
                         'last_name', p.last_name) AS person,
       coalesce(array_agg(bp.bot_id ORDER BY bp.bot_id) FILTER (WHERE bp.bot_id IS NOT NULL),
                '{}') AS bot_ids
  FROM people p
  LEFT JOIN bot_people bp ON bp.person_id = p.id
 WHERE p.telegram_user_id = %(telegram_user_id)s
 GROUP BY p.id;

-- person_of --
SELECT p.id AS person_id, p.telegram_user_id,
       json_build_object('username', p.username, 'first_name', p.first_name,
                         'last_name', p.last_name) AS person
  FROM people p
 WHERE p.id = %(person_id)s;

-- invoices_list --
-- Amounts as text of minor units, as payments' are: exact, one type for both.
SELECT i.id, i.order_reference, p.telegram_user_id, json_build_object('username', p.username, 'first_name', p.first_name,
                         'last_name', p.last_name) AS person,
       i.channel_id,
       i.amount_minor::text AS amount_minor, i.currency, i.gateway, i.status, i.created_at,
       i.expires_at, i.paid_at
  FROM invoices i
  JOIN people p ON p.id = i.person_id
 WHERE %(status)s::text IS NULL OR i.status = %(status)s;

-- payments_list --
-- Filtered by gateway, applied, flag, channel and person when given.
SELECT pay.id, pay.gateway, pay.external_payment_id, i.order_reference, p.telegram_user_id,
       json_build_object('username', p.username, 'first_name', p.first_name,
                         'last_name', p.last_name) AS person,
       pay.channel_id, pay.amount_minor::text AS amount_minor, pay.currency, pay.paid_at,
       pay.applied, pay.flag, pay.created_at, r.kind AS refund, r.received_at AS refunded_at,
       sr.state AS refund_request
  FROM payments pay
  JOIN invoices i ON i.id = pay.invoice_id
  JOIN people p ON p.id = pay.person_id
  LEFT JOIN refunds r ON r.payment_id = pay.id
  LEFT JOIN star_refund_requests sr ON sr.payment_id = pay.id
 WHERE (%(gateway)s::text IS NULL OR pay.gateway = %(gateway)s)
   AND (%(applied)s::boolean IS NULL OR pay.applied = %(applied)s)
   AND (%(flag)s::text IS NULL OR pay.flag = %(flag)s)
   AND (%(channel_id)s::integer IS NULL OR pay.channel_id = %(channel_id)s)
   AND (%(person_id)s::integer IS NULL OR pay.person_id = %(person_id)s)
   AND (%(q)s::text IS NULL OR p.telegram_user_id::text = %(q)s
        OR p.username ILIKE %(q_start)s
        OR concat_ws(' ', p.first_name, p.last_name) ILIKE %(q_any)s
        OR i.order_reference = %(q)s OR pay.external_payment_id = %(q)s);

-- gateway_events_list --
-- What needs the owner: deliveries authentic but not applied as they came, with what the
-- owner compares: the amount paid (the payment kept, if one was), and the amount and gateway
-- the order reference's invoice asks for.
SELECT g.id, g.gateway, g.event_type, g.order_reference, g.external_payment_id, g.outcome,
       g.payment_id, g.detail, g.received_at,
       p.amount_minor::text AS paid_minor, p.currency AS paid_currency,
       i.amount_minor::text AS due_minor, i.currency AS due_currency, i.gateway AS invoice_gateway
  FROM gateway_events g
  LEFT JOIN payments p ON p.id = g.payment_id
  LEFT JOIN invoices i ON i.order_reference = g.order_reference
 WHERE g.outcome IN ('orphan', 'amount_mismatch', 'conflict', 'gateway_mismatch',
                     'refund_unknown')
   AND (%(outcome)s::text IS NULL OR g.outcome = %(outcome)s);

-- channels_list --
-- Channels with their default plan and, per bot, the bot's standing there.
SELECT c.id, c.telegram_chat_id, c.title, c.username, c.chat_type, c.is_paid,
       c.manager_bot_id, c.reminder_hours, c.admission, c.join_request_link,
       (SELECT jsonb_build_object('price_minor', p.price_minor, 'currency', p.currency,
                                  'period_days', p.period_days, 'grace_days', p.grace_days)
          FROM plans p WHERE p.channel_id = c.id AND p.is_default) AS plan,
       coalesce((SELECT jsonb_agg(jsonb_build_object(
                     'bot_id', bc.bot_id, 'status', bc.status, 'is_admin', bc.is_admin,
                     'can_invite_users', bc.can_invite_users,
                     'can_restrict_members', bc.can_restrict_members,
                     'default_gate', bc.default_gate, 'join_url', bc.join_url,
                     'checked_at', bc.checked_at, 'last_error', bc.last_error)
                     ORDER BY bc.bot_id)
                   FROM bot_channels bc WHERE bc.channel_id = c.id), '[]'::jsonb) AS bots,
       -- What buyers open to pay: through the bot that manages the channel.
       CASE WHEN c.is_paid AND mb.username IS NOT NULL
            THEN 'https://t.me/' || mb.username || '?start=pay_' || c.id END AS pay_link
  FROM channels c
  LEFT JOIN bots mb ON mb.id = c.manager_bot_id
 WHERE %(id)s::integer IS NULL OR c.id = %(id)s;

-- channel_for_update --
SELECT id, is_paid, manager_bot_id, reminder_hours, admission
  FROM channels WHERE id = %(id)s FOR UPDATE;

-- update_channel --
-- New reminder times apply from each membership's next sweep visit.
UPDATE channels
   SET is_paid = %(is_paid)s, manager_bot_id = %(manager_bot_id)s,
       reminder_hours = %(reminder_hours)s, admission = %(admission)s
 WHERE id = %(id)s;

-- bot_exists --
SELECT username FROM bots WHERE id = %(id)s;

-- replace_default_plan --
-- The channel page's price makes a new default plan in the old one's place (its name, gateways
-- and place in the list); the old one stays, off sale, for the invoices made from it.
WITH retired AS (
    UPDATE plans SET is_default = false, active = false, updated_at = %(now)s
     WHERE channel_id = %(channel_id)s AND is_default
 RETURNING name, gateways, position
)
INSERT INTO plans (channel_id, name, price_minor, currency, period_days, grace_days, is_default,
                   gateways, position, updated_at)
SELECT %(channel_id)s,
       coalesce(r.name, CASE WHEN %(period_days)s::integer = 30 THEN 'Monthly'
                             ELSE %(period_days)s::integer || ' days' END),
       %(price_minor)s, %(currency)s, %(period_days)s, %(grace_days)s, true, r.gateways,
       coalesce(r.position, 0), %(now)s
  FROM (VALUES (1)) AS one (n)
  LEFT JOIN retired r ON true;

-- clear_default_gate --
UPDATE bot_channels SET default_gate = false WHERE bot_id = %(bot_id)s AND default_gate;

-- set_default_gate --
INSERT INTO bot_channels (bot_id, channel_id, default_gate, join_url)
VALUES (%(bot_id)s, %(channel_id)s, true, %(join_url)s)
ON CONFLICT (bot_id, channel_id) DO UPDATE
   SET default_gate = true, join_url = coalesce(excluded.join_url, bot_channels.join_url);

-- channels_exist --
SELECT count(*) AS n FROM channels WHERE id = ANY(%(ids)s);

-- contents_list --
SELECT ct.id, ct.bot_id, b.username AS bot_username, ct.code, ct.kind, ct.body, ct.file_kind,
       ct.file_id, ct.from_chat_id, ct.message_id, ct.default_gate, ct.created_at,
       ct.updated_at
  FROM contents ct JOIN bots b ON b.id = ct.bot_id
 WHERE %(bot_id)s::integer IS NULL OR ct.bot_id = %(bot_id)s;

-- content_one --
SELECT ct.id, ct.bot_id, b.username AS bot_username, ct.code, ct.kind, ct.body, ct.file_kind,
       ct.file_id, ct.from_chat_id, ct.message_id, ct.default_gate, ct.created_at,
       ct.updated_at
  FROM contents ct JOIN bots b ON b.id = ct.bot_id
 WHERE ct.id = %(id)s;

-- content_gates --
-- Each content's gate as it stands: its own channels, or the bot's default set; flagged where
-- the bot is not an admin (or could not tell).
SELECT ct.id AS content_id, c.id AS channel_id, c.title,
       NOT coalesce(bc.is_admin, false) OR bc.last_error IS NOT NULL AS flagged
  FROM contents ct
  JOIN channels c ON CASE WHEN ct.default_gate
                          THEN c.id IN (SELECT channel_id FROM bot_channels
                                         WHERE bot_id = ct.bot_id AND default_gate)
                          ELSE c.id IN (SELECT channel_id FROM content_gate_channels
                                         WHERE content_id = ct.id) END
  LEFT JOIN bot_channels bc ON bc.bot_id = ct.bot_id AND bc.channel_id = c.id
 WHERE ct.id = ANY(%(ids)s)
 ORDER BY ct.id, c.id;

-- insert_content --
INSERT INTO contents (bot_id, code, kind, body, file_kind, file_id, from_chat_id, message_id,
                      default_gate)
VALUES (%(bot_id)s, %(code)s, %(kind)s, %(body)s, %(file_kind)s, %(file_id)s,
        %(from_chat_id)s, %(message_id)s, %(default_gate)s)
ON CONFLICT (bot_id, code) DO NOTHING
RETURNING id;

-- update_content --
UPDATE contents
   SET code = %(code)s, kind = %(kind)s, body = %(body)s, file_kind = %(file_kind)s,
       file_id = %(file_id)s, from_chat_id = %(from_chat_id)s, message_id = %(message_id)s,
       default_gate = %(default_gate)s, updated_at = now()
 WHERE id = %(id)s;

-- content_for_update --
SELECT id, bot_id, code, kind, body, file_kind, file_id, from_chat_id, message_id,
       default_gate
  FROM contents WHERE id = %(id)s FOR UPDATE;

-- code_taken --
SELECT 1 FROM contents WHERE bot_id = %(bot_id)s AND code = %(code)s AND id <> %(id)s;

-- clear_content_gate --
DELETE FROM content_gate_channels WHERE content_id = %(id)s;

-- add_content_gate --
INSERT INTO content_gate_channels (content_id, channel_id)
SELECT %(id)s, unnest(%(channel_ids)s::integer[])
ON CONFLICT DO NOTHING;

-- delete_content --
DELETE FROM contents WHERE id = %(id)s RETURNING id;

-- access_events_list --
SELECT a.id, a.kind, a.person_id, p.telegram_user_id, json_build_object('username', p.username, 'first_name', p.first_name,
                         'last_name', p.last_name) AS person,
       a.channel_id, c.title AS channel_title,
       a.state, a.attempts, a.last_error, a.created_at, a.available_at, a.done_at
  FROM access_events a
  JOIN people p ON p.id = a.person_id
  JOIN channels c ON c.id = a.channel_id
 WHERE %(state)s::text IS NULL OR a.state = %(state)s;

-- retry_access_event --
-- A failed event goes back in line with fresh attempts; only failed ones.
UPDATE access_events
   SET state = 'pending', attempts = 0, available_at = now(), done_at = NULL
 WHERE id = %(id)s AND state = 'failed'
RETURNING id, kind, state;

-- ad_slots_list --
SELECT id, bot_id, kind, title, price_micros, accepts_usdt, accepts_trx, active, created_at
  FROM ad_slots
 WHERE %(bot_id)s::integer IS NULL OR bot_id = %(bot_id)s;

-- insert_ad_slot --
INSERT INTO ad_slots (bot_id, kind, title, price_micros, accepts_usdt, accepts_trx)
VALUES (%(bot_id)s, %(kind)s, %(title)s, %(price_micros)s, %(accepts_usdt)s, %(accepts_trx)s)
RETURNING id, bot_id, kind, title, price_micros, accepts_usdt, accepts_trx, active, created_at;

-- ad_slot_for_update --
SELECT id, bot_id, kind, title, price_micros, accepts_usdt, accepts_trx, active, created_at
  FROM ad_slots WHERE id = %(id)s FOR UPDATE;

-- update_ad_slot --
UPDATE ad_slots
   SET title = %(title)s, price_micros = %(price_micros)s, accepts_usdt = %(accepts_usdt)s,
       accepts_trx = %(accepts_trx)s, active = %(active)s
 WHERE id = %(id)s
RETURNING id, bot_id, kind, title, price_micros, accepts_usdt, accepts_trx, active, created_at;

-- ad_orders_list --
-- Filtered by id (one order), status, bot and a range of creation times.
SELECT o.id, o.slot_id, s.bot_id, p.telegram_user_id, json_build_object('username', p.username, 'first_name', p.first_name,
                         'last_name', p.last_name) AS person,
       o.ad, o.price_micros, o.accepts_usdt,
       o.accepts_trx, o.status, o.approved_at, o.pay_to, o.trx_rate::text AS trx_rate,
       o.trx_rate_source, o.paid_micros, o.due_at, o.created_at
  FROM ad_orders o
  JOIN ad_slots s ON s.id = o.slot_id
  JOIN people p ON p.id = o.person_id
 WHERE (%(id)s::integer IS NULL OR o.id = %(id)s)
   AND (%(status)s::text IS NULL OR o.status = %(status)s)
   AND (%(bot_id)s::integer IS NULL OR s.bot_id = %(bot_id)s)
   AND (%(since)s::timestamptz IS NULL OR o.created_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR o.created_at < %(until)s);

-- ad_order_claims --
SELECT id, tx_hash, state, reason, submitted_at, not_found_seconds, attempts
  FROM tron_claims WHERE order_id = %(id)s ORDER BY id;

-- ad_order_credits --
SELECT id, claim_id, coin, amount::text AS amount, micros, sender, block_time
  FROM ad_credits WHERE order_id = %(id)s ORDER BY id;

-- ad_order_events_of --
SELECT id, kind, detail, state, created_at FROM ad_order_events
 WHERE order_id = %(id)s ORDER BY id;

-- whitelist_list --
SELECT channel_id, telegram_user_id, note, created_at
  FROM channel_whitelist
 WHERE channel_id = %(channel_id)s;

-- whitelist_add --
INSERT INTO channel_whitelist (channel_id, telegram_user_id, note, created_at)
VALUES (%(channel_id)s, %(telegram_user_id)s, %(note)s, %(now)s)
ON CONFLICT (channel_id, telegram_user_id) DO UPDATE SET note = excluded.note
RETURNING channel_id, telegram_user_id, note, created_at;

-- whitelist_remove --
DELETE FROM channel_whitelist
 WHERE channel_id = %(channel_id)s AND telegram_user_id = %(telegram_user_id)s
RETURNING channel_id, telegram_user_id, note, created_at;

-- whitelist_import --
-- The ones already listed keep their note; RETURNING counts the new ones.
INSERT INTO channel_whitelist (channel_id, telegram_user_id, note, created_at)
SELECT %(channel_id)s, id, %(note)s, %(now)s FROM unnest(%(ids)s::bigint[]) AS id
ON CONFLICT (channel_id, telegram_user_id) DO NOTHING
RETURNING telegram_user_id;

-- dashboard_counts --
-- What the dashboard's tiles show beside what needs the owner; each links to its page.
SELECT (SELECT count(*) FROM memberships WHERE status = 'active') AS members_active,
       (SELECT count(*) FROM memberships WHERE status = 'grace') AS members_grace,
       (SELECT time_zone FROM workspace) AS time_zone;

-- attention_counts --
-- What needs the owner, counted beside the pages that list it (the navigation, the dashboard).
SELECT (SELECT count(*) FROM ad_orders WHERE status = 'requested') AS ad_orders_waiting,
       (SELECT count(*) FROM access_events WHERE state = 'failed') AS access_events_failing,
       (SELECT count(*) FROM inbox WHERE state = 'dead') AS dead_updates,
       (SELECT count(*) FROM bots
         WHERE status <> 'removed'
           AND (token_invalid_at IS NOT NULL OR last_error IS NOT NULL
                OR telegram_failing_since IS NOT NULL)) AS bots_with_problems;

-- dashboard_outages --
-- Bots Telegram has been failing for (their breaker open), oldest outage first.
SELECT id AS bot_id, username, telegram_failing_since AS since
  FROM bots
 WHERE status <> 'removed' AND telegram_failing_since IS NOT NULL
 ORDER BY telegram_failing_since, id;

-- revenue_by_day --
-- Income summed per calendar day of the workspace's time zone and per currency, over the last
-- 30 such days (today included): applied payments, and the ad shop's credited TRON payments
-- by the coin paid (USDT in micros, TRX in sun) on the day of their block.
WITH zone AS (SELECT time_zone AS name FROM workspace),
     first_day AS (SELECT (now() AT TIME ZONE zone.name)::date - 29 AS day FROM zone),
     since AS (SELECT first_day.day::timestamp AT TIME ZONE zone.name AS at FROM zone, first_day),
     income AS (
       SELECT p.paid_at AS at, p.currency, p.amount_minor::numeric AS amount
         FROM payments p, since
        WHERE p.applied AND p.paid_at >= since.at
       UNION ALL
       SELECT c.block_time, upper(c.coin), c.amount
         FROM ad_credits c, since
        WHERE c.block_time >= since.at)
SELECT (income.at AT TIME ZONE zone.name)::date AS day, income.currency,
       sum(income.amount)::text AS amount_minor
  FROM income, zone
 GROUP BY 1, 2
 ORDER BY 1, 2;

-- revenue_totals --
-- The same 30 days' income summed per currency, by the database (exact, in minor units).
WITH zone AS (SELECT time_zone AS name FROM workspace),
     since AS (SELECT ((now() AT TIME ZONE zone.name)::date - 29)::timestamp AT TIME ZONE zone.name
                      AS at FROM zone),
     income AS (
       SELECT p.currency, p.amount_minor::numeric AS amount
         FROM payments p, since
        WHERE p.applied AND p.paid_at >= since.at
       UNION ALL
       SELECT upper(c.coin), c.amount
         FROM ad_credits c, since
        WHERE c.block_time >= since.at)
SELECT currency, sum(amount)::text AS amount_minor
  FROM income
 GROUP BY 1
 ORDER BY 1;

-- members_by_day --
-- Memberships active and in grace at the end of each of the last 30 days of the workspace's
-- zone (today: now), from their history: each event's status holds until the next event.
WITH zone AS (SELECT time_zone AS name FROM workspace),
     days AS (
       SELECT d::date AS day,
              least(now(), ((d + interval '1 day')::timestamp AT TIME ZONE zone.name)) AS at
         FROM zone, generate_series((now() AT TIME ZONE zone.name)::date - 29,
                                    (now() AT TIME ZONE zone.name)::date, interval '1 day') d),
     spans AS (
       SELECT to_status AS status, at AS since,
              lead(at) OVER (PARTITION BY person_id, channel_id ORDER BY id) AS till
         FROM membership_events)
SELECT days.day,
       count(*) FILTER (WHERE spans.status = 'active') AS active,
       count(*) FILTER (WHERE spans.status = 'grace') AS grace
  FROM days
  LEFT JOIN spans ON spans.status <> 'expired' AND spans.since <= days.at
                 AND (spans.till IS NULL OR spans.till > days.at)
 GROUP BY days.day
 ORDER BY days.day;

-- campaigns_list --
-- Each campaign with its counts: who joined through its link, who of them left since, and
-- the difference.
SELECT c.id, c.name, c.bot_id, b.username AS bot_username, c.channel_id,
       ch.title AS channel_title, ch.username AS channel_username, c.invite_link, c.created_at,
       n.joins, n.leaves, n.joins - n.leaves AS net
  FROM campaigns c
  JOIN bots b ON b.id = c.bot_id
  JOIN channels ch ON ch.id = c.channel_id
 CROSS JOIN LATERAL (
       SELECT count(*)::integer AS joins, count(j.left_at)::integer AS leaves
         FROM campaign_joins j
        WHERE j.campaign_id = c.id) n
 WHERE (%(id)s::integer IS NULL OR c.id = %(id)s)
   AND (%(bot_id)s::integer IS NULL OR c.bot_id = %(bot_id)s)
   AND (%(channel_id)s::integer IS NULL OR c.channel_id = %(channel_id)s);

-- campaign_target --
-- What a new campaign names: its bot (active or not) and its channel.
SELECT (SELECT status FROM bots WHERE id = %(bot_id)s) AS bot_status,
       EXISTS (SELECT FROM channels WHERE id = %(channel_id)s) AS channel_found,
       EXISTS (SELECT FROM campaigns
                WHERE channel_id = %(channel_id)s AND name = %(name)s) AS name_taken;

-- insert_campaign --
INSERT INTO campaigns (name, bot_id, channel_id, invite_link, created_at)
VALUES (%(name)s, %(bot_id)s, %(channel_id)s, %(invite_link)s, %(now)s)
ON CONFLICT DO NOTHING
RETURNING id;

-- campaign_days --
-- Joins and leaves per calendar day of the workspace's zone, over the 30 days to `now`.
WITH zone AS (SELECT time_zone AS name FROM workspace),
     days AS (
       SELECT d::date AS day
         FROM zone,
              generate_series((%(now)s::timestamptz AT TIME ZONE zone.name)::date - 29,
                              (%(now)s::timestamptz AT TIME ZONE zone.name)::date,
                              interval '1 day') d),
     moves AS (
       SELECT (j.joined_at AT TIME ZONE zone.name)::date AS day, 1 AS joined, 0 AS went
         FROM campaign_joins j, zone
        WHERE j.campaign_id = %(id)s
       UNION ALL
       SELECT (j.left_at AT TIME ZONE zone.name)::date, 0, 1
         FROM campaign_joins j, zone
        WHERE j.campaign_id = %(id)s AND j.left_at IS NOT NULL)
SELECT days.day, coalesce(sum(m.joined), 0)::integer AS joins,
       coalesce(sum(m.went), 0)::integer AS leaves
  FROM days LEFT JOIN moves m ON m.day = days.day
 GROUP BY days.day
 ORDER BY days.day;

-- broadcasts_list --
-- Each broadcast with its progress: counted from its sends while it runs, from the counts
-- kept when it ended (its sends are pruned later).
SELECT b.id, b.bot_id, bo.username AS bot_username, b.text, b.content_id,
       c.code AS content_code, b.button_text, b.button_url, b.state, b.recipients, b.skipped,
       coalesce(live.queued, 0) AS queued, coalesce(b.sent, live.sent, 0) AS sent,
       coalesce(b.failed, live.failed, 0) AS failed, coalesce(b.unsent, live.unsent, 0) AS unsent,
       b.error, coalesce(nullif(m.display_name, ''), m.email) AS created_by, b.created_at,
       b.started_at, b.finished_at, b.channel_id, ch.title AS channel_title, b.plan_id,
       pl.name AS plan_name, b.member_status, b.language, cardinality(b.people) AS chosen,
       b.starts_at
  FROM broadcasts b
  JOIN bots bo ON bo.id = b.bot_id
  LEFT JOIN channels ch ON ch.id = b.channel_id
  LEFT JOIN plans pl ON pl.id = b.plan_id
  LEFT JOIN contents c ON c.id = b.content_id
  LEFT JOIN team_members m ON m.id = b.created_by
  LEFT JOIN LATERAL (
       SELECT count(*) FILTER (WHERE o.state = 'pending')::integer AS queued,
              count(*) FILTER (WHERE o.state = 'sent')::integer AS sent,
              count(*) FILTER (WHERE o.state = 'failed')::integer AS failed,
              count(*) FILTER (WHERE o.state = 'cancelled')::integer AS unsent
         FROM outbox o
        WHERE o.broadcast_id = b.id AND b.sent IS NULL) live ON true
 WHERE (%(id)s::integer IS NULL OR b.id = %(id)s)
   AND (%(bot_id)s::integer IS NULL OR b.bot_id = %(bot_id)s)
   AND (%(state)s::text IS NULL OR b.state = %(state)s);

-- broadcast_target --
-- What a broadcast names: its bot (active or not) and, if any, a content of that bot.
SELECT (SELECT status FROM bots WHERE id = %(bot_id)s) AS bot_status,
       EXISTS (SELECT FROM contents
                WHERE id = %(content_id)s AND bot_id = %(bot_id)s) AS content_found;

-- insert_broadcast --
INSERT INTO broadcasts (bot_id, text, content_id, button_text, button_url, channel_id, plan_id,
                        member_status, language, people, starts_at, created_by, created_at)
VALUES (%(bot_id)s, %(text)s, %(content_id)s, %(button_text)s, %(button_url)s,
        %(channel_id)s, %(plan_id)s, %(member_status)s, %(language)s, %(people)s::integer[],
        %(starts_at)s, %(created_by)s, %(now)s)
RETURNING id;

-- broadcast_audience --
-- The bot's people in the audience (`in_audience`, the fan-out's own test). Unreachable:
-- Telegram refused them before, or they never started the bot (it may not write to them
-- first); a broadcast passes both over without trying.
SELECT count(*)::integer AS people,
       count(*) FILTER (WHERE bp.blocked_at IS NULL AND bp.unreachable_at IS NULL
                          AND bp.started_at IS NOT NULL)::integer AS reachable,
       count(bp.blocked_at)::integer AS blocked,
       count(*) FILTER (WHERE bp.blocked_at IS NULL
                          AND (bp.unreachable_at IS NOT NULL OR bp.started_at IS NULL))::integer
           AS unreachable
  FROM bot_people bp
  JOIN people p ON p.id = bp.person_id
  JOIN bots bo ON bo.id = bp.bot_id
 WHERE bp.bot_id = %(bot_id)s
   AND in_audience(bp.person_id, bp.language, p.language_code, bo.default_language,
                   %(channel_id)s::integer, %(plan_id)s::integer, %(member_status)s::text,
                   %(language)s::text, %(people)s::integer[]);

-- plan_channel --
SELECT channel_id FROM plans WHERE id = %(plan_id)s;

-- channel_title --
SELECT title FROM channels WHERE id = %(channel_id)s;

-- broadcast_test_person --
-- Who a test goes to, among the people who started the bot.
SELECT p.telegram_user_id, bp.blocked_at IS NOT NULL AS blocked
  FROM bot_people bp
  JOIN people p ON p.id = bp.person_id
 WHERE bp.bot_id = %(bot_id)s
   AND (p.telegram_user_id = %(user_id)s OR lower(p.username) = lower(%(username)s))
 ORDER BY p.telegram_user_id = %(user_id)s DESC
 LIMIT 1;

-- stats_slots --
-- Every hour (its start) or day of the range, in the workspace's zone: a day of a
-- daylight-saving change has 23 or 25 hours.
WITH w AS (SELECT time_zone AS zone FROM workspace)
SELECT h AS hour, NULL::date AS day
  FROM w, generate_series(%(from)s::date::timestamp AT TIME ZONE w.zone,
                          (%(to)s::date + 1)::timestamp AT TIME ZONE w.zone - interval '1 hour',
                          interval '1 hour') h
 WHERE %(granularity)s = 'hour'
UNION ALL
SELECT NULL::timestamptz, d::date
  FROM generate_series(%(from)s::date, %(to)s::date, interval '1 day') d
 WHERE %(granularity)s = 'day'
 ORDER BY 1, 2;

-- stats_bounds --
-- The range asked (the last 30 days of the workspace's zone unless given) as days and as
-- instants of the zone, and how far the roll-up counted in that zone (nothing while it is in
-- another): passed to stats_counts as values, so its plan scans only the range.
WITH w AS (
    SELECT w.time_zone AS zone,
           coalesce(%(to)s::date, (%(now)s::timestamptz AT TIME ZONE w.time_zone)::date) AS last,
           CASE WHEN r.zone = w.time_zone THEN r.done_until
                ELSE '1970-01-01 00:00:00+00'::timestamptz END AS rolled
      FROM workspace w
      LEFT JOIN stat_rollup r ON true
), range AS (
    SELECT zone, coalesce(%(from)s::date, last - 29) AS first, last, rolled FROM w
)
SELECT zone, first, last, first::timestamp AT TIME ZONE zone AS lo,
       (last + 1)::timestamp AT TIME ZONE zone AS hi, rolled
  FROM range;

-- stats_counts --
-- Counts per hour or day, kind and currency over [lo, hi): the closed hours from the roll-up,
-- the rest from the events themselves.
WITH counted AS (
    -- Unfiltered: the hours' totals; by content or campaign: their own rows.
    SELECT h.hour, h.kind, h.currency, h.events, h.amount
      FROM stat_hours h
     WHERE h.hour >= %(lo)s AND h.hour < least(%(hi)s::timestamptz, %(rolled)s::timestamptz)
       AND (%(bot_id)s::integer IS NULL OR h.bot_id = %(bot_id)s)
       AND %(content_id)s::integer IS NULL AND %(campaign_id)s::integer IS NULL
       AND h.content_id = -1
    UNION ALL
    SELECT h.hour, h.kind, h.currency, h.events, h.amount
      FROM stat_hours h
     WHERE h.hour >= %(lo)s AND h.hour < least(%(hi)s::timestamptz, %(rolled)s::timestamptz)
       AND (%(bot_id)s::integer IS NULL OR h.bot_id = %(bot_id)s)
       AND (%(content_id)s::integer IS NOT NULL OR %(campaign_id)s::integer IS NOT NULL)
       AND h.content_id >= 0
       AND (%(content_id)s::integer IS NULL OR h.content_id = %(content_id)s)
       AND (%(campaign_id)s::integer IS NULL OR h.campaign_id = %(campaign_id)s)
    UNION ALL
    SELECT date_trunc('hour', e.at, %(zone)s), e.kind, coalesce(e.currency, ''), 1,
           coalesce(e.amount, 0)
      FROM stat_events e
     WHERE e.at >= greatest(%(lo)s::timestamptz, %(rolled)s::timestamptz) AND e.at < %(hi)s
       AND (%(bot_id)s::integer IS NULL OR e.bot_id = %(bot_id)s)
       AND (%(content_id)s::integer IS NULL OR e.content_id = %(content_id)s)
       AND (%(campaign_id)s::integer IS NULL OR e.campaign_id = %(campaign_id)s)
    UNION ALL
    SELECT date_trunc('hour', bp.first_seen_at, %(zone)s), 'new_person', '', 1, 0
      FROM bot_people bp
     WHERE bp.first_seen_at >= greatest(%(lo)s::timestamptz, %(rolled)s::timestamptz)
       AND bp.first_seen_at < %(hi)s
       AND (%(bot_id)s::integer IS NULL OR bp.bot_id = %(bot_id)s)
       AND %(content_id)s::integer IS NULL AND %(campaign_id)s::integer IS NULL
)
SELECT CASE WHEN %(granularity)s = 'hour' THEN c.hour END AS hour,
       CASE WHEN %(granularity)s = 'day' THEN (c.hour AT TIME ZONE %(zone)s)::date END AS day,
       c.kind, c.currency, sum(c.events)::bigint AS events, sum(c.amount)::bigint AS amount
  FROM counted c
 GROUP BY 1, 2, 3, 4;

-- stats_campaigns --
-- Joins and leaves per campaign over the range (the campaigns of the bot, when one is given).
WITH w AS (
    SELECT (%(from)s::date::timestamp AT TIME ZONE time_zone) AS lo,
           ((%(to)s::date + 1)::timestamp AT TIME ZONE time_zone) AS hi
      FROM workspace
)
SELECT c.id AS campaign_id, c.name,
       count(*) FILTER (WHERE j.joined_at >= w.lo AND j.joined_at < w.hi)::integer AS joins,
       count(*) FILTER (WHERE j.left_at >= w.lo AND j.left_at < w.hi)::integer AS leaves
  FROM campaigns c
 CROSS JOIN w
  LEFT JOIN campaign_joins j ON j.campaign_id = c.id
 WHERE (%(bot_id)s::integer IS NULL OR c.bot_id = %(bot_id)s)
   AND (%(campaign_id)s::integer IS NULL OR c.id = %(campaign_id)s)
 GROUP BY c.id, c.name
 ORDER BY joins DESC, c.id;

-- plans_list --
-- Every plan with its channel's title; a bundle with the channels it covers (ascending), and
-- found by any of them.
SELECT p.id, p.channel_id, c.title AS channel_title, p.name, p.kind, p.price_minor, p.currency,
       p.period_days, p.grace_days, p.gateways, p.position, p.active, p.is_default,
       p.created_at, p.updated_at,
       (SELECT count(*) FROM trials t WHERE t.plan_id = p.id)::integer AS taken,
       coalesce(b.channel_ids, '{}') AS channels, coalesce(b.titles, '{}') AS channel_titles
  FROM plans p
  JOIN channels c ON c.id = p.channel_id
  LEFT JOIN bundle_channels b ON b.plan_id = p.id AND p.kind = 'bundle'
 WHERE (%(id)s::integer IS NULL OR p.id = %(id)s)
   AND (%(channel_id)s::integer IS NULL OR p.channel_id = %(channel_id)s
        OR %(channel_id)s = ANY (b.channel_ids))
   AND (%(active)s::boolean IS NULL OR p.active = %(active)s);

-- bundle_candidates --
-- The channels a bundle is to cover, with whether each is paid and the currency it sells in
-- (its default plan's).
SELECT c.id, c.is_paid,
       (SELECT currency FROM plans WHERE channel_id = c.id AND is_default) AS currency
  FROM channels c
 WHERE c.id = ANY (%(ids)s::integer[]);

-- set_plan_channels --
-- A bundle's channels become exactly those given.
WITH gone AS (
    DELETE FROM plan_channels
     WHERE plan_id = %(id)s AND channel_id <> ALL (%(ids)s::integer[])
)
INSERT INTO plan_channels (plan_id, channel_id)
SELECT %(id)s, unnest(%(ids)s::integer[])
ON CONFLICT DO NOTHING;

-- lock_channel_plans --
-- Plans of one channel change one at a time: the names on sale and the default are the
-- channel's (the channel page's price takes the same lock, `channel_for_update`).
SELECT id FROM channels WHERE id = %(channel_id)s FOR NO KEY UPDATE;

-- lock_channel_of_plan --
-- The same lock, taken from the plan's side.
SELECT c.id FROM plans p JOIN channels c ON c.id = p.channel_id
 WHERE p.id = %(id)s
   FOR NO KEY UPDATE OF c;

-- plan_name_on_sale --
SELECT id FROM plans
 WHERE channel_id = %(channel_id)s AND active AND lower(name) = lower(%(name)s)
   AND (%(id)s::integer IS NULL OR id <> %(id)s);

-- insert_plan --
-- A channel's first regular plan is its default. A trial without a currency takes the
-- default plan's.
INSERT INTO plans (channel_id, name, kind, price_minor, currency, period_days, grace_days,
                   gateways, position, is_default, created_at)
VALUES (%(channel_id)s, %(name)s, %(kind)s, %(price_minor)s,
        coalesce(%(currency)s, (SELECT currency FROM plans
                                 WHERE channel_id = %(channel_id)s AND is_default), 'USD'),
        %(period_days)s, %(grace_days)s, %(gateways)s, %(position)s,
        %(kind)s = 'regular'
        AND NOT EXISTS (SELECT FROM plans WHERE channel_id = %(channel_id)s AND is_default),
        %(now)s)
RETURNING id;

-- trial_on_sale --
-- The channel's free trial on sale, other than this plan.
SELECT id FROM plans
 WHERE channel_id = %(channel_id)s AND kind = 'trial' AND active
   AND id IS DISTINCT FROM %(id)s;

-- clear_default_plan --
UPDATE plans SET is_default = false, updated_at = %(now)s
 WHERE channel_id = %(channel_id)s AND is_default;

-- update_plan --
UPDATE plans
   SET name = %(name)s, price_minor = %(price_minor)s, currency = %(currency)s,
       period_days = %(period_days)s, grace_days = %(grace_days)s, gateways = %(gateways)s,
       position = %(position)s, active = %(active)s, is_default = %(is_default)s,
       updated_at = %(now)s
 WHERE id = %(id)s;

-- coupons_list --
-- Every coupon with its uses: invoices made with it and not given back, and of them paid.
SELECT c.id, c.code, c.percent_off, c.amount_off_minor, c.currency, c.expires_at,
       c.max_redemptions, c.per_person, c.plan_ids, c.customers, c.active, c.created_at,
       c.updated_at, u.uses, u.paid
  FROM coupons c
 CROSS JOIN LATERAL (
       SELECT count(*) FILTER (WHERE r.released_at IS NULL)::integer AS uses,
              count(*) FILTER (WHERE i.status = 'paid')::integer AS paid
         FROM coupon_redemptions r
         JOIN invoices i ON i.id = r.invoice_id
        WHERE r.coupon_id = c.id) u
 WHERE (%(id)s::integer IS NULL OR c.id = %(id)s)
   AND (%(active)s::boolean IS NULL OR c.active = %(active)s);

-- insert_coupon --
-- Nothing when the code is taken, whatever its case.
INSERT INTO coupons (code, percent_off, amount_off_minor, currency, expires_at,
                     max_redemptions, per_person, plan_ids, customers, created_at)
VALUES (%(code)s, %(percent_off)s, %(amount_off_minor)s, %(currency)s, %(expires_at)s,
        %(max_redemptions)s, %(per_person)s, %(plan_ids)s, %(customers)s, %(now)s)
ON CONFLICT DO NOTHING
RETURNING id;

-- lock_coupon --
-- The row billing locks to redeem it: a change waits for a redemption in flight.
SELECT id FROM coupons WHERE id = %(id)s FOR UPDATE;

-- update_coupon --
UPDATE coupons
   SET expires_at = %(expires_at)s, max_redemptions = %(max_redemptions)s,
       per_person = %(per_person)s, plan_ids = %(plan_ids)s, customers = %(customers)s,
       active = %(active)s, updated_at = %(now)s
 WHERE id = %(id)s;

-- plans_by_id --
SELECT id, currency FROM plans WHERE id = ANY(%(ids)s::integer[]);

-- coupon_redemptions_list --
-- Each use of a coupon: who, the invoice it was made for and what came of it.
SELECT r.id, r.coupon_id, c.code AS coupon_code, p.telegram_user_id, p.username, p.first_name,
       i.order_reference, ch.title AS channel_title, pl.name AS plan_name, i.currency,
       i.list_price_minor, i.discount_minor, i.amount_minor, i.status AS invoice_status,
       r.redeemed_at, r.released_at
  FROM coupon_redemptions r
  JOIN coupons c ON c.id = r.coupon_id
  JOIN people p ON p.id = r.person_id
  JOIN invoices i ON i.id = r.invoice_id
  JOIN channels ch ON ch.id = i.channel_id
  JOIN plans pl ON pl.id = i.plan_id
 WHERE (%(coupon_id)s::integer IS NULL OR r.coupon_id = %(coupon_id)s);

-- access_codes_list --
-- Every access code with its channel, its uses, and the bot whose start link redeems it.
SELECT a.id, a.code, a.channel_id, ch.title AS channel_title, a.days, a.max_uses, a.expires_at,
       a.label, a.active, a.created_at, a.updated_at, b.username AS bot_username,
       (SELECT count(*) FROM access_code_uses u WHERE u.code_id = a.id)::integer AS uses
  FROM access_codes a
  JOIN channels ch ON ch.id = a.channel_id
  LEFT JOIN bots b ON b.id = ch.manager_bot_id
 WHERE (%(id)s::integer IS NULL OR a.id = %(id)s)
   AND (%(channel_id)s::integer IS NULL OR a.channel_id = %(channel_id)s)
   AND (%(active)s::boolean IS NULL OR a.active = %(active)s);

-- paid_channel --
SELECT id FROM channels WHERE id = %(id)s AND is_paid;

-- insert_access_codes --
-- Codes drawn at random; one that happens to exist already is left out (the caller draws
-- again for it).
INSERT INTO access_codes (code, channel_id, days, max_uses, expires_at, label, created_at)
SELECT code, %(channel_id)s, %(days)s, %(max_uses)s, %(expires_at)s, %(label)s, %(now)s
  FROM unnest(%(codes)s::text[]) AS code
ON CONFLICT (code) DO NOTHING
RETURNING id;

-- lock_access_code --
-- The row billing locks to redeem the code: a change waits for a use in flight.
SELECT id FROM access_codes WHERE id = %(id)s FOR UPDATE;

-- update_access_code --
UPDATE access_codes
   SET max_uses = %(max_uses)s, expires_at = %(expires_at)s, label = %(label)s,
       active = %(active)s, updated_at = %(now)s
 WHERE id = %(id)s;

-- access_code_uses_list --
-- Each use of an access code: who, when, and for which channel.
SELECT u.id, u.code_id, a.code, p.telegram_user_id, p.username, p.first_name,
       ch.title AS channel_title, a.days, u.used_at
  FROM access_code_uses u
  JOIN access_codes a ON a.id = u.code_id
  JOIN people p ON p.id = u.person_id
  JOIN channels ch ON ch.id = a.channel_id
 WHERE (%(code_id)s::integer IS NULL OR u.code_id = %(code_id)s);

-- bot_language --
SELECT id, default_language FROM bots WHERE id = %(bot_id)s AND status <> 'removed';

-- set_bot_language --
UPDATE bots SET default_language = %(language)s WHERE id = %(bot_id)s AND status <> 'removed'
RETURNING id, default_language;

-- bot_texts_of --
-- What the bot's owner wrote in place of its texts, each with when and by whom.
SELECT t.key, t.language, t.text, t.updated_at, m.email AS updated_by
  FROM bot_texts t
  LEFT JOIN team_members m ON m.id = t.updated_by
 WHERE t.bot_id = %(bot_id)s
 ORDER BY t.key, t.language;

-- bot_text --
SELECT text FROM bot_texts WHERE bot_id = %(bot_id)s AND key = %(key)s AND language = %(language)s
   FOR UPDATE;

-- set_bot_text --
INSERT INTO bot_texts (bot_id, key, language, text, updated_at, updated_by)
VALUES (%(bot_id)s, %(key)s, %(language)s, %(text)s, %(now)s, %(member_id)s)
ON CONFLICT (bot_id, key, language)
DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at,
              updated_by = excluded.updated_by;

-- reset_bot_text --
DELETE FROM bot_texts WHERE bot_id = %(bot_id)s AND key = %(key)s AND language = %(language)s;

-- headline_counts --
-- The business in figures for a period [since, until) and the one before it [before, since):
-- memberships active now and at the period's start (from their history: each event's status
-- holds until the next), begun (a membership's first event), lost (moved to expired), renewals
-- due in the next 7 days, and trials that ended (the date the trial ran to) and how many of
-- those people paid for that channel after taking it.
WITH last_before AS (
       SELECT DISTINCT ON (person_id, channel_id) to_status
         FROM membership_events
        WHERE at < %(since)s
        ORDER BY person_id, channel_id, id DESC),
     first_event AS (
       SELECT min(at) AS at FROM membership_events GROUP BY person_id, channel_id),
     trial_ends AS (
       SELECT e.until AS ended,
              EXISTS (SELECT 1 FROM payments p
                       WHERE p.person_id = e.person_id AND p.channel_id = e.channel_id
                         AND p.applied AND p.paid_at >= e.at) AS paid
         FROM membership_events e
        WHERE e.cause = 'trial' AND e.until >= %(before)s AND e.until < %(until)s)
SELECT (SELECT count(*) FROM memberships WHERE status = 'active') AS active_now,
       (SELECT count(*) FROM last_before WHERE to_status = 'active') AS active_before,
       (SELECT count(*) FROM first_event WHERE at >= %(since)s AND at < %(until)s) AS new_now,
       (SELECT count(*) FROM first_event WHERE at >= %(before)s AND at < %(since)s) AS new_before,
       (SELECT count(*) FROM membership_events
         WHERE to_status = 'expired' AND from_status IS DISTINCT FROM 'expired'
           AND at >= %(since)s AND at < %(until)s) AS lost_now,
       (SELECT count(*) FROM membership_events
         WHERE to_status = 'expired' AND from_status IS DISTINCT FROM 'expired'
           AND at >= %(before)s AND at < %(since)s) AS lost_before,
       (SELECT count(*) FROM memberships
         WHERE status = 'active' AND expires_at >= %(until)s
           AND expires_at < %(until)s + interval '7 days') AS renewals_due,
       (SELECT count(*) FROM trial_ends WHERE ended >= %(since)s) AS trials_ended_now,
       (SELECT count(*) FROM trial_ends WHERE ended >= %(since)s AND paid) AS trials_paid_now,
       (SELECT count(*) FROM trial_ends WHERE ended < %(since)s) AS trials_ended_before,
       (SELECT count(*) FROM trial_ends WHERE ended < %(since)s AND paid) AS trials_paid_before;

-- headline_received --
-- Payments received (applied) in the period and in the one before, per currency, in minor units.
SELECT currency,
       coalesce(sum(amount_minor) FILTER (WHERE paid_at >= %(since)s), 0)::text AS now_minor,
       coalesce(sum(amount_minor) FILTER (WHERE paid_at < %(since)s), 0)::text AS before_minor
  FROM payments
 WHERE applied AND paid_at >= %(before)s AND paid_at < %(until)s
 GROUP BY currency
 ORDER BY currency;

-- headline_recurring --
-- What the active memberships bring in a month, per currency, now and at the period's start:
-- each one's last payment's price (a bundle's shared among its channels) over its period, as
-- 30 days of it, in minor units. At the start: the memberships whose last event before it left
-- them active, priced by their last payment before it.
WITH at_start AS (
       SELECT DISTINCT ON (person_id, channel_id) person_id, channel_id, to_status
         FROM membership_events
        WHERE at < %(since)s
        ORDER BY person_id, channel_id, id DESC),
     counted AS (
       SELECT person_id, channel_id, true AS now FROM memberships WHERE status = 'active'
       UNION ALL
       SELECT person_id, channel_id, false FROM at_start WHERE to_status = 'active'),
     monthly AS (
       SELECT c.now, i.currency,
              i.amount_minor * 30.0 / i.period_days
                / coalesce(cardinality(i.bundle_channel_ids), 1) AS amount
         FROM counted c
         JOIN LATERAL (
              SELECT e.payment_id FROM membership_events e
               WHERE e.person_id = c.person_id AND e.channel_id = c.channel_id
                 AND e.cause = 'payment' AND (c.now OR e.at < %(since)s)
               ORDER BY e.id DESC LIMIT 1) last ON true
         JOIN payments p ON p.id = last.payment_id
         JOIN invoices i ON i.id = p.invoice_id)
SELECT currency,
       round(coalesce(sum(amount) FILTER (WHERE now), 0))::text AS amount_minor,
       round(coalesce(sum(amount) FILTER (WHERE NOT now), 0))::text AS before_minor
  FROM monthly
 GROUP BY currency
 ORDER BY currency;

-- headline_stars --
-- Telegram Stars received in the period and the one before, split into subscriptions (Telegram
-- charges again by itself) and one-off payments (a period bought once).
SELECT coalesce(sum(p.amount_minor) FILTER (WHERE t.is_recurring AND p.paid_at >= %(since)s), 0)::bigint
           AS subscriptions_now,
       coalesce(sum(p.amount_minor) FILTER (WHERE t.is_recurring AND p.paid_at < %(since)s), 0)::bigint
           AS subscriptions_before,
       coalesce(sum(p.amount_minor) FILTER (WHERE NOT coalesce(t.is_recurring, false)
                                              AND p.paid_at >= %(since)s), 0)::bigint AS one_off_now,
       coalesce(sum(p.amount_minor) FILTER (WHERE NOT coalesce(t.is_recurring, false)
                                              AND p.paid_at < %(since)s), 0)::bigint AS one_off_before
  FROM payments p
  LEFT JOIN telegram_payments t
         ON t.kind = 'payment' AND t.telegram_payment_charge_id = p.external_payment_id
 WHERE p.applied AND p.gateway = 'telegram_stars'
   AND p.paid_at >= %(before)s AND p.paid_at < %(until)s;

-- fix_extension --
-- The date a member is extended to by a bulk request: fixed the first time (from the paid time
-- then, or now when it has run out), the one fixed before when the same request comes again.
-- One statement: the row just written, else the one kept (none: no such membership).
WITH fixed AS (
    INSERT INTO bulk_extensions (request_key, person_id, channel_id, days, until, created_by,
                                 created_at)
    SELECT %(key)s, m.person_id, m.channel_id, %(days)s,
           greatest(m.expires_at, %(now)s) + make_interval(days => %(days)s), %(member_id)s,
           %(now)s
      FROM memberships m
     WHERE m.person_id = %(person_id)s AND m.channel_id = %(channel_id)s
    ON CONFLICT (request_key, person_id, channel_id) DO NOTHING
    RETURNING until, days),
kept AS (
    SELECT until, days FROM fixed
    UNION ALL
    SELECT until, days FROM bulk_extensions
     WHERE request_key = %(key)s AND person_id = %(person_id)s AND channel_id = %(channel_id)s)
SELECT kept.until, kept.days, p.telegram_user_id
  FROM kept, people p
 WHERE p.id = %(person_id)s
 LIMIT 1;

-- membership_person --
-- Whose a membership is, by Telegram's id for them.
SELECT p.telegram_user_id
  FROM memberships m
  JOIN people p ON p.id = m.person_id
 WHERE m.person_id = %(person_id)s AND m.channel_id = %(channel_id)s;

-- headline_by_channel --
-- Payments received in the period by channel and currency, the most first in each currency.
SELECT c.id AS channel_id, c.title, p.currency, sum(p.amount_minor)::text AS amount_minor,
       count(*) AS payments
  FROM payments p
  JOIN channels c ON c.id = p.channel_id
 WHERE p.applied AND p.paid_at >= %(since)s AND p.paid_at < %(until)s
 GROUP BY c.id, c.title, p.currency
 ORDER BY p.currency, sum(p.amount_minor) DESC, c.id;

-- headline_by_plan --
-- Payments received in the period by the plan they paid for, and currency.
SELECT pl.id AS plan_id, pl.name, c.title AS channel_title, p.currency,
       sum(p.amount_minor)::text AS amount_minor, count(*) AS payments
  FROM payments p
  JOIN invoices i ON i.id = p.invoice_id
  JOIN plans pl ON pl.id = i.plan_id
  JOIN channels c ON c.id = pl.channel_id
 WHERE p.applied AND p.paid_at >= %(since)s AND p.paid_at < %(until)s
 GROUP BY pl.id, pl.name, c.title, p.currency
 ORDER BY p.currency, sum(p.amount_minor) DESC, pl.id;
