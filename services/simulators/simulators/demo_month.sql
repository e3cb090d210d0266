-- month_fresh --
-- The month is played once, into a system nobody has used yet.
SELECT NOT EXISTS (SELECT FROM people) AND NOT EXISTS (SELECT FROM payments) AS fresh;

-- month_busy --
-- What the system still has to do of what the month's people did.
SELECT (SELECT count(*) FROM inbox WHERE state IN ('waiting', 'processing'))
     + (SELECT count(*) FROM outbox WHERE state = 'pending')
     + (SELECT count(*) FROM access_events WHERE state IN ('pending', 'processing'))
     + (SELECT count(*) FROM ad_order_events WHERE state IN ('pending', 'processing'))
     + (SELECT count(*) FROM tron_claims WHERE state IN ('pending', 'processing'))
     + (SELECT count(*) FROM broadcasts WHERE state NOT IN ('done', 'cancelled')) AS busy;

-- month_shift_table --
CREATE TEMP TABLE month_shift (
    telegram_user_id bigint PRIMARY KEY,
    back interval NOT NULL,
    person_id integer
) ON COMMIT DROP;

-- month_shift_copy --
COPY month_shift (telegram_user_id, back) FROM STDIN;

-- month_move_people --
-- Everything a person of the month did, and what the system did for them, moved back by their
-- offset together; several statements, no parameters (one simple query).
UPDATE month_shift s SET person_id = p.id FROM people p WHERE p.telegram_user_id = s.telegram_user_id;
UPDATE people p SET created_at = p.created_at - s.back, updated_at = p.updated_at - s.back
  FROM month_shift s WHERE p.id = s.person_id;
UPDATE bot_people b
   SET first_seen_at = b.first_seen_at - s.back, last_seen_at = b.last_seen_at - s.back,
       blocked_at = b.blocked_at - s.back, unreachable_at = b.unreachable_at - s.back
  FROM month_shift s WHERE b.person_id = s.person_id;
UPDATE stat_events e SET at = e.at - s.back FROM month_shift s WHERE e.person_id = s.person_id;
UPDATE content_deliveries d SET delivered_at = d.delivered_at - s.back
  FROM month_shift s WHERE d.person_id = s.person_id;
UPDATE conversations c SET expires_at = c.expires_at - s.back, updated_at = c.updated_at - s.back
  FROM month_shift s WHERE c.person_id = s.person_id;
UPDATE channel_members m SET updated_at = m.updated_at - s.back
  FROM month_shift s WHERE m.person_id = s.person_id;
UPDATE access_links l SET created_at = l.created_at - s.back
  FROM month_shift s WHERE l.person_id = s.person_id;
UPDATE campaign_joins j SET joined_at = j.joined_at - s.back, left_at = j.left_at - s.back
  FROM month_shift s WHERE j.person_id = s.person_id;
UPDATE gateway_events g SET received_at = g.received_at - s.back
  FROM invoices i JOIN month_shift s ON s.person_id = i.person_id
 WHERE g.order_reference = i.order_reference;
UPDATE invoices i
   SET created_at = i.created_at - s.back, expires_at = i.expires_at - s.back,
       paid_at = i.paid_at - s.back
  FROM month_shift s WHERE i.person_id = s.person_id;
UPDATE payments p SET paid_at = p.paid_at - s.back, created_at = p.created_at - s.back
  FROM month_shift s WHERE p.person_id = s.person_id;
UPDATE memberships m
   SET expires_at = m.expires_at - s.back, next_check_at = m.next_check_at - s.back,
       updated_at = m.updated_at - s.back
  FROM month_shift s WHERE m.person_id = s.person_id;
UPDATE membership_events e
   SET old_expires_at = e.old_expires_at - s.back, new_expires_at = e.new_expires_at - s.back,
       paid_at = e.paid_at - s.back, at = e.at - s.back, until = e.until - s.back
  FROM month_shift s WHERE e.person_id = s.person_id;
UPDATE access_events a
   SET expires_at = a.expires_at - s.back, created_at = a.created_at - s.back,
       available_at = a.available_at - s.back, done_at = a.done_at - s.back
  FROM month_shift s WHERE a.person_id = s.person_id;
UPDATE inbox i
   SET received_at = i.received_at - s.back, available_at = i.available_at - s.back,
       done_at = i.done_at - s.back
  FROM month_shift s WHERE i.chat_key = s.telegram_user_id;
UPDATE outbox o
   SET created_at = o.created_at - s.back, available_at = o.available_at - s.back,
       sent_at = o.sent_at - s.back
  FROM month_shift s WHERE o.chat_id = s.telegram_user_id AND o.broadcast_id IS NULL;
UPDATE ad_order_events e
   SET created_at = e.created_at - s.back, available_at = e.available_at - s.back,
       done_at = e.done_at - s.back
  FROM ad_orders o JOIN month_shift s ON s.person_id = o.person_id WHERE e.order_id = o.id;
UPDATE tron_claims c
   SET submitted_at = c.submitted_at - s.back, last_checked_at = c.last_checked_at - s.back,
       next_check_at = c.next_check_at - s.back
  FROM ad_orders o JOIN month_shift s ON s.person_id = o.person_id WHERE c.order_id = o.id;
UPDATE ad_credits c SET block_time = c.block_time - s.back, created_at = c.created_at - s.back
  FROM ad_orders o JOIN month_shift s ON s.person_id = o.person_id WHERE c.order_id = o.id;
UPDATE audit_log a SET at = a.at - s.back
  FROM ad_orders o JOIN month_shift s ON s.person_id = o.person_id
 WHERE a.target = 'ad_order:' || o.id;
UPDATE ad_orders o
   SET approved_at = o.approved_at - s.back, trx_rate_at = o.trx_rate_at - s.back,
       due_at = o.due_at - s.back, created_at = o.created_at - s.back,
       updated_at = o.updated_at - s.back
  FROM month_shift s WHERE o.person_id = s.person_id;
-- The business existed before its month; the statistics are counted again from the start.
UPDATE workspace SET created_at = least(created_at, now() - interval '31 days');
UPDATE team_members SET created_at = least(created_at, now() - interval '31 days');
UPDATE bots SET created_at = least(created_at, now() - interval '31 days');
UPDATE channels SET created_at = least(created_at, now() - interval '31 days');
UPDATE contents SET created_at = least(created_at, now() - interval '31 days'),
                    updated_at = least(updated_at, now() - interval '31 days');
UPDATE plans SET created_at = least(created_at, now() - interval '31 days');
UPDATE ad_slots SET created_at = least(created_at, now() - interval '31 days');
UPDATE campaigns SET created_at = least(created_at, now() - interval '30 days 12 hours');
UPDATE audit_log SET at = least(at, now() - interval '30 days 12 hours')
 WHERE target LIKE 'campaign:%';
DELETE FROM stat_hours;
DELETE FROM stat_rollup;

-- month_move_broadcast --
-- A broadcast and its sends moved back to its day.
WITH moved AS (
    UPDATE broadcasts
       SET created_at = created_at - %(back)s, started_at = started_at - %(back)s,
           finished_at = finished_at - %(back)s
     WHERE id = %(id)s
    RETURNING id
), sends AS (
    UPDATE outbox
       SET created_at = created_at - %(back)s, available_at = available_at - %(back)s,
           sent_at = sent_at - %(back)s
     WHERE broadcast_id = %(id)s
)
UPDATE audit_log SET at = at - %(back)s WHERE target = 'broadcast:' || %(id)s;
