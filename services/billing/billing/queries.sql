-- upsert_person --
-- Whoever meets a person first creates the row; later callers get the same id.
INSERT INTO people (telegram_user_id) VALUES (%(telegram_user_id)s)
ON CONFLICT (telegram_user_id) DO UPDATE SET updated_at = people.updated_at
RETURNING id;

-- invoice_plan --
-- The plan an invoice is priced from: the one asked for, when it is on sale in that paid
-- channel (its own, or a bundle covering the channel, all of whose channels are paid), else
-- the channel's default; with `currency` (Stars, which take XTR alone), the channel's first
-- regular plan in it, the default first. A bundle's channels come in ascending order, as the
-- invoice keeps them.
SELECT p.id, p.kind, p.price_minor, p.currency, p.period_days, p.grace_days, p.gateways,
       b.channel_ids AS bundle_channel_ids
  FROM channels c
  JOIN plans p ON p.active AND (p.channel_id = c.id OR p.id IN (
        SELECT pc.plan_id FROM plan_channels pc WHERE pc.channel_id = c.id))
  LEFT JOIN bundle_channels b ON b.plan_id = p.id AND p.kind = 'bundle'
 WHERE c.id = %(channel_id)s AND c.is_paid AND p.kind IN ('regular', 'bundle')
   AND (p.kind = 'regular' OR b.all_paid)
   AND CASE WHEN %(plan_id)s::integer IS NOT NULL THEN p.id = %(plan_id)s
            WHEN %(currency)s::text IS NULL THEN p.is_default
            ELSE p.kind = 'regular' AND p.channel_id = c.id AND p.currency = %(currency)s END
 ORDER BY p.is_default DESC, p.position, p.id
 LIMIT 1;

-- channel_plans --
-- A paid channel's plans on sale, its trial and the bundles covering it among them, in the order
-- the bot lists them; a bundle with the titles of its channels.
SELECT c.title, p.id, p.name, p.kind, p.price_minor, p.currency, p.period_days, p.gateways,
       p.is_default, b.titles AS channels
  FROM channels c
  JOIN plans p ON p.active AND (p.channel_id = c.id OR p.id IN (
        SELECT pc.plan_id FROM plan_channels pc WHERE pc.channel_id = c.id))
  LEFT JOIN bundle_channels b ON b.plan_id = p.id AND p.kind = 'bundle'
 WHERE c.id = %(channel_id)s AND c.is_paid
   AND (p.kind IN ('regular', 'trial') OR b.all_paid)
 ORDER BY p.position, p.id;

-- insert_invoice --
INSERT INTO invoices (order_reference, person_id, channel_id, plan_id, amount_minor,
                      list_price_minor, discount_minor, coupon_id, currency, period_days,
                      grace_days, gateway, bundle_channel_ids, created_at, expires_at,
                      request_key)
VALUES (%(order_reference)s, %(person_id)s, %(channel_id)s, %(plan_id)s, %(amount_minor)s,
        %(list_price_minor)s, %(discount_minor)s, %(coupon_id)s, %(currency)s,
        %(period_days)s, %(grace_days)s, %(gateway)s, %(bundle_channel_ids)s, %(now)s,
        %(now)s + interval '24 hours', %(request_key)s)
RETURNING id;

-- lock_request_key --
-- Two requests with one key, one at a time: the second, in its own statement after the lock
-- (so its snapshot sees the first's commit), finds the first's invoice.
SELECT pg_advisory_xact_lock(hashtextextended(%(request_key)s, 37));

-- invoice_by_key --
-- The invoice a caller asked for before under its key, with what it was asked for.
SELECT i.order_reference, i.amount_minor, i.currency, i.plan_id, i.channel_id, i.gateway,
       coalesce(i.list_price_minor, i.amount_minor) AS list_price_minor, i.discount_minor,
       p.telegram_user_id
  FROM invoices i
  JOIN people p ON p.id = i.person_id
 WHERE i.request_key = %(request_key)s;

-- coupon_for_update --
-- The coupon by its code, whatever its case; locked, so its uses are counted one invoice at a
-- time.
SELECT id, percent_off, amount_off_minor, currency, expires_at, max_redemptions, per_person,
       plan_ids, customers, active
  FROM coupons
 WHERE upper(code) = upper(%(code)s)
   FOR UPDATE;

-- coupon_standing --
-- The coupon's uses not released, all and the person's, and the person's membership of the
-- channel (none: a new customer; expired: a lapsed one).
SELECT (SELECT count(*) FROM coupon_redemptions
         WHERE coupon_id = %(coupon_id)s AND released_at IS NULL)::integer AS uses,
       (SELECT count(*) FROM coupon_redemptions
         WHERE coupon_id = %(coupon_id)s AND person_id = %(person_id)s
           AND released_at IS NULL)::integer AS person_uses,
       (SELECT status FROM memberships
         WHERE person_id = %(person_id)s AND channel_id = %(channel_id)s) AS membership_status;

-- insert_redemption --
-- The person's lowest free use of the coupon; the unique key on it is the per-person limit.
INSERT INTO coupon_redemptions (coupon_id, person_id, invoice_id, seq, redeemed_at)
SELECT %(coupon_id)s, %(person_id)s, %(invoice_id)s, s, %(now)s
  FROM generate_series(1, %(per_person)s::integer) s
 WHERE NOT EXISTS (SELECT FROM coupon_redemptions r
                    WHERE r.coupon_id = %(coupon_id)s AND r.person_id = %(person_id)s
                      AND r.seq = s AND r.released_at IS NULL)
 ORDER BY s
 LIMIT 1;

-- lock_membership_of_invoice --
-- Every payment and sweep decision for one membership runs under this lock, so they apply in
-- one order and the history records that order. The two-int4 form is reserved for it. Taken
-- through the invoice in one round trip; no row when the order reference is unknown
-- (order_reference is unique). A bundle's invoice locks each of its channels' memberships in
-- ascending channel order (the output list is evaluated after the sort), so two payments that
-- share channels wait for each other in one order and never deadlock.
SELECT pg_advisory_xact_lock(i.person_id, ch)
  FROM invoices i
 CROSS JOIN LATERAL unnest(coalesce(i.bundle_channel_ids, ARRAY[i.channel_id])) ch
 WHERE i.order_reference = %(order_reference)s
 ORDER BY ch;

-- invoice_under_lock --
-- The invoice with, for each channel it pays for, the membership (if any) and the channel's
-- reminder times, read under the memberships' locks: a statement of its own, so its snapshot
-- is taken after the locks. One row per channel, in ascending channel order.
SELECT i.id, i.order_reference, i.person_id, i.channel_id, i.amount_minor, i.currency,
       i.period_days, i.grace_days, i.status, i.gateway, ch AS paid_channel_id,
       c.reminder_hours, m.status AS membership_status, m.expires_at AS membership_expires_at,
       m.grace_days AS membership_grace_days
  FROM invoices i
 CROSS JOIN LATERAL unnest(coalesce(i.bundle_channel_ids, ARRAY[i.channel_id])) ch
  JOIN channels c ON c.id = ch
  LEFT JOIN memberships m ON m.person_id = i.person_id AND m.channel_id = ch
 WHERE i.order_reference = %(order_reference)s
 ORDER BY ch;

-- apply_payment --
-- An applied payment's writes in one statement: the payment under its redelivery key, each
-- membership it pays for as it now stands (one for a channel's plan, several for a bundle), a
-- history row and a grant for botedge (carrying that row's id) per membership, the invoice paid
-- and the gateway event. Everything hangs on the payment's insert: when its key is taken,
-- nothing is written and no row comes back. The arrays are per channel, in one order.
WITH payment AS (
    INSERT INTO payments (gateway, external_payment_id, invoice_id, person_id, channel_id,
                          amount_minor, currency, paid_at, applied, flag)
    VALUES (%(gateway)s, %(external_payment_id)s, %(invoice_id)s, %(person_id)s,
            %(channel_id)s, %(amount_minor)s, %(currency)s, %(paid_at)s, true, %(detail)s)
    ON CONFLICT (gateway, external_payment_id) DO NOTHING
    RETURNING id
), changes AS (
    SELECT c.*
      FROM unnest(%(channel_ids)s::integer[], %(from_statuses)s::text[],
                  %(old_expires)s::timestamptz[], %(new_expires)s::timestamptz[],
                  %(next_checks)s::timestamptz[])
           AS c (channel_id, from_status, old_expires_at, expires_at, next_check_at)
     WHERE EXISTS (SELECT FROM payment)
), membership AS (
    INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,
                             next_check_at, updated_at)
    SELECT %(person_id)s, channel_id, %(status)s, expires_at, %(grace_days)s, next_check_at,
           %(now)s
      FROM changes
    ON CONFLICT (person_id, channel_id) DO UPDATE
       SET status = excluded.status,
           expires_at = excluded.expires_at,
           grace_days = excluded.grace_days,
           next_check_at = excluded.next_check_at,
           updated_at = excluded.updated_at
), event AS (
    INSERT INTO membership_events (person_id, channel_id, from_status, to_status,
                                   old_expires_at, new_expires_at, cause, payment_id, paid_at,
                                   period_days, at)
    SELECT %(person_id)s, c.channel_id, c.from_status, %(status)s, c.old_expires_at,
           c.expires_at, 'payment', payment.id, %(paid_at)s, %(period_days)s, %(now)s
      FROM changes c, payment
     ORDER BY c.channel_id
    RETURNING id, channel_id, new_expires_at
), access AS (
    INSERT INTO access_events (kind, person_id, channel_id, membership_event_id, expires_at,
                               created_at, available_at)
    SELECT 'grant', %(person_id)s, channel_id, id, new_expires_at, %(now)s, %(now)s
      FROM event
), invoice AS (
    UPDATE invoices
       SET status = 'paid', paid_at = coalesce(paid_at, %(paid_at)s)
     WHERE id = %(invoice_id)s AND EXISTS (SELECT FROM payment)
), gateway_event AS (
    INSERT INTO gateway_events (gateway, event_type, order_reference, external_payment_id,
                                outcome, payment_id, detail, payload, received_at)
    SELECT %(gateway)s, %(event_type)s, %(order_reference)s, %(external_payment_id)s,
           'applied', payment.id, %(detail)s, %(payload)s, %(now)s
      FROM payment
), counted AS (
    -- For the statistics: revenue when it was recorded, by the channel's managing bot.
    INSERT INTO stat_events (at, kind, bot_id, person_id, amount, currency)
    SELECT %(now)s, 'payment', (SELECT manager_bot_id FROM channels WHERE id = %(channel_id)s),
           %(person_id)s, %(amount_minor)s, %(currency)s
      FROM payment
)
SELECT id FROM payment;

-- insert_payment --
-- The redelivery guard: a second insert of the same key does nothing and returns no row.
INSERT INTO payments (gateway, external_payment_id, invoice_id, person_id, channel_id,
                      amount_minor, currency, paid_at, applied, flag)
VALUES (%(gateway)s, %(external_payment_id)s, %(invoice_id)s, %(person_id)s, %(channel_id)s,
        %(amount_minor)s, %(currency)s, %(paid_at)s, %(applied)s, %(flag)s)
ON CONFLICT (gateway, external_payment_id) DO NOTHING
RETURNING id;

-- payment_by_key --
SELECT p.id, p.invoice_id, p.amount_minor, p.currency, p.applied, i.order_reference
  FROM payments p
  JOIN invoices i ON i.id = p.invoice_id
 WHERE p.gateway = %(gateway)s AND p.external_payment_id = %(external_payment_id)s;

-- membership --
SELECT m.status AS membership_status, m.expires_at AS membership_expires_at,
       m.grace_days AS membership_grace_days, c.reminder_hours
  FROM memberships m JOIN channels c ON c.id = m.channel_id
 WHERE m.person_id = %(person_id)s AND m.channel_id = %(channel_id)s;

-- upsert_membership --
INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days, next_check_at,
                         updated_at)
VALUES (%(person_id)s, %(channel_id)s, %(status)s, %(expires_at)s, %(grace_days)s,
        %(next_check_at)s, %(now)s)
ON CONFLICT (person_id, channel_id) DO UPDATE
   SET status = excluded.status,
       expires_at = excluded.expires_at,
       grace_days = excluded.grace_days,
       next_check_at = excluded.next_check_at,
       updated_at = excluded.updated_at;

-- insert_membership_event --
INSERT INTO membership_events (person_id, channel_id, from_status, to_status, old_expires_at,
                               new_expires_at, cause, payment_id, paid_at, period_days, until,
                               reason, refund_id, request_key, at)
VALUES (%(person_id)s, %(channel_id)s, %(from_status)s, %(to_status)s, %(old_expires_at)s,
        %(new_expires_at)s, %(cause)s, %(payment_id)s, %(paid_at)s, %(period_days)s, %(until)s,
        %(reason)s, %(refund_id)s, %(request_key)s, %(now)s)
RETURNING id;

-- grant_channel --
-- A grant is for a paid channel; its grace comes from the default plan, if there is one.
SELECT c.id, c.reminder_hours,
       coalesce((SELECT p.grace_days FROM plans p
                  WHERE p.channel_id = c.id AND p.is_default), 0) AS grace_days
  FROM channels c
 WHERE c.id = %(channel_id)s AND c.is_paid;

-- trial_plan --
-- A trial on sale in a paid channel, with what its access needs: its days, its grace and the
-- channel's reminder hours.
SELECT p.name, p.period_days, p.grace_days, c.reminder_hours
  FROM plans p
  JOIN channels c ON c.id = p.channel_id
 WHERE p.id = %(plan_id)s AND p.channel_id = %(channel_id)s AND c.is_paid AND p.active
   AND p.kind = 'trial';

-- insert_trial --
-- Once per person and channel: nothing comes back when they had it.
INSERT INTO trials (person_id, channel_id, plan_id, taken_at)
VALUES (%(person_id)s, %(channel_id)s, %(plan_id)s, %(now)s)
ON CONFLICT (person_id, channel_id) DO NOTHING
RETURNING plan_id;

-- code_misses --
-- The person's wrong codes in the window, and when the first of them was sent.
SELECT count(*) AS count, min(at) AS oldest
  FROM access_code_misses
 WHERE telegram_user_id = %(telegram_user_id)s AND at > %(since)s;

-- insert_code_miss --
WITH gone AS (
    DELETE FROM access_code_misses
     WHERE telegram_user_id = %(telegram_user_id)s AND at <= %(since)s
)
INSERT INTO access_code_misses (telegram_user_id, at) VALUES (%(telegram_user_id)s, %(now)s);

-- access_code_for_update --
-- A code that is on, of a paid channel, locked so its uses are counted one at a time
-- (`code_uses`, a statement of its own: its snapshot is taken once the lock is held); with what
-- its grant needs (grace days from the default plan, the channel's reminder hours).
SELECT a.id, a.channel_id, a.days, a.max_uses, a.expires_at, c.title, c.reminder_hours,
       coalesce((SELECT p.grace_days FROM plans p
                  WHERE p.channel_id = c.id AND p.is_default), 0) AS grace_days
  FROM access_codes a
  JOIN channels c ON c.id = a.channel_id
 WHERE a.code = %(code)s AND a.active AND c.is_paid
   FOR UPDATE OF a;

-- code_uses --
SELECT count(*) AS uses FROM access_code_uses WHERE code_id = %(code_id)s;

-- insert_code_use --
-- Once per person and code: nothing comes back when they used it.
INSERT INTO access_code_uses (code_id, person_id, used_at)
VALUES (%(code_id)s, %(person_id)s, %(now)s)
ON CONFLICT (code_id, person_id) DO NOTHING
RETURNING code_id;

-- lock_membership --
SELECT pg_advisory_xact_lock(%(person_id)s, %(channel_id)s);

-- insert_access_event --
-- Written in the same transaction as the membership change: botedge sees both or neither.
INSERT INTO access_events (kind, person_id, channel_id, membership_event_id, expires_at,
                           created_at, available_at)
VALUES (%(kind)s, %(person_id)s, %(channel_id)s, %(membership_event_id)s, %(expires_at)s,
        %(now)s, %(now)s);

-- insert_gateway_event --
INSERT INTO gateway_events (gateway, event_type, order_reference, external_payment_id, outcome,
                            payment_id, detail, payload, received_at)
VALUES (%(gateway)s, %(event_type)s, %(order_reference)s, %(external_payment_id)s, %(outcome)s,
        %(payment_id)s, %(detail)s, %(payload)s, %(now)s);

-- due_memberships --
-- A chunk of the due memberships through memberships_due, oldest first (the key breaks ties),
-- each then under the membership lock payments take. SKIP LOCKED lets a second sweep take
-- other rows at once; the try-lock never waits for a payment that holds a membership: that
-- one is left for the next call. The lock is taken in the outer query, for the chunk's rows
-- only.
WITH due AS (
    SELECT person_id, channel_id, next_check_at
      FROM memberships
     WHERE next_check_at IS NOT NULL AND next_check_at < %(now)s
     ORDER BY next_check_at, person_id, channel_id
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
SELECT person_id, channel_id,
       pg_try_advisory_xact_lock(person_id::int4, channel_id::int4) AS locked
  FROM due
 ORDER BY next_check_at, person_id, channel_id;

-- locked_memberships --
-- Read again once locked: a payment may have changed one between the chunk's read and its lock.
SELECT m.person_id, m.channel_id, m.status, m.expires_at, m.grace_days, c.reminder_hours
  FROM unnest(%(people)s::int4[], %(channels)s::int4[]) AS k (person_id, channel_id)
  JOIN memberships m ON (m.person_id, m.channel_id) = (k.person_id, k.channel_id)
  JOIN channels c ON c.id = m.channel_id;

-- move_memberships --
-- Compare-and-set on what was read under the lock; the moved come back for their events.
UPDATE memberships m
   SET status = k.to_status, next_check_at = k.next_check_at, updated_at = %(now)s
  FROM unnest(%(people)s::int4[], %(channels)s::int4[], %(from_status)s::text[],
              %(to_status)s::text[], %(expires_at)s::timestamptz[],
              %(next_check_at)s::timestamptz[])
       AS k (person_id, channel_id, from_status, to_status, expires_at, next_check_at)
 WHERE (m.person_id, m.channel_id) = (k.person_id, k.channel_id)
   AND m.status = k.from_status AND m.expires_at = k.expires_at
RETURNING m.person_id, m.channel_id, k.from_status, k.to_status, k.expires_at;

-- insert_sweep_events --
-- Each move's history row and its access event (grace: a reminder; expired: a removal), in the
-- move's transaction: botedge sees both or neither.
WITH moved AS (
    INSERT INTO membership_events (person_id, channel_id, from_status, to_status,
                                   old_expires_at, new_expires_at, cause, at)
    SELECT person_id, channel_id, from_status, to_status, expires_at, expires_at, 'sweep',
           %(now)s
      FROM unnest(%(people)s::int4[], %(channels)s::int4[], %(from_status)s::text[],
                  %(to_status)s::text[], %(expires_at)s::timestamptz[])
           AS k (person_id, channel_id, from_status, to_status, expires_at)
    RETURNING id, person_id, channel_id, to_status, new_expires_at
)
INSERT INTO access_events (kind, person_id, channel_id, membership_event_id, expires_at,
                           created_at, available_at)
SELECT CASE to_status WHEN 'grace' THEN 'reminder' ELSE 'revoke' END, person_id, channel_id,
       id, new_expires_at, %(now)s, %(now)s
  FROM moved
 ORDER BY id;

-- insert_expiry_notices --
-- Once per period and reminder, by the key: a second sweep finding one due writes nothing.
INSERT INTO access_events (kind, person_id, channel_id, notice_key, notice_hours, expires_at,
                           created_at, available_at)
SELECT 'expiry_notice', person_id, channel_id, notice_key, hours, expires_at, %(now)s, %(now)s
  FROM unnest(%(people)s::int4[], %(channels)s::int4[], %(keys)s::text[], %(hours)s::int4[],
              %(expires_at)s::timestamptz[])
       AS k (person_id, channel_id, notice_key, hours, expires_at)
ON CONFLICT (notice_key) DO NOTHING
RETURNING person_id;

-- set_next_checks --
-- Memberships that stay as they are: when the sweep looks again.
UPDATE memberships m
   SET next_check_at = k.next_check_at, updated_at = %(now)s
  FROM unnest(%(people)s::int4[], %(channels)s::int4[], %(status)s::text[],
              %(expires_at)s::timestamptz[], %(next_check_at)s::timestamptz[])
       AS k (person_id, channel_id, status, expires_at, next_check_at)
 WHERE (m.person_id, m.channel_id) = (k.person_id, k.channel_id)
   AND m.status = k.status AND m.expires_at = k.expires_at;

-- expire_open_invoices --
-- Invoices nobody paid within 24 hours; a late payment for one is still applied.
WITH stale AS (
    SELECT id FROM invoices
     WHERE status = 'open' AND expires_at < %(now)s
     ORDER BY expires_at
     LIMIT %(limit)s
     FOR UPDATE SKIP LOCKED
)
, expired AS (
    UPDATE invoices i SET status = 'expired' FROM stale WHERE i.id = stale.id RETURNING i.id
), released AS (
    -- The coupon use of an invoice nobody paid is given back.
    UPDATE coupon_redemptions r SET released_at = %(now)s
      FROM expired e
     WHERE r.invoice_id = e.id AND r.released_at IS NULL
)
SELECT id FROM expired;

-- checkout_lapsed_notices --
-- The person behind each invoice just expired hears of it once, with a way to pay again,
-- unless they are active in the channel (another invoice paid, or a grant).
INSERT INTO access_events (kind, person_id, channel_id, notice_key, expires_at, created_at,
                           available_at)
SELECT 'checkout_lapsed', i.person_id, i.channel_id, 'lapsed:' || i.id, i.expires_at,
       %(now)s, %(now)s
  FROM invoices i
 WHERE i.id = ANY(%(ids)s::int4[])
   AND NOT EXISTS (SELECT 1 FROM memberships m
                    WHERE m.person_id = i.person_id AND m.channel_id = i.channel_id
                      AND m.status = 'active')
ON CONFLICT (notice_key) DO NOTHING;

-- checkout_declined_notice --
-- A gateway's decline of an open invoice: the person hears of it once per invoice and status
-- (a redelivery writes nothing); paying the same invoice later is still applied.
INSERT INTO access_events (kind, person_id, channel_id, notice_key, expires_at, created_at,
                           available_at)
SELECT 'checkout_declined', person_id, channel_id,
       'declined:' || id || ':' || %(event_type)s, expires_at, %(now)s, %(now)s
  FROM invoices
 WHERE order_reference = %(order_reference)s AND status = 'open'
ON CONFLICT (notice_key) DO NOTHING;

-- claim_tron_claims --
-- Due claims for the verifier, any number of billing processes at once.
WITH due AS (
    SELECT id FROM tron_claims
     WHERE (state = 'pending' OR (state = 'processing' AND claim_expires_at < %(now)s))
       AND next_check_at <= %(now)s
     ORDER BY next_check_at, id
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
UPDATE tron_claims c
   SET state = 'processing', claim_token = gen_random_uuid(),
       claim_expires_at = %(now)s + make_interval(secs => %(lease)s), attempts = c.attempts + 1
  FROM due
 WHERE c.id = due.id
RETURNING c.id, c.tx_hash, c.order_id, c.submitted_at, c.not_found_seconds, c.last_checked_at,
          c.claim_token;

-- tron_order --
SELECT id, status, pay_to, accepts_usdt, accepts_trx, approved_at, trx_rate, price_micros,
       paid_micros
  FROM ad_orders WHERE id = %(id)s;

-- tron_claim_later --
-- Not settled yet (or TronGrid could not be asked): look again later.
UPDATE tron_claims
   SET state = 'pending', claim_token = NULL, claim_expires_at = NULL,
       not_found_seconds = %(not_found_seconds)s, last_checked_at = %(now)s,
       next_check_at = %(next_check_at)s
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'processing';

-- tron_claim_end --
-- Compare-and-set on the claim: a verifier that lost it changes nothing.
UPDATE tron_claims
   SET state = %(state)s, reason = %(reason)s, claim_token = NULL, claim_expires_at = NULL,
       last_checked_at = %(now)s
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'processing'
RETURNING id;

-- lock_ad_order --
SELECT pg_advisory_xact_lock(hashtextextended('ad_order:' || %(id)s::text, 0));

-- ad_order_for_update --
SELECT id, status, price_micros, paid_micros, due_at FROM ad_orders WHERE id = %(id)s FOR UPDATE;

-- insert_ad_credit --
INSERT INTO ad_credits (claim_id, order_id, coin, amount, micros, sender, block_time)
VALUES (%(claim_id)s, %(order_id)s, %(coin)s, %(amount)s, %(micros)s, %(sender)s,
        %(block_time)s)
ON CONFLICT (claim_id) DO NOTHING
RETURNING id;

-- add_to_ad_order --
UPDATE ad_orders
   SET paid_micros = %(paid_micros)s, status = %(status)s, due_at = %(due_at)s,
       updated_at = %(now)s
 WHERE id = %(id)s;

-- insert_ad_order_event --
INSERT INTO ad_order_events (order_id, kind, detail, cause, created_at)
VALUES (%(order_id)s, %(kind)s, %(detail)s, %(cause)s, %(now)s)
ON CONFLICT (order_id, kind, cause) DO NOTHING;

-- ad_order_for_step --
SELECT id, status, accepts_trx, price_micros, paid_micros FROM ad_orders
 WHERE id = %(id)s FOR UPDATE;

-- shop_address --
SELECT tron_address FROM workspace;

-- approve_ad_order --
UPDATE ad_orders
   SET status = 'approved', approved_at = %(now)s, pay_to = %(pay_to)s,
       trx_rate = %(trx_rate)s, trx_rate_source = %(trx_rate_source)s,
       trx_rate_at = %(trx_rate_at)s, due_at = %(due_at)s, updated_at = %(now)s
 WHERE id = %(id)s
RETURNING id, status, price_micros, paid_micros, accepts_usdt, accepts_trx, approved_at,
          pay_to, trx_rate::text AS trx_rate, trx_rate_source, due_at;

-- end_ad_order --
UPDATE ad_orders SET status = %(status)s, due_at = NULL, updated_at = %(now)s
 WHERE id = %(id)s
RETURNING id, status, price_micros, paid_micros, accepts_usdt, accepts_trx, approved_at,
          pay_to, trx_rate::text AS trx_rate, trx_rate_source, due_at;

-- ad_order_brief --
SELECT id, status, accepts_trx FROM ad_orders WHERE id = %(id)s;

-- expire_ad_orders --
-- Approved and unpaid past the deadline, or a part payment whose rest did not come: expired,
-- each with its event. A credit racing this waits on the row and finds the order expired (the
-- money is still recorded); one that committed first leaves nothing to expire.
WITH gone AS (
    UPDATE ad_orders SET status = 'expired', updated_at = %(now)s
     WHERE id IN (SELECT id FROM ad_orders
                   WHERE status IN ('approved', 'part_paid') AND due_at <= %(now)s
                   ORDER BY due_at, id LIMIT %(limit)s
                     FOR UPDATE SKIP LOCKED)
       AND status IN ('approved', 'part_paid') AND due_at <= %(now)s
    RETURNING id, paid_micros, price_micros
)
INSERT INTO ad_order_events (order_id, kind, detail, cause, created_at)
SELECT id, 'expired', jsonb_build_object('paid_micros', paid_micros, 'price_micros', price_micros),
       'deadline', %(now)s
  FROM gone
ON CONFLICT (order_id, kind, cause) DO NOTHING
RETURNING order_id;

-- remind_part_paid --
-- A part-paid order is reminded once when 24 hours are left, once more at 4.
INSERT INTO ad_order_events (order_id, kind, detail, cause, created_at)
SELECT o.id, 'reminder',
       jsonb_build_object('due_at', o.due_at, 'left_micros', o.price_micros - o.paid_micros),
       'reminder:' || r.mark, %(now)s
  FROM ad_orders o
  JOIN (VALUES ('24h', interval '24 hours'), ('4h', interval '4 hours')) AS r (mark, left_)
    ON o.due_at - %(now)s <= r.left_
       -- Found with under 4 hours left: the 4-hour reminder only.
   AND (r.mark = '4h' OR o.due_at - %(now)s > interval '4 hours')
 WHERE o.status = 'part_paid' AND o.due_at > %(now)s
ON CONFLICT (order_id, kind, cause) DO NOTHING
RETURNING order_id;

-- stars_invoice --
-- What a Stars pre-checkout is checked against: the invoice its payload names, and whose.
SELECT i.status, i.expires_at, i.amount_minor, i.currency, i.gateway, p.telegram_user_id
  FROM invoices i JOIN people p ON p.id = i.person_id
 WHERE i.order_reference = %(order_reference)s;

-- claim_telegram_payments --
-- Stars payments botedge recorded, for billing's ledger loop; any number of billing processes.
WITH due AS (
    SELECT id FROM telegram_payments
     WHERE (state = 'pending' OR (state = 'processing' AND claim_expires_at < %(now)s))
       AND available_at <= %(now)s
     ORDER BY available_at, id
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
UPDATE telegram_payments t
   SET state = 'processing', claim_token = gen_random_uuid(),
       claim_expires_at = %(now)s + make_interval(secs => %(lease)s), attempts = t.attempts + 1
  FROM due
 WHERE t.id = due.id
RETURNING t.id, t.kind, t.bot_id, t.person_id, t.invoice_payload, t.currency, t.total_amount,
          t.telegram_payment_charge_id, t.provider_payment_charge_id, t.is_recurring,
          t.is_first_recurring, t.subscription_expiration_date, t.paid_at, t.attempts,
          t.claim_token;

-- finish_telegram_payment --
-- Compare-and-set on the claim: a loop that lost it changes nothing.
UPDATE telegram_payments
   SET state = 'done', outcome = %(outcome)s, done_at = %(now)s, claim_token = NULL,
       claim_expires_at = NULL, last_error = NULL
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'processing';

-- retry_telegram_payment --
UPDATE telegram_payments
   SET state = 'pending', claim_token = NULL, claim_expires_at = NULL,
       available_at = %(available_at)s, last_error = %(error)s
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'processing';

-- lock_memberships_of_payment --
-- A refund's locks: each membership the payment extended, in ascending channel order as a
-- payment takes them (the output list is evaluated after the sort). One row with a null
-- channel when the payment extended nothing; no row when there is no such payment.
SELECT pay.id AS payment_id, pay.person_id, ch.channel_id,
       pg_advisory_xact_lock(pay.person_id, ch.channel_id)
  FROM payments pay
  LEFT JOIN LATERAL (
      SELECT DISTINCT e.channel_id FROM membership_events e
       WHERE e.payment_id = pay.id AND e.cause = 'payment'
  ) ch ON true
 WHERE pay.gateway = %(gateway)s AND pay.external_payment_id = %(external_payment_id)s
 ORDER BY ch.channel_id;

-- insert_refund --
-- Once per payment and once per key: a redelivery, or a second refund of the payment, writes
-- nothing and returns no row.
INSERT INTO refunds (gateway, external_refund_id, payment_id, amount_minor, currency, kind,
                     received_at)
VALUES (%(gateway)s, %(external_refund_id)s, %(payment_id)s, %(amount_minor)s, %(currency)s,
        %(kind)s, %(now)s)
ON CONFLICT DO NOTHING
RETURNING id;

-- stars_payment_to_refund --
-- A payment the owner asks to refund, with where a Stars one was paid: its bot and person.
SELECT pay.id, pay.gateway, pay.applied, pay.external_payment_id, p.telegram_user_id,
       t.bot_id, EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = pay.id) AS refunded
  FROM payments pay
  JOIN people p ON p.id = pay.person_id
  LEFT JOIN telegram_payments t
         ON t.kind = 'payment' AND t.telegram_payment_charge_id = pay.external_payment_id
        AND pay.gateway = 'telegram_stars'
 WHERE pay.id = %(payment_id)s;

-- insert_star_refund_request --
-- Once per payment: asking again returns the request there is.
WITH made AS (
    INSERT INTO star_refund_requests (payment_id, bot_id, telegram_user_id,
                                      telegram_payment_charge_id, requested_by, created_at)
    VALUES (%(payment_id)s, %(bot_id)s, %(telegram_user_id)s, %(charge_id)s, %(requested_by)s,
            %(now)s)
    ON CONFLICT (payment_id) DO NOTHING
    RETURNING id, state, created_at
)
SELECT id, state, created_at, true AS made FROM made
UNION ALL
SELECT id, state, created_at, false FROM star_refund_requests
 WHERE payment_id = %(payment_id)s AND NOT EXISTS (SELECT 1 FROM made);

-- ledger_to_check --
-- Memberships with what they say and what their history says: the changes that survive
-- (payments not refunded, grants, trials, removals) in the order applied, and the channel's reminder
-- hours. All of them, those changed since `since`, or one person's in `channel_ids` (a
-- refund's, read under the locks once the refund is written, so its payment is left out).
SELECT m.person_id, m.channel_id, p.telegram_user_id, c.title, m.status, m.expires_at,
       m.grace_days, c.reminder_hours,
       coalesce(array_agg(e.cause ORDER BY e.id) FILTER (WHERE e.id IS NOT NULL), '{}')
           AS causes,
       coalesce(array_agg(e.paid_at ORDER BY e.id) FILTER (WHERE e.id IS NOT NULL), '{}')
           AS paid_ats,
       coalesce(array_agg(e.period_days ORDER BY e.id) FILTER (WHERE e.id IS NOT NULL), '{}')
           AS periods,
       coalesce(array_agg(e.until ORDER BY e.id) FILTER (WHERE e.id IS NOT NULL), '{}')
           AS untils
  FROM memberships m
  JOIN people p ON p.id = m.person_id
  JOIN channels c ON c.id = m.channel_id
  LEFT JOIN membership_events e
         ON e.person_id = m.person_id AND e.channel_id = m.channel_id
        AND (e.cause IN ('grant', 'trial', 'removal')
             OR (e.cause = 'payment'
                 AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = e.payment_id)))
 WHERE (%(since)s::timestamptz IS NULL OR m.updated_at >= %(since)s)
   AND (%(person_id)s::integer IS NULL
        OR (m.person_id = %(person_id)s AND m.channel_id = ANY (%(channel_ids)s)))
 GROUP BY m.person_id, m.channel_id, p.telegram_user_id, c.title, m.status, m.expires_at,
          m.grace_days, c.reminder_hours
 ORDER BY m.person_id, m.channel_id;

-- person_of --
-- The person Telegram knows by that id, if billing has met them.
SELECT id FROM people WHERE telegram_user_id = %(telegram_user_id)s;

-- removal_recorded --
-- The membership a removal's request key was used for, if it was.
SELECT person_id, channel_id FROM membership_events WHERE request_key = %(request_key)s;

-- grant_recorded --
-- The same grant already in the membership's history.
SELECT 1 FROM membership_events
 WHERE person_id = %(person_id)s AND channel_id = %(channel_id)s AND cause = %(cause)s
   AND until = %(until)s
 LIMIT 1;

-- channel_people_to_check --
-- Each paid channel with a manager bot, and whom to ask Telegram about there: those seen
-- inside and those paying (active or grace); the paying among them.
WITH asked AS (
    SELECT channel_id, person_id, false AS paying FROM channel_members WHERE is_member
    UNION ALL
    SELECT channel_id, person_id, true FROM memberships WHERE status IN ('active', 'grace')
)
SELECT c.id AS channel_id, c.title,
       array_agg(DISTINCT p.telegram_user_id) AS user_ids,
       coalesce(array_agg(DISTINCT p.telegram_user_id) FILTER (WHERE a.paying), '{}') AS paying
  FROM asked a
  JOIN channels c ON c.id = a.channel_id
  JOIN people p ON p.id = a.person_id
 WHERE c.is_paid AND c.manager_bot_id IS NOT NULL
 GROUP BY c.id, c.title
 ORDER BY c.id;

-- payers_standing --
-- Payers of a channel whom Telegram shows outside: when their current access began (the
-- latest change that took them from no membership or an expired one to access), when we last
-- knew them inside, and their latest invite (a grant access event) with whether
-- reconciliation wrote it.
SELECT p.telegram_user_id,
       (SELECT max(me.at) FROM membership_events me
         WHERE me.person_id = p.id AND me.channel_id = %(channel_id)s
           AND (me.from_status IS NULL OR me.from_status = 'expired')
           AND me.to_status IN ('active', 'grace')) AS access_began_at,
       cm.last_inside_at,
       invite.created_at AS invited_at,
       coalesce(invite.cause = 'reconcile', false) AS invited_by_reconcile
  FROM people p
  LEFT JOIN channel_members cm ON cm.channel_id = %(channel_id)s AND cm.person_id = p.id
  LEFT JOIN LATERAL (
      SELECT a.created_at, me.cause
        FROM access_events a
        JOIN membership_events me ON me.id = a.membership_event_id
       WHERE a.person_id = p.id AND a.channel_id = %(channel_id)s AND a.kind = 'grant'
       ORDER BY a.id DESC
       LIMIT 1
  ) invite ON true
 WHERE p.telegram_user_id = ANY (%(user_ids)s);

-- star_bots --
-- The bots to ask for their Star transactions.
SELECT id FROM bots WHERE status = 'active' ORDER BY id;

-- our_star_payments --
-- Our Stars payments through a bot, by Telegram's charge id, with when they were paid.
SELECT pay.external_payment_id AS charge_id, pay.paid_at
  FROM payments pay
  JOIN telegram_payments t
    ON t.kind = 'payment' AND t.telegram_payment_charge_id = pay.external_payment_id
 WHERE pay.gateway = 'telegram_stars' AND t.bot_id = %(bot_id)s;

-- star_charge_known --
-- Which of these charges our ledger has, through whichever bot.
SELECT external_payment_id AS charge_id FROM payments
 WHERE gateway = 'telegram_stars' AND external_payment_id = ANY (%(charge_ids)s);
