-- A month of made-up business written straight into the tables, once, into a database with
-- no payments yet: the page and list tests' fixture. (The demo's month is played through the
-- running system instead: simulators/demo_month.py.)
WITH bot AS (SELECT min(id) AS id FROM bots),
     plan AS (SELECT p.id, p.channel_id, p.price_minor, p.currency, p.period_days, p.grace_days
                FROM plans p JOIN channels c ON c.id = p.channel_id
               WHERE p.is_default AND c.is_paid ORDER BY p.id LIMIT 1),
     made AS (
       INSERT INTO people (telegram_user_id, username, first_name, created_at)
       SELECT 7000000 + n, 'demo_' || n, 'Demo ' || n, now() - (31 - n % 30) * interval '1 day'
         FROM generate_series(1, 60) n
       RETURNING id, telegram_user_id, created_at)
INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at, started_at)
SELECT bot.id, made.id, made.created_at, made.created_at + interval '2 hours', made.created_at
  FROM made, bot WHERE bot.id IS NOT NULL;

WITH plan AS (SELECT p.id, p.channel_id, p.price_minor, p.currency, p.period_days, p.grace_days
                FROM plans p JOIN channels c ON c.id = p.channel_id
               WHERE p.is_default AND c.is_paid ORDER BY p.id LIMIT 1),
     buyers AS (SELECT id, telegram_user_id - 7000000 AS n FROM people
                 WHERE telegram_user_id BETWEEN 7000001 AND 7000045)
INSERT INTO invoices (order_reference, person_id, channel_id, plan_id, amount_minor, currency,
                      period_days, grace_days, gateway, status, created_at, expires_at, paid_at)
SELECT 'demo-' || b.n, b.id, plan.channel_id, plan.id, plan.price_minor, plan.currency,
       plan.period_days, plan.grace_days, (ARRAY['subgate', 'wayforpay', 'stripe'])[1 + b.n % 3],
       CASE WHEN b.n > 40 THEN 'open' ELSE 'paid' END,
       now() - (30 - b.n % 30) * interval '1 day' - interval '3 hours',
       now() - (30 - b.n % 30) * interval '1 day' + interval '21 hours',
       CASE WHEN b.n > 40 THEN NULL ELSE now() - (30 - b.n % 30) * interval '1 day' END
  FROM buyers b, plan;

INSERT INTO payments (gateway, external_payment_id, invoice_id, person_id, channel_id,
                      amount_minor, currency, paid_at, applied, flag)
SELECT i.gateway, 'demo-pay-' || i.id, i.id, i.person_id, i.channel_id,
       CASE WHEN i.order_reference = 'demo-40' THEN i.amount_minor - 1 ELSE i.amount_minor END,
       i.currency, i.paid_at, i.order_reference <> 'demo-40',
       CASE WHEN i.order_reference = 'demo-40' THEN 'amount_mismatch' END
  FROM invoices i WHERE i.order_reference LIKE 'demo-%' AND i.status = 'paid';

INSERT INTO gateway_events (gateway, event_type, order_reference, external_payment_id, outcome,
                            payment_id, detail, payload, received_at)
SELECT p.gateway, 'payment', i.order_reference, p.external_payment_id, 'amount_mismatch', p.id,
       'paid ' || p.amount_minor || ', invoice asks ' || i.amount_minor, '{}', p.paid_at
  FROM payments p JOIN invoices i ON i.id = p.invoice_id WHERE NOT p.applied;

-- Paid 30 days ago or less: the newest third active, then grace, then expired.
INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days, next_check_at,
                         updated_at)
SELECT p.person_id, p.channel_id,
       CASE WHEN p.paid_at > now() - interval '12 days' THEN 'active'
            WHEN p.paid_at > now() - interval '20 days' THEN 'grace' ELSE 'expired' END,
       CASE WHEN p.paid_at > now() - interval '12 days' THEN p.paid_at + interval '30 days'
            ELSE now() - interval '1 day' END,
       3,
       CASE WHEN p.paid_at > now() - interval '12 days' THEN p.paid_at + interval '30 days'
            WHEN p.paid_at > now() - interval '20 days' THEN now() + interval '2 days' END,
       p.paid_at
  FROM payments p WHERE p.applied AND p.external_payment_id LIKE 'demo-pay-%';

INSERT INTO membership_events (person_id, channel_id, from_status, to_status, old_expires_at,
                               new_expires_at, cause, payment_id, paid_at, period_days, at)
SELECT p.person_id, p.channel_id, NULL, 'active', NULL, p.paid_at + interval '30 days',
       'payment', p.id, p.paid_at, 30, p.paid_at
  FROM payments p WHERE p.applied AND p.external_payment_id LIKE 'demo-pay-%';

INSERT INTO membership_events (person_id, channel_id, from_status, to_status, old_expires_at,
                               new_expires_at, cause, at)
SELECT m.person_id, m.channel_id, 'active', m.status, m.updated_at + interval '30 days',
       m.expires_at, 'sweep', now() - interval '1 day'
  FROM memberships m
 WHERE m.status <> 'active'
   AND m.person_id IN (SELECT id FROM people WHERE telegram_user_id BETWEEN 7000001 AND 7000060);

INSERT INTO access_events (kind, person_id, channel_id, membership_event_id, expires_at,
                           created_at, state, attempts, available_at, done_at, last_error)
SELECT 'grant', e.person_id, e.channel_id, e.id, e.new_expires_at, e.at,
       CASE WHEN e.id = max(e.id) OVER () THEN 'failed' ELSE 'done' END,
       CASE WHEN e.id = max(e.id) OVER () THEN 8 ELSE 1 END, e.at,
       CASE WHEN e.id = max(e.id) OVER () THEN NULL ELSE e.at + interval '2 seconds' END,
       CASE WHEN e.id = max(e.id) OVER ()
            THEN 'Bad Request: not enough rights to create an invite link' END
  FROM membership_events e
 WHERE e.cause = 'payment' AND e.payment_id IN (
       SELECT id FROM payments WHERE external_payment_id LIKE 'demo-pay-%');

WITH bot AS (SELECT min(id) AS id FROM bots),
     slot AS (
       INSERT INTO ad_slots (bot_id, kind, title, price_micros, accepts_usdt, accepts_trx)
       SELECT bot.id, 'pinned_post', 'Pinned for a day (demo)', 25000000, true, true
         FROM bot WHERE bot.id IS NOT NULL
       RETURNING id, price_micros),
     states (n, status, paid) AS (VALUES
       (1, 'requested', 0), (2, 'requested', 0), (3, 'approved', 0), (4, 'part_paid', 10000000),
       (5, 'paid', 25000000), (6, 'rejected', 0), (7, 'cancelled', 0), (8, 'expired', 0))
INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt, accepts_trx, status,
                       approved_at, pay_to, trx_rate, trx_rate_source, trx_rate_at, paid_micros,
                       due_at, created_at, updated_at)
SELECT slot.id, p.id, jsonb_build_object('text', 'Demo ad ' || s.n || ': visit our shop'),
       slot.price_micros, true, true, s.status,
       CASE WHEN s.status IN ('requested', 'rejected', 'cancelled') THEN NULL
            ELSE now() - (9 - s.n) * interval '1 day' END,
       CASE WHEN s.status IN ('requested', 'rejected', 'cancelled') THEN NULL
            ELSE 'TDemoShopAddress0000000000000000000' END,
       CASE WHEN s.status IN ('requested', 'rejected', 'cancelled') THEN NULL ELSE 0.2475 END,
       CASE WHEN s.status IN ('requested', 'rejected', 'cancelled') THEN NULL ELSE 'demo' END,
       CASE WHEN s.status IN ('requested', 'rejected', 'cancelled') THEN NULL
            ELSE now() - (9 - s.n) * interval '1 day' END,
       s.paid,
       CASE WHEN s.status IN ('approved', 'part_paid') THEN now() + interval '1 day'
            WHEN s.status = 'expired' THEN now() - interval '1 day' END,
       now() - (10 - s.n) * interval '1 day', now() - (9 - s.n) * interval '1 day'
  FROM slot, states s
  JOIN people p ON p.telegram_user_id = 7000050 + s.n;

INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, attempt, received_at,
                   done_at, last_error)
SELECT min(id), 1, 7000060, 'message',
       '{"update_id": 1, "message": {"message_id": 1, "date": 0, "chat": {"id": 7000060, "type": "private"}, "text": "/start"}}',
       'dead', 5, now() - interval '3 days', now() - interval '3 days',
       'TimeoutError: getChatMember took longer than 8 s'
  FROM bots HAVING min(id) IS NOT NULL;

-- Two campaigns of the first bot into a gate channel (a private one if there is), and the demo
-- people who joined through them over the month; every fifth left two days later.
WITH bot AS (SELECT min(id) AS id FROM bots),
     channel AS (
       SELECT c.id FROM channels c
        ORDER BY c.id IN (SELECT channel_id FROM bot_channels WHERE default_gate) DESC,
                 c.username IS NULL DESC, c.id
        LIMIT 1),
     made AS (
       INSERT INTO campaigns (name, bot_id, channel_id, invite_link, created_at)
       SELECT v.name, bot.id, channel.id, 'https://t.me/+demo_' || v.tag,
              now() - interval '31 days'
         FROM bot, channel, (VALUES ('Spring sponsor', 'spring'), ('Podcast ad', 'podcast')) v(name, tag)
        WHERE bot.id IS NOT NULL
       RETURNING id, name)
INSERT INTO campaign_joins (campaign_id, person_id, joined_at, left_at)
SELECT made.id, p.id, j.at,
       CASE WHEN j.n % 5 = 0 AND j.at < now() - interval '2 days' THEN j.at + interval '2 days' END
  FROM made
  JOIN people p ON p.telegram_user_id BETWEEN 7000001 AND 7000060
 CROSS JOIN LATERAL (
       SELECT p.telegram_user_id - 7000000 AS n,
              now() - ((p.telegram_user_id - 7000000) % 29) * interval '1 day'
                    - ((p.telegram_user_id * 7) % 20) * interval '1 hour' AS at) j
 WHERE (made.name = 'Spring sponsor' AND j.n <= 40)
    OR (made.name = 'Podcast ad' AND j.n > 40);

-- Two broadcasts of the first bot, sent over the month (their sends long pruned, their counts
-- kept), and one cancelled half-way.
INSERT INTO broadcasts (bot_id, text, button_text, button_url, state, recipients, skipped,
                        sent, failed, unsent, created_at, started_at, finished_at)
SELECT b.id, v.text, v.button_text, v.button_url, v.state, v.recipients, v.skipped, v.sent,
       v.failed, v.unsent, now() - v.ago, now() - v.ago, now() - v.ago + interval '3 minutes'
  FROM (SELECT min(id) AS id FROM bots) b,
       (VALUES ('<b>New this week:</b> three fresh posts in the channel.', 'Open the channel',
                'https://t.me/gatehouse_demo', 'done', 58, 2, 55, 3, 0, interval '20 days'),
               ('Spring sale: <i>half price</i> on the yearly plan until Sunday.', NULL, NULL,
                'done', 60, 3, 59, 1, 0, interval '6 days'),
               ('Reminder: the live session starts in an hour.', NULL, NULL, 'cancelled', 60, 3,
                21, 0, 39, interval '2 days'))
           AS v (text, button_text, button_url, state, recipients, skipped, sent, failed, unsent,
                 ago)
 WHERE b.id IS NOT NULL;

-- A month of visits to the first bot: 600 /starts, eight in ten shown the gate, six through
-- it, five of them given the content for the first time.
INSERT INTO stat_events (at, kind, bot_id, content_id)
SELECT now() - (v.n % 30) * interval '1 day' - ((v.n * 37) % 24) * interval '1 hour',
       k.kind, b.id, CASE WHEN k.kind <> 'start' THEN c.id END
  FROM (SELECT min(id) AS id FROM bots) b
  LEFT JOIN LATERAL (SELECT min(id) AS id FROM contents WHERE bot_id = b.id) c ON true
 CROSS JOIN generate_series(1, 600) v(n)
 CROSS JOIN (VALUES ('start', 10), ('gate_shown', 8), ('gate_passed', 6),
                    ('content_delivered', 5)) k(kind, share)
 WHERE b.id IS NOT NULL AND v.n % 10 < k.share;

-- The demo's payments counted for the statistics as billing counts a payment it applies.
INSERT INTO stat_events (at, kind, bot_id, person_id, amount, currency)
SELECT p.paid_at, 'payment', c.manager_bot_id, p.person_id, p.amount_minor, p.currency
  FROM payments p
  JOIN channels c ON c.id = p.channel_id
 WHERE p.applied;

-- Telegram has been failing for the first bot for twenty minutes: the dashboard says so.
UPDATE bots SET telegram_failing_since = now() - interval '20 minutes'
 WHERE id = (SELECT min(id) FROM bots);
