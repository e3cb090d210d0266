-- Time: a moment recorded or a cutoff takes %(now)s from the process's clock, which tests
-- move. An expiry several processes compare (an update's or broadcast's claim, a lease, a
-- worker's presence, a retry's or a pause's end, a send's wait, the statistics' closed hours)
-- reads the database's now(), the one clock every host shares: a worker whose clock ran ahead
-- would take claims early.

-- bot_for_webhook --
SELECT id, status, mode, webhook_secret_encrypted, token_encrypted FROM bots WHERE id = %(bot_id)s;

-- active_bots --
-- What a worker serves: every active bot whose token still works.
SELECT id, telegram_bot_id, username, token_encrypted, mode, poll_offset, poll_backoff_until
  FROM bots
 WHERE status = 'active' AND token_invalid_at IS NULL
 ORDER BY id;

-- insert_bot --
-- Paused until Telegram has accepted where to send its updates (activate_bot).
INSERT INTO bots (telegram_bot_id, username, token_encrypted, webhook_secret_encrypted, mode,
                  status)
VALUES (%(telegram_bot_id)s, %(username)s, %(token_encrypted)s, %(webhook_secret_encrypted)s,
        %(mode)s, 'paused')
ON CONFLICT (telegram_bot_id) DO UPDATE
   SET username = excluded.username, token_encrypted = excluded.token_encrypted,
       webhook_secret_encrypted = excluded.webhook_secret_encrypted,
       mode = excluded.mode, token_invalid_at = NULL, status = 'paused', removed_at = NULL
RETURNING id;

-- set_webhook_url --
UPDATE bots SET webhook_url = %(url)s WHERE id = %(bot_id)s;

-- bots_to_repoint --
-- Active webhook bots Telegram was not told to send to this address (PUBLIC_BASE_URL moved,
-- or pointed before the address was kept).
SELECT id, mode, status, token_encrypted, webhook_secret_encrypted
  FROM bots
 WHERE status = 'active' AND mode = 'webhook' AND token_invalid_at IS NULL
   AND webhook_url IS DISTINCT FROM %(base)s || '/telegram/' || id || '/webhook'
 ORDER BY id;

-- bot_to_point --
-- A bot as resuming or removing it needs it: its token and where Telegram sends its updates.
SELECT id, telegram_bot_id, username, mode, status, token_encrypted, webhook_secret_encrypted
  FROM bots
 WHERE id = %(bot_id)s;

-- owner_pause_bot --
-- A removed bot stays removed: it comes back only by adding its token again.
UPDATE bots SET status = 'paused'
 WHERE id = %(bot_id)s AND status <> 'removed'
RETURNING id, telegram_bot_id, username, mode, status;

-- owner_resume_bot --
UPDATE bots SET status = 'active', last_error = NULL
 WHERE id = %(bot_id)s AND status <> 'removed'
RETURNING id, telegram_bot_id, username, mode, status;

-- owner_remove_bot --
UPDATE bots SET status = 'removed', removed_at = coalesce(removed_at, %(now)s)
 WHERE id = %(bot_id)s
RETURNING id, telegram_bot_id, username, mode, status;

-- activate_bot --
UPDATE bots SET status = 'active', last_error = NULL WHERE id = %(bot_id)s;

-- insert_update --
-- The redelivery guard: the key outlives the update's handling.
INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload)
VALUES (%(bot_id)s, %(update_id)s, %(chat_key)s, %(kind)s, %(payload)s)
ON CONFLICT (bot_id, update_id) DO NOTHING
RETURNING id;

-- poll_start --
-- Where a poller starts: the stored offset, and whether it is too old to trust (no update for
-- a week: Telegram's next id is random then, and may lie below it).
SELECT poll_offset,
       poll_offset > 0 AND (last_update_at IS NULL
                            OR last_update_at < %(now)s::timestamptz - interval '7 days') AS stale
  FROM bots
 WHERE id = %(bot_id)s;

-- advance_poll_offset --
-- In the transaction that stored the batch: the offset moves only past committed updates, and
-- backwards only when Telegram's numbering started over.
UPDATE bots SET poll_offset = CASE WHEN %(restart)s THEN %(offset)s
                                   ELSE greatest(poll_offset, %(offset)s) END,
                last_update_at = %(now)s, last_error = NULL, poll_backoff_until = NULL
 WHERE id = %(bot_id)s;

-- record_bot_error --
UPDATE bots SET last_error = %(error)s, last_error_at = %(now)s,
                poll_backoff_until = %(backoff_until)s
 WHERE id = %(bot_id)s;

-- bot_pause_left --
-- Seconds left of a 429 pause recorded by any process (0 when none).
SELECT greatest(0, coalesce(extract(epoch FROM paused_until - now()), 0))::float8 AS left
  FROM bots WHERE id = %(bot_id)s;

-- mark_telegram_failing --
-- The first opening of an outage is kept: "since" is when it began.
UPDATE bots SET telegram_failing_since = coalesce(telegram_failing_since, %(since)s)
 WHERE id = %(bot_id)s;

-- clear_telegram_failing --
UPDATE bots SET telegram_failing_since = NULL
 WHERE id = %(bot_id)s AND telegram_failing_since IS NOT NULL;

-- pause_bot --
-- Only ever lengthened: two lanes told different waits keep the longer.
UPDATE bots
   SET paused_until = greatest(coalesce(paused_until, now()),
                               now() + make_interval(secs => %(seconds)s))
 WHERE id = %(bot_id)s;

-- mark_token_invalid --
UPDATE bots SET token_invalid_at = %(now)s, last_error = %(error)s, last_error_at = %(now)s
 WHERE id = %(bot_id)s;

-- claim_plan --
-- In the claim's transaction: the heads come out of inbox_waiting in id order, never read
-- whole and sorted. The planner prefers that whenever its statistics say little is waiting,
-- which is what they say while a backlog grows (make bench-claim: 1.8 s a claim at 100,000
-- waiting). Every other sort in the claim has no alternative, so only this choice changes.
SET LOCAL enable_sort = off;

-- claim_updates --
-- Take up to %(limit)s updates: for each person (bot, chat) only its earliest unfinished
-- update, and only when none of theirs is in hand; plus updates whose claim ran out. Updates
-- of the bots in %(own)s (those this worker sends for: their replies need no hand-over) come
-- first; a fresh one of a bot another worker sends for is left to that worker. Any claimable
-- for over %(fresh)s seconds comes before both, taken by whoever asks: a busy or dead sender's
-- bot waits no longer than that. The own are picked from the first heads in arrival order,
-- four times as many as asked for.
--
-- A queue's statistics are always out of date (its backlog grows faster than autovacuum
-- looks), so no step leaves the planner a choice whose cost grows with the backlog: the heads
-- are walked along inbox_waiting in id order (claim_plan), each person's first row looked up
-- by a subquery (not a join), the walk stops at its limit, and the rows chosen are locked at
-- the place they were seen. Written with joins and conditions on state, the plans read every
-- waiting row.
WITH heads AS MATERIALIZED (
    (SELECT i.ctid, i.id, i.bot_id, i.available_at
       FROM inbox i
      WHERE i.state = 'waiting' AND i.available_at <= now()
        -- The head of the person's queue: nothing earlier still waiting or in hand.
        AND i.id = (SELECT e.id FROM inbox e
                     WHERE e.bot_id = i.bot_id AND e.chat_key = i.chat_key
                       AND e.state IN ('waiting', 'processing')
                     ORDER BY e.id
                     LIMIT 1)
      ORDER BY i.id
      LIMIT %(limit)s * 4)
    UNION ALL
    -- A claim whose lease ran out (its worker died or hung): the same person's head again.
    (SELECT i.ctid, i.id, i.bot_id, i.available_at
       FROM inbox i
      WHERE i.state = 'processing' AND i.locked_until < now()
      ORDER BY i.locked_until
      LIMIT %(limit)s)
),
locked AS MATERIALIZED (
    SELECT i.id
      FROM heads h
      -- Locked at the place it was seen: a row changed since (claimed, finished or retried
      -- by another worker) has moved, fails this condition when SKIP LOCKED rechecks it, and
      -- is passed over.
      JOIN inbox i ON i.ctid = h.ctid
     WHERE h.bot_id = ANY (%(own)s::bigint[])
        OR h.available_at < now() - make_interval(secs => %(fresh)s)
        OR NOT EXISTS (
            SELECT 1 FROM leases l
             WHERE l.name = 'send:' || h.bot_id AND l.holder <> %(holder)s
               AND l.expires_at > now())
     ORDER BY CASE WHEN h.available_at < now() - make_interval(secs => %(fresh)s) THEN 0
                   WHEN h.bot_id = ANY (%(own)s::bigint[]) THEN 1
                   ELSE 2 END,
              h.id
     LIMIT %(limit)s
     FOR UPDATE OF i SKIP LOCKED
)
UPDATE inbox i
   SET state = 'processing',
       attempt = i.attempt + 1,
       lock_token = gen_random_uuid(),
       locked_until = now() + make_interval(secs => %(lock_seconds)s),
       locked_by = %(holder)s
 WHERE i.id = ANY (ARRAY(SELECT id FROM locked))
RETURNING i.id, i.bot_id, i.update_id, i.chat_key, i.kind, i.payload, i.attempt, i.lock_token,
          i.received_at, i.told_waiting,
          -- The language its person chose with this bot; a private chat's id is its person's.
          (SELECT bp.language FROM people p
             JOIN bot_people bp ON bp.person_id = p.id AND bp.bot_id = i.bot_id
            WHERE p.telegram_user_id = i.chat_key) AS chosen_language,
          (SELECT b.default_language FROM bots b WHERE b.id = i.bot_id) AS bot_language,
          (SELECT b.texts_version FROM bots b WHERE b.id = i.bot_id) AS texts_version;

-- finish_with_replies --
-- Compare-and-set on the claim, the update's replies queued in the same statement, and the statistics
-- events they stand for (the gate shown). With %(telegram_user_id)s, the update's person too,
-- as upsert_person records them, for an update whose route needed nothing else written: the
-- whole update is then this one statement, with no transaction around it; an event without
-- a person is theirs. A lost claim fails the statement (GH001, see migration 0016), so COMMIT
-- may be sent without waiting for it.
-- Returns the outbox id of each reply queued now, by its place in %(replies)s; the unsent rows
-- queued before them for the same chats (their order comes first); and whether the person has
-- another update waiting (the worker then claims again at once).
WITH person AS (
    INSERT INTO people (telegram_user_id, username, first_name, last_name, language_code)
    SELECT %(telegram_user_id)s, %(username)s, %(first_name)s, %(last_name)s, %(language_code)s
     WHERE %(telegram_user_id)s::bigint IS NOT NULL
    ON CONFLICT (telegram_user_id) DO UPDATE
       SET username = excluded.username, first_name = excluded.first_name,
           last_name = excluded.last_name, language_code = excluded.language_code,
           updated_at = %(at)s
    RETURNING id
), met AS (
    -- started_at: the first update from the person's private chat with the bot.
    INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at, started_at)
    SELECT %(bot_id)s, id, %(at)s, %(at)s, CASE WHEN %(started)s THEN %(at)s::timestamptz END
      FROM person WHERE %(met)s
    ON CONFLICT (bot_id, person_id) DO UPDATE
       SET last_seen_at = excluded.last_seen_at, unreachable_at = NULL,
           started_at = coalesce(bot_people.started_at, excluded.started_at)
), person_counted AS (
    INSERT INTO stat_events (at, kind, bot_id, person_id)
    SELECT %(at)s, %(counted)s, %(bot_id)s, id FROM person WHERE %(counted)s::text IS NOT NULL
), finished AS (
    UPDATE inbox
       SET state = 'done', done_at = %(now)s, lock_token = NULL, locked_until = NULL,
           last_error = NULL
     WHERE id = %(id)s AND lock_token = %(lock_token)s AND attempt = %(attempt)s
       AND state = 'processing'
    RETURNING bot_id, chat_key
), queued AS (
    INSERT INTO outbox (bot_id, chat_id, method, payload, priority, dedupe_key)
    SELECT f.bot_id, r.chat_id, r.method, r.payload, 0, r.dedupe_key
      FROM finished f,
           jsonb_to_recordset(%(replies)s::jsonb)
               AS r (chat_id bigint, method text, payload jsonb, dedupe_key text)
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id, dedupe_key
), counted AS (
    INSERT INTO stat_events (at, kind, bot_id, person_id, content_id)
    SELECT c.at, c.kind, f.bot_id, coalesce(c.person_id, (SELECT id FROM person)),
           c.content_id
      FROM finished f,
           jsonb_to_recordset(%(events)s::jsonb)
               AS c (at timestamptz, kind text, person_id integer, content_id integer)
)
SELECT botedge_claim_held(count(*) = 1) AS held,
       coalesce(bool_or(EXISTS (SELECT 1 FROM inbox e
                                 WHERE e.bot_id = f.bot_id AND e.chat_key = f.chat_key
                                   AND e.state = 'waiting')), false) AS more,
       (SELECT coalesce(array_agg(id), '{}') FROM queued) AS ids,
       (SELECT coalesce(array_agg(split_part(dedupe_key, ':', 3)::int), '{}')
          FROM queued) AS places,
       -- This statement's own inserts are not visible here: these are all older.
       (SELECT coalesce(array_agg(o.id), '{}')
          FROM outbox o
         WHERE o.bot_id = %(bot_id)s AND o.chat_id = ANY (%(chats)s::bigint[])
           AND o.state = 'pending') AS earlier
  FROM finished f;

-- retry_update --
-- `give_back` 1 when nothing was tried (its breaker open): the claim's attempt is returned.
UPDATE inbox
   SET state = 'waiting', available_at = now() + make_interval(secs => %(delay)s),
       lock_token = NULL, locked_until = NULL, last_error = %(error)s,
       attempt = attempt - %(give_back)s
 WHERE id = %(id)s AND lock_token = %(lock_token)s AND attempt = %(attempt)s
   AND state = 'processing';

-- tell_waiting --
-- The person of an update in hand is told, once, that it waits on a dependency: the flag and
-- the outbox row's key both say it was done. Before retry_update, in its transaction: fenced on
-- the same claim.
WITH told AS (
    UPDATE inbox
       SET told_waiting = true
     WHERE id = %(id)s AND lock_token = %(lock_token)s AND attempt = %(attempt)s
       AND state = 'processing' AND NOT told_waiting
    RETURNING bot_id, chat_key
)
INSERT INTO outbox (bot_id, chat_id, method, payload, priority, dedupe_key)
SELECT bot_id, chat_key, 'sendMessage', %(payload)s, 0, %(dedupe_key)s FROM told
ON CONFLICT (dedupe_key) DO NOTHING;

-- bury_update --
-- Dead releases the person at once: 'dead' is not an unfinished state.
UPDATE inbox
   SET state = 'dead', done_at = %(now)s, lock_token = NULL, locked_until = NULL,
       last_error = %(error)s
 WHERE id = %(id)s AND lock_token = %(lock_token)s AND attempt = %(attempt)s
   AND state = 'processing';

-- dead_updates --
SELECT id, bot_id, update_id, chat_key, kind, attempt, last_error, received_at, done_at
  FROM inbox
 WHERE state = 'dead'
 ORDER BY id
 LIMIT %(limit)s;

-- replay_update --
UPDATE inbox
   SET state = 'waiting', attempt = 0, available_at = now(), done_at = NULL
 WHERE id = %(id)s AND state = 'dead'
RETURNING id, bot_id;

-- upsert_person --
-- The person and, when `met`, that this bot met them. With `counted` (a /start, a block), the
-- statistics' event too. finish_with_replies does the same for an update it finishes alone.
WITH person AS (
    INSERT INTO people (telegram_user_id, username, first_name, last_name, language_code)
    VALUES (%(telegram_user_id)s, %(username)s, %(first_name)s, %(last_name)s,
            %(language_code)s)
    ON CONFLICT (telegram_user_id) DO UPDATE
       SET username = excluded.username, first_name = excluded.first_name,
           last_name = excluded.last_name, language_code = excluded.language_code,
           updated_at = %(at)s
    RETURNING id
), met AS (
    -- started_at: the first update from the person's private chat with the bot.
    INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at, started_at)
    SELECT %(bot_id)s, id, %(at)s, %(at)s, CASE WHEN %(started)s THEN %(at)s::timestamptz END
      FROM person WHERE %(met)s
    ON CONFLICT (bot_id, person_id) DO UPDATE
       SET last_seen_at = excluded.last_seen_at, unreachable_at = NULL,
           started_at = coalesce(bot_people.started_at, excluded.started_at)
), counted AS (
    INSERT INTO stat_events (at, kind, bot_id, person_id)
    SELECT %(at)s, %(counted)s, %(bot_id)s, id FROM person WHERE %(counted)s::text IS NOT NULL
)
SELECT id FROM person;

-- set_blocked --
UPDATE bot_people bp SET blocked_at = CASE WHEN %(blocked)s THEN %(now)s::timestamptz END
  FROM people p
 WHERE bp.person_id = p.id AND bp.bot_id = %(bot_id)s AND p.telegram_user_id = %(user_id)s;

-- move_channel --
-- A group migrated to a supergroup: its row follows the new id, unless that id is already known.
UPDATE channels SET telegram_chat_id = %(new)s
 WHERE telegram_chat_id = %(old)s
   AND NOT EXISTS (SELECT 1 FROM channels WHERE telegram_chat_id = %(new)s);

-- move_pending_sends --
-- Sends still queued for the old id would fail ("group chat was upgraded"): point them at the
-- new one, in every bot's outbox.
UPDATE outbox
   SET chat_id = %(new)s,
       xid = pg_current_xact_id(),  -- shown again to the senders' reads
       payload = CASE WHEN payload ? 'chat_id'
                      THEN jsonb_set(payload, '{chat_id}', to_jsonb(%(new)s::bigint))
                      ELSE payload END
 WHERE chat_id = %(old)s AND state = 'pending';

-- insert_outbox --
INSERT INTO outbox (bot_id, chat_id, method, payload, priority, dedupe_key)
VALUES (%(bot_id)s, %(chat_id)s, %(method)s, %(payload)s, %(priority)s, %(dedupe_key)s)
ON CONFLICT (dedupe_key) DO NOTHING;

-- pending_outbox --
-- A sender's full read of its bot: unsent rows, replies first, each chat in order, a page at a
-- time after (priority, id). The statement's snapshot comes with them: the next read asks only
-- for what it did not show. At least one row comes back, with or without an outbox row.
SELECT pg_current_snapshot()::text AS snapshot, o.*
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (
       SELECT id, chat_id, method, payload, priority, attempts, broadcast_id,
              greatest(0, extract(epoch FROM available_at - now()))::float8 AS wait
         FROM outbox
        WHERE bot_id = %(bot_id)s AND state = 'pending'
          AND (priority, id) > (%(after_priority)s, %(after_id)s)
        ORDER BY priority, id
        LIMIT %(limit)s) AS o ON true;

-- new_outbox --
-- What became visible since the snapshot of an earlier read: rows of transactions that were
-- still running then, or had not started.
SELECT pg_current_snapshot()::text AS snapshot, o.*
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (
       SELECT id, chat_id, method, payload, priority, attempts, broadcast_id,
              greatest(0, extract(epoch FROM available_at - now()))::float8 AS wait
         FROM outbox
        WHERE bot_id = %(bot_id)s AND state = 'pending'
          AND xid >= pg_snapshot_xmin(%(since)s::pg_snapshot)
          AND NOT pg_visible_in_snapshot(xid, %(since)s::pg_snapshot)
          AND (priority, id) > (%(after_priority)s, %(after_id)s)
        ORDER BY priority, id
        LIMIT %(limit)s) AS o ON true;

-- mark_sent_many --
-- The rows are named by id. Not `state = 'pending'`: it let the planner reach them through a
-- pending partial index, which between two vacuums holds thousands of rows already sent (a
-- hash join over 600 heap pages to mark one row, 3 ms under the reference load).
UPDATE outbox o
   SET state = 'sent', sent_at = %(now)s, telegram_message_id = s.message_id,
       attempts = o.attempts + 1
  FROM unnest(%(ids)s::bigint[], %(message_ids)s::bigint[]) AS s (id, message_id)
 WHERE o.id = s.id AND o.state NOT IN ('sent', 'failed');

-- mark_failed --
UPDATE outbox SET state = 'failed', error = %(error)s, attempts = attempts + 1
 WHERE id = %(id)s AND state = 'pending';

-- mark_refused --
-- A send Telegram refused for the person (blocked the bot, deactivated, chat not found): the
-- row failed and the person marked in one statement, so a crash cannot keep one without the
-- other. Later broadcasts pass the person over.
WITH failed AS (
    UPDATE outbox SET state = 'failed', error = %(error)s, attempts = attempts + 1
     WHERE id = %(id)s AND state = 'pending'
    RETURNING bot_id, chat_id
)
UPDATE bot_people bp
   SET blocked_at = CASE WHEN %(blocked)s THEN coalesce(bp.blocked_at, %(now)s)
                         ELSE bp.blocked_at END,
       unreachable_at = CASE WHEN %(blocked)s THEN bp.unreachable_at
                             ELSE coalesce(bp.unreachable_at, %(now)s) END
  FROM failed f, people p
 WHERE bp.bot_id = f.bot_id AND bp.person_id = p.id AND p.telegram_user_id = f.chat_id;

-- postpone_send --
UPDATE outbox SET available_at = now() + make_interval(secs => %(delay)s),
                  attempts = attempts + 1, error = %(error)s
 WHERE id = %(id)s AND state = 'pending';

-- take_lease --
-- One statement: take a free or expired lease, or one whose holder's presence has run out
-- (the worker died, stalled or lost the database), renew our own, return nothing when another
-- holder's lease is still running. Expiry by the database's clock, the one all hosts share.
INSERT INTO leases (name, holder, term, expires_at, acquired_at)
VALUES (%(name)s, %(holder)s, 1, now() + make_interval(secs => %(ttl)s), now())
ON CONFLICT (name) DO UPDATE
   SET holder = excluded.holder,
       term = CASE WHEN leases.holder = excluded.holder THEN leases.term
                   ELSE leases.term + 1 END,
       acquired_at = CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at
                          ELSE now() END,
       expires_at = excluded.expires_at
 WHERE leases.holder = excluded.holder OR leases.expires_at < now()
    OR (leases.name NOT LIKE 'worker:%%'
        AND NOT EXISTS (SELECT 1 FROM leases w
                         WHERE w.name = 'worker:' || leases.holder AND w.expires_at >= now()))
RETURNING term, holder = %(holder)s AND acquired_at = now() AS taken;

-- workers_gone --
-- Workers whose presence ran out within the last %(window)s seconds (killed, stalled, cut
-- off from the database): what they held is handed on. Older ones held nothing still running.
SELECT substr(name, 8) AS holder
  FROM leases
 WHERE name LIKE 'worker:%%' AND expires_at < now()
   AND expires_at > now() - make_interval(secs => %(window)s);

-- leases_of_the_gone --
-- The running leases of those workers: another worker takes each at once (take_lease).
SELECT name FROM leases
 WHERE holder = ANY (%(gone)s) AND name NOT LIKE 'worker:%%' AND expires_at >= now();

-- give_back_claims --
-- Claims this worker could not finish nor record a failure of (the database away), claimable
-- again now that it answers; each fenced by its lock token, so one taken over meanwhile is
-- left alone.
UPDATE inbox i SET locked_until = now()
  FROM unnest(%(ids)s::bigint[], %(tokens)s::uuid[]) AS c(id, lock_token)
 WHERE i.id = c.id AND i.lock_token = c.lock_token AND i.state = 'processing'
RETURNING i.id;

-- end_claims_of_the_gone --
-- Updates in hand of those workers: their claims end now, so the next claim takes them
-- instead of waiting WORKER_LOCK_SECONDS. A gone worker that is only stalled cannot finish
-- one any more: its finish is fenced by the lock token.
UPDATE inbox SET locked_until = now()
 WHERE state = 'processing' AND locked_until > now() AND locked_by = ANY (%(gone)s)
RETURNING id;

-- release_lease --
-- Announced: a worker waiting for the lease takes it now, not at its next try.
WITH gone AS (
    DELETE FROM leases WHERE name = %(name)s AND holder = %(holder)s RETURNING name
)
SELECT pg_notify('lease', name) FROM gone;

-- live_workers --
-- The workers whose presence lease (`worker:<holder>`) still runs; a presence a day past its
-- end is dropped here, as no one else would.
WITH gone AS (
    DELETE FROM leases
     WHERE name LIKE 'worker:%%' AND expires_at < now() - interval '1 day'
)
SELECT count(*) AS workers
  FROM leases
 WHERE name LIKE 'worker:%%' AND expires_at >= now();

-- queue_gauges --
-- Depth and the age of the oldest unfinished update per bot, through the partial index.
SELECT bot_id, count(*) AS depth,
       coalesce(extract(epoch FROM now() - min(received_at)), 0) AS oldest_age
  FROM inbox
 WHERE state IN ('waiting', 'processing')
 GROUP BY bot_id;

-- outbox_gauges --
SELECT bot_id, count(*) AS depth FROM outbox WHERE state = 'pending' GROUP BY bot_id;

-- dead_count --
SELECT bot_id, count(*) AS dead FROM inbox WHERE state = 'dead' GROUP BY bot_id;

-- prune_inbox --
-- Handled updates older than Telegram would ever redeliver (it gives up after 24 hours):
-- their dedupe key is no longer needed. Dead updates stay until someone replays them.
DELETE FROM inbox
 WHERE state = 'done' AND done_at < %(now)s::timestamptz - make_interval(days => %(days)s);

-- prune_outbox --
DELETE FROM outbox
 WHERE state IN ('sent', 'failed', 'cancelled')
   AND coalesce(sent_at, created_at) < %(now)s::timestamptz - make_interval(days => %(days)s);

-- content_with_gate --
-- A bot's content by code (a link) or by id (a press), with its gate: its own channels, or the
-- bot's default set, and where to join each. One round trip before Telegram is asked.
SELECT ct.id, ct.kind, ct.body, ct.file_kind, ct.file_id, ct.from_chat_id, ct.message_id,
       ct.default_gate,
       coalesce((SELECT jsonb_agg(jsonb_build_object(
                            'channel_id', c.id, 'telegram_chat_id', c.telegram_chat_id,
                            'title', c.title, 'username', c.username, 'join_url', bc.join_url)
                        ORDER BY c.id)
                   FROM channels c
                   LEFT JOIN bot_channels bc ON bc.channel_id = c.id AND bc.bot_id = ct.bot_id
                  WHERE CASE WHEN ct.default_gate
                             THEN bc.default_gate
                             ELSE c.id IN (SELECT channel_id FROM content_gate_channels
                                            WHERE content_id = ct.id) END), '[]') AS gate
  FROM contents ct
 WHERE (ct.bot_id = %(bot_id)s AND ct.code = %(code)s)
    OR (ct.id = %(id)s AND ct.bot_id = %(bot_id)s);

-- flag_bot_channel --
-- The gate could not tell whether people are members there: the owner should look.
INSERT INTO bot_channels (bot_id, channel_id, status, checked_at, last_error)
VALUES (%(bot_id)s, %(channel_id)s, 'unknown', %(now)s, %(error)s)
ON CONFLICT (bot_id, channel_id) DO UPDATE
   SET checked_at = excluded.checked_at, last_error = excluded.last_error;

-- record_delivery --
-- Through the gate: counted each time, and the content's delivery recorded and counted the
-- first time, in one statement; a row back when this was the first.
WITH delivered AS (
    INSERT INTO content_deliveries (content_id, person_id, delivered_at)
    VALUES (%(content_id)s, %(person_id)s, %(now)s)
    ON CONFLICT DO NOTHING
    RETURNING content_id
), counted AS (
    INSERT INTO stat_events (at, kind, bot_id, person_id, content_id)
    SELECT %(now)s, 'gate_passed', %(bot_id)s, %(person_id)s, %(content_id)s
    UNION ALL
    SELECT %(now)s, 'content_delivered', %(bot_id)s, %(person_id)s, content_id FROM delivered
)
SELECT content_id FROM delivered;

-- channel_by_chat --
SELECT id FROM channels WHERE telegram_chat_id = %(chat_id)s;

-- upsert_channel_member --
-- last_inside_at: when the person was last known inside, so that reconciliation can tell one
-- who left from one who never used their invite.
INSERT INTO channel_members (channel_id, person_id, status, is_member, invite_link, updated_at,
                             last_inside_at)
VALUES (%(channel_id)s, %(person_id)s, %(status)s, %(is_member)s, %(invite_link)s, %(now)s,
        CASE WHEN %(is_member)s THEN %(now)s::timestamptz END)
ON CONFLICT (channel_id, person_id) DO UPDATE
   SET status = excluded.status, is_member = excluded.is_member,
       invite_link = coalesce(excluded.invite_link, channel_members.invite_link),
       updated_at = excluded.updated_at,
       last_inside_at = coalesce(excluded.last_inside_at, channel_members.last_inside_at);

-- credit_campaign_join --
-- A join through a campaign's link into its own channel, credited once per person.
-- Counted for the statistics in the same statement.
WITH credited AS (
    INSERT INTO campaign_joins (campaign_id, person_id, joined_at)
    SELECT id, %(person_id)s, %(now)s
      FROM campaigns
     WHERE invite_link = %(invite_link)s AND channel_id = %(channel_id)s
    ON CONFLICT (campaign_id, person_id) DO NOTHING
    RETURNING campaign_id
)
INSERT INTO stat_events (at, kind, bot_id, person_id, campaign_id)
SELECT %(now)s, 'campaign_join', c.bot_id, %(person_id)s, c.id
  FROM credited JOIN campaigns c ON c.id = credited.campaign_id;

-- record_campaign_leave --
-- The first leave after a credited join; a rejoin and a second leave change nothing.
WITH went AS (
    UPDATE campaign_joins j
       SET left_at = greatest(%(now)s, j.joined_at)
      FROM campaigns c
     WHERE j.person_id = %(person_id)s AND j.left_at IS NULL
       AND c.id = j.campaign_id AND c.channel_id = %(channel_id)s
    RETURNING c.id, c.bot_id
)
INSERT INTO stat_events (at, kind, bot_id, person_id, campaign_id)
SELECT %(now)s, 'campaign_leave', bot_id, %(person_id)s, id FROM went;

-- notify_gate --
-- Transactional: heard by every worker only once the leave is committed.
SELECT pg_notify('gate', %(payload)s);

-- bot_token --
SELECT id, telegram_bot_id, token_encrypted FROM bots
 WHERE id = %(bot_id)s AND status = 'active' AND token_invalid_at IS NULL;

-- upsert_channel_facts --
-- Telegram's side of a channel; whether it is a gate or paid stays panel-api's.
INSERT INTO channels (telegram_chat_id, title, username, chat_type)
VALUES (%(chat_id)s, %(title)s, %(username)s, %(chat_type)s)
ON CONFLICT (telegram_chat_id) DO UPDATE
   SET title = excluded.title, username = excluded.username, chat_type = excluded.chat_type
RETURNING id, telegram_chat_id, title, username, chat_type;

-- upsert_bot_channel --
INSERT INTO bot_channels (bot_id, channel_id, status, is_admin, can_invite_users,
                          can_restrict_members, checked_at, last_error, admin_ids)
VALUES (%(bot_id)s, %(channel_id)s, %(status)s, %(is_admin)s, %(can_invite_users)s,
        %(can_restrict_members)s, %(now)s, %(error)s, coalesce(%(admins)s::bigint[], '{}'))
ON CONFLICT (bot_id, channel_id) DO UPDATE
   SET status = excluded.status, is_admin = excluded.is_admin,
       can_invite_users = excluded.can_invite_users,
       can_restrict_members = excluded.can_restrict_members,
       checked_at = excluded.checked_at,
       -- A bot still not admin keeps what the gate found (it could not see who is there).
       last_error = CASE WHEN excluded.is_admin THEN excluded.last_error
                         ELSE coalesce(excluded.last_error, bot_channels.last_error) END,
       admin_ids = coalesce(%(admins)s::bigint[], bot_channels.admin_ids);

-- access_context --
-- What acting on an access event needs: the channel, its manager bot, the person, the
-- membership as it stands now, and the status the event's change came from.
SELECT c.telegram_chat_id, c.title, c.manager_bot_id, mb.username AS bot_username,
       c.admission, c.join_request_link,
       p.telegram_user_id, m.grace_days, m.status AS membership_status,
       m.expires_at AS membership_expires_at,
       me.from_status, me.cause, coalesce(cm.is_member, false) AS inside,
       -- The person's latest Stars subscription covering the channel: 'active' renews it.
       (SELECT s.state FROM star_subscriptions s
          JOIN invoices i ON i.order_reference = s.invoice_payload
         WHERE s.person_id = p.id
           AND c.id = ANY (coalesce(i.bundle_channel_ids, ARRAY[i.channel_id]))
         ORDER BY s.id DESC LIMIT 1) AS star_renewal,
       -- The language to write in: chosen with the manager bot, Telegram's, the bot's default.
       (SELECT bp.language FROM bot_people bp
         WHERE bp.bot_id = c.manager_bot_id AND bp.person_id = p.id) AS chosen_language,
       p.language_code, mb.default_language AS bot_language
  FROM channels c
  LEFT JOIN bots mb ON mb.id = c.manager_bot_id
 CROSS JOIN people p
  LEFT JOIN memberships m ON m.person_id = p.id AND m.channel_id = c.id
  LEFT JOIN membership_events me ON me.id = %(membership_event_id)s
  LEFT JOIN channel_members cm ON cm.channel_id = c.id AND cm.person_id = p.id
 WHERE c.id = %(channel_id)s AND p.id = %(person_id)s;

-- bot_channels_to_check --
-- The rights watch: every row, least recently checked first.
SELECT bc.bot_id, bc.channel_id, c.telegram_chat_id
  FROM bot_channels bc JOIN channels c ON c.id = bc.channel_id
 ORDER BY bc.checked_at NULLS FIRST, bc.bot_id, bc.channel_id;


-- demo_bot --
SELECT id, username FROM bots WHERE telegram_bot_id = %(telegram_bot_id)s;

-- demo_channel --
-- `make run`'s demo: a channel the demo bot administers (kept as it is on later runs).
WITH channel AS (
    INSERT INTO channels (telegram_chat_id, title, username, chat_type, is_gate)
    VALUES (%(chat_id)s, %(title)s, %(username)s, 'channel', %(is_gate)s)
    ON CONFLICT (telegram_chat_id) DO UPDATE SET chat_type = 'channel'
    RETURNING id
)
INSERT INTO bot_channels (bot_id, channel_id, status, is_admin, can_invite_users,
                          can_restrict_members, default_gate, checked_at)
SELECT %(bot_id)s, id, 'administrator', true, true, true, %(is_gate)s, %(now)s FROM channel
ON CONFLICT (bot_id, channel_id) DO NOTHING;

-- demo_manager --
UPDATE channels SET manager_bot_id = %(bot_id)s
 WHERE telegram_chat_id = %(chat_id)s AND manager_bot_id IS NULL;

-- demo_content --
INSERT INTO contents (bot_id, code, kind, body)
VALUES (%(bot_id)s, 'welcome', 'text',
        'Welcome in! This is the content behind the gate.')
ON CONFLICT (bot_id, code) DO UPDATE SET updated_at = contents.updated_at
RETURNING id;


-- shop_slots --
-- What the bot sells now, cheapest first.
SELECT id, kind, title, price_micros, accepts_usdt, accepts_trx
  FROM ad_slots
 WHERE bot_id = %(bot_id)s AND active
 ORDER BY price_micros, id
 LIMIT 20;

-- shop_slot --
SELECT id, kind, title, price_micros, accepts_usdt, accepts_trx
  FROM ad_slots
 WHERE id = %(id)s AND bot_id = %(bot_id)s AND active;

-- conversation --
-- The person's step with this bot. Their updates are applied one at a time already (the inbox
-- keeps a person in order); the row lock covers a press from a second device all the same.
SELECT step, data, expires_at
  FROM conversations
 WHERE bot_id = %(bot_id)s AND person_id = %(person_id)s
   FOR UPDATE;

-- conversation_of_sender --
-- Read before the update's transaction, to route the person's message to their step.
SELECT c.step, c.data, c.expires_at
  FROM conversations c
  JOIN people p ON p.id = c.person_id
 WHERE c.bot_id = %(bot_id)s AND p.telegram_user_id = %(telegram_user_id)s;

-- set_conversation --
INSERT INTO conversations (bot_id, person_id, step, data, expires_at, updated_at)
VALUES (%(bot_id)s, %(person_id)s, %(step)s, %(data)s, %(expires_at)s, %(now)s)
ON CONFLICT (bot_id, person_id) DO UPDATE
   SET step = EXCLUDED.step, data = EXCLUDED.data, expires_at = EXCLUDED.expires_at,
       updated_at = EXCLUDED.updated_at;

-- end_conversation --
DELETE FROM conversations WHERE bot_id = %(bot_id)s AND person_id = %(person_id)s;

-- prune_conversations --
-- Expired long enough ago that "your request expired" would no longer help.
DELETE FROM conversations WHERE expires_at < %(now)s::timestamptz - make_interval(days => %(days)s);

-- insert_ad_order --
-- At the price the advertiser was shown; the slot must still be on sale. The booking's key
-- makes a confirmation applied twice one order.
INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt, accepts_trx,
                       request_key, created_at, updated_at)
SELECT id, %(person_id)s, %(ad)s, %(price_micros)s, %(accepts_usdt)s, %(accepts_trx)s,
       %(request_key)s, %(now)s, %(now)s
  FROM ad_slots
 WHERE id = %(slot_id)s AND bot_id = %(bot_id)s AND active
ON CONFLICT (request_key) DO NOTHING
RETURNING id;

-- orders_awaiting_payment --
-- The person's orders in this bot that a transaction hash may pay.
SELECT o.id, o.price_micros, o.paid_micros, o.due_at, s.title
  FROM ad_orders o JOIN ad_slots s ON s.id = o.slot_id
 WHERE o.person_id = %(person_id)s AND s.bot_id = %(bot_id)s
   AND o.status IN ('approved', 'part_paid') AND o.due_at > %(now)s
 ORDER BY o.id
 LIMIT 10;

-- claimed_hash --
SELECT order_id FROM tron_claims WHERE tx_hash = %(tx_hash)s;

-- insert_tron_claim --
-- The hash's unique key decides between two people sending it at once: the second insert
-- waits for the first to commit and then does nothing.
INSERT INTO tron_claims (tx_hash, order_id, submitted_at)
VALUES (%(tx_hash)s, %(order_id)s, %(now)s)
ON CONFLICT (tx_hash) DO NOTHING
RETURNING id;

-- ad_order_context --
-- What the advertiser's messages about an order say, and where they go.
SELECT o.id, o.status, o.price_micros, o.paid_micros, o.accepts_usdt, o.accepts_trx, o.pay_to,
       o.trx_rate::text AS trx_rate, o.due_at, s.bot_id, s.title, p.telegram_user_id,
       EXISTS (SELECT 1 FROM ad_order_events e
                WHERE e.order_id = o.id AND e.cause = %(cause)s
                  AND e.kind IN ('part_paid', 'paid')) AS told_with_status,
       bp.language AS chosen_language, p.language_code, b.default_language AS bot_language
  FROM ad_orders o
  JOIN ad_slots s ON s.id = o.slot_id
  JOIN people p ON p.id = o.person_id
  JOIN bots b ON b.id = s.bot_id
  LEFT JOIN bot_people bp ON bp.bot_id = s.bot_id AND bp.person_id = p.id
 WHERE o.id = %(order_id)s;

-- demo_shop_address --
-- `make run`'s demo shop: an address to pay to, unless the owner set one.
UPDATE workspace SET tron_address = %(address)s WHERE tron_address IS NULL;

-- demo_ad_slot --
INSERT INTO ad_slots (bot_id, kind, title, price_micros, accepts_usdt, accepts_trx)
SELECT %(bot_id)s, 'pinned_post', 'Pinned post, 24 hours', 10000000, true, true
 WHERE NOT EXISTS (SELECT 1 FROM ad_slots WHERE bot_id = %(bot_id)s);

-- demo_paid --
-- The demo paid channel is sold: 5 USD for 30 days with 3 days of grace, unless the owner
-- priced it already.
WITH paid AS (
    UPDATE channels SET is_paid = true WHERE telegram_chat_id = %(chat_id)s RETURNING id
)
INSERT INTO plans (channel_id, name, price_minor, currency, period_days, grace_days, is_default)
SELECT id, 'Monthly', 500, 'USD', 30, 3, true FROM paid
ON CONFLICT (channel_id) WHERE is_default DO NOTHING;

-- demo_yearly --
-- A year at 50 USD beside the month, and a coupon for 20% off it for newcomers.
WITH channel AS (
    SELECT id FROM channels WHERE telegram_chat_id = %(chat_id)s
), year AS (
    INSERT INTO plans (channel_id, name, price_minor, currency, period_days, grace_days, position)
    SELECT id, 'Yearly', 5000, 'USD', 365, 3, 1 FROM channel
    ON CONFLICT (channel_id, lower(name)) WHERE active DO NOTHING
    RETURNING id
)
INSERT INTO coupons (code, percent_off, plan_ids, customers, per_person, created_at)
SELECT 'WELCOME20', 20, ARRAY[id], 'new', 1, %(now)s FROM year
ON CONFLICT (upper(code)) DO NOTHING;

-- demo_stars --
-- A month in Telegram Stars beside them: 250 Stars, which Telegram renews every 30 days.
INSERT INTO plans (channel_id, name, price_minor, currency, period_days, grace_days, position)
SELECT id, 'Monthly in Stars', 250, 'XTR', 30, 3, 2 FROM channels
 WHERE telegram_chat_id = %(chat_id)s
ON CONFLICT (channel_id, lower(name)) WHERE active DO NOTHING;

-- admission_of --
-- A paid channel's admission as the bot sees it: is the person entitled (an active or grace
-- membership, or whitelisted), may the bot write to them, and the bot's name for the pay link.
SELECT c.id AS channel_id, c.title, c.is_paid, c.manager_bot_id, b.username AS bot_username,
       EXISTS (SELECT 1 FROM memberships m JOIN people p ON p.id = m.person_id
                WHERE m.channel_id = c.id AND p.telegram_user_id = %(user_id)s
                  AND m.status IN ('active', 'grace')) AS paying,
       EXISTS (SELECT 1 FROM channel_whitelist w
                WHERE w.channel_id = c.id AND w.telegram_user_id = %(user_id)s)
       OR EXISTS (SELECT 1 FROM bot_channels bc
                   WHERE bc.channel_id = c.id AND %(user_id)s = ANY (bc.admin_ids))
          AS whitelisted,
       EXISTS (SELECT 1 FROM bot_people bp JOIN people p ON p.id = bp.person_id
                WHERE bp.bot_id = %(bot_id)s AND p.telegram_user_id = %(user_id)s
                  AND bp.blocked_at IS NULL) AS may_write
  FROM channels c
  JOIN bots b ON b.id = %(bot_id)s
 WHERE c.telegram_chat_id = %(chat_id)s;

-- keep_join_request_link --
-- The first link made wins: two grants racing keep one.
UPDATE channels SET join_request_link = coalesce(join_request_link, %(link)s)
 WHERE id = %(channel_id)s
RETURNING join_request_link;

-- keep_access_link --
INSERT INTO access_links (channel_id, person_id, link, created_at)
VALUES (%(channel_id)s, %(person_id)s, %(link)s, %(now)s)
ON CONFLICT (channel_id, person_id) DO UPDATE
   SET link = excluded.link, created_at = excluded.created_at;

-- links_to_resend --
-- The person's paid channels this bot manages, with the link sent last and whether they are
-- inside already.
SELECT c.id AS channel_id, c.telegram_chat_id, c.title, c.admission, c.join_request_link,
       p.id AS person_id, al.link AS last_link, coalesce(cm.is_member, false) AS inside
  FROM people p
  JOIN memberships m ON m.person_id = p.id AND m.status IN ('active', 'grace')
  JOIN channels c ON c.id = m.channel_id AND c.manager_bot_id = %(bot_id)s
  LEFT JOIN access_links al ON al.channel_id = c.id AND al.person_id = p.id
  LEFT JOIN channel_members cm ON cm.channel_id = c.id AND cm.person_id = p.id
 WHERE p.telegram_user_id = %(user_id)s
 ORDER BY c.id
 LIMIT 10;

-- bot_offers --
-- What a plain /start lists: the paid channels this bot sells and whether it runs an ad shop.
SELECT b.username,
       coalesce((SELECT json_agg(json_build_object('id', c.id, 'title', c.title) ORDER BY c.title)
                   FROM channels c
                  WHERE c.is_paid AND c.manager_bot_id = b.id), '[]') AS channels,
       EXISTS (SELECT 1 FROM ad_slots s WHERE s.bot_id = b.id AND s.active) AS shop
  FROM bots b
 WHERE b.id = %(bot_id)s;

-- campaign_channel --
SELECT telegram_chat_id, username FROM channels WHERE id = %(channel_id)s;

-- claim_broadcast --
-- The oldest open broadcast nobody holds (or whose holder's claim ran out), fenced like the
-- inbox: every later statement of the fan-out compares the token.
UPDATE broadcasts b
   SET lock_token = gen_random_uuid(), locked_by = %(holder)s,
       locked_until = now() + make_interval(secs => %(lease)s),
       state = CASE WHEN b.state = 'queued' THEN 'fanning_out' ELSE b.state END,
       started_at = coalesce(b.started_at, %(now)s)
 WHERE b.id = (SELECT id FROM broadcasts
                WHERE state IN ('queued', 'fanning_out', 'sending')
                  AND (locked_until IS NULL OR locked_until < now())
                  -- One set to start later waits for its time.
                  AND (starts_at IS NULL OR starts_at <= %(now)s)
                  -- A paused or removed bot's broadcasts wait (its sender is stopped too).
                  AND EXISTS (SELECT FROM bots
                               WHERE bots.id = broadcasts.bot_id AND bots.status = 'active')
                  AND NOT (id = ANY (%(held)s::int[]))
                ORDER BY id
                LIMIT 1
                  FOR UPDATE SKIP LOCKED)
RETURNING b.id, b.bot_id, b.state, b.lock_token, b.method IS NOT NULL AS made,
          b.text, b.button_text, b.button_url, b.content_id;

-- broadcast_content --
SELECT id, kind, body, file_kind, file_id, from_chat_id, message_id, default_gate
  FROM contents
 WHERE id = %(content_id)s AND bot_id = %(bot_id)s;

-- make_broadcast_message --
UPDATE broadcasts
   SET method = %(method)s, payload = %(payload)s,
       locked_until = now() + make_interval(secs => %(lease)s)
 WHERE id = %(id)s AND lock_token = %(token)s AND state = 'fanning_out'
RETURNING id;

-- broadcast_content_gone --
UPDATE broadcasts
   SET state = 'cancelled', finished_at = %(now)s, lock_token = NULL, locked_until = NULL,
       sent = 0, failed = 0, unsent = 0, error = 'its content was removed before it started'
 WHERE id = %(id)s AND lock_token = %(token)s AND state = 'fanning_out';

-- fan_out_broadcast --
-- One batch of a fan-out, fenced on the claim: the bot's next people in its audience after
-- `fanned_to`, in person id order, each queued once under `broadcast:<id>:<person>` below
-- every reply; who blocked the bot or cannot be reached is counted and passed over. A lost
-- claim or a cancel fails the statement (GH001), so nothing of the batch is written.
WITH claim AS (
    SELECT b.id, b.bot_id, b.method, b.payload, b.fanned_to, b.channel_id, b.plan_id,
           b.member_status, b.language, b.people, bo.default_language
      FROM broadcasts b
      JOIN bots bo ON bo.id = b.bot_id
     WHERE b.id = %(id)s AND b.lock_token = %(token)s AND b.state = 'fanning_out'
       FOR UPDATE OF b
), batch AS (
    -- Passed over without trying: who blocked the bot, could not be reached before, or never
    -- started it (Telegram refuses a message to them).
    SELECT bp.person_id, p.telegram_user_id AS chat_id,
           (bp.blocked_at IS NOT NULL OR bp.unreachable_at IS NOT NULL
            OR bp.started_at IS NULL) AS passed_over
      FROM claim c
      JOIN bot_people bp ON bp.bot_id = c.bot_id AND bp.person_id > c.fanned_to
      JOIN people p ON p.id = bp.person_id
     WHERE in_audience(bp.person_id, bp.language, p.language_code, c.default_language,
                       c.channel_id, c.plan_id, c.member_status, c.language, c.people)
     ORDER BY bp.person_id
     LIMIT %(limit)s
), queued AS (
    INSERT INTO outbox (bot_id, chat_id, method, payload, priority, dedupe_key, broadcast_id)
    SELECT c.bot_id, b.chat_id, c.method,
           c.payload || jsonb_build_object('chat_id', b.chat_id), 1,
           'broadcast:' || c.id || ':' || b.person_id, c.id
      FROM claim c, batch b
     WHERE NOT b.passed_over
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING 1
), moved AS (
    UPDATE broadcasts
       SET fanned_to = coalesce((SELECT max(person_id) FROM batch), fanned_to),
           recipients = recipients + (SELECT count(*) FROM queued),
           skipped = skipped + (SELECT count(*) FROM batch WHERE passed_over),
           state = CASE WHEN (SELECT count(*) FROM batch) < %(limit)s THEN 'sending'
                        ELSE 'fanning_out' END,
           locked_until = now() + make_interval(secs => %(lease)s)
     WHERE id = (SELECT id FROM claim)
    RETURNING state
)
SELECT botedge_claim_held(count(*) = 1) AS held, min(state) AS state,
       (SELECT count(*) FROM queued) AS queued
  FROM moved;

-- broadcast_backlog --
-- A bot's broadcast sends still waiting, counted up to %(window)s through the pending index.
SELECT count(*) AS waiting
  FROM (SELECT 1 FROM outbox
         WHERE bot_id = %(bot_id)s AND state = 'pending' AND priority = 1
         LIMIT %(window)s) w;

-- hold_broadcast --
-- Renew the claim; nothing comes back when it is lost or the broadcast was cancelled.
UPDATE broadcasts SET locked_until = now() + make_interval(secs => %(lease)s)
 WHERE id = %(id)s AND lock_token = %(token)s AND state IN ('fanning_out', 'sending')
RETURNING state;

-- close_broadcast --
-- Done once nothing of it is pending; the counts are kept, as its sends are pruned later.
UPDATE broadcasts b
   SET state = 'done', finished_at = %(now)s, lock_token = NULL, locked_until = NULL,
       sent = s.sent, failed = s.failed, unsent = s.unsent
  FROM (SELECT count(*) FILTER (WHERE state = 'sent') AS sent,
               count(*) FILTER (WHERE state = 'failed') AS failed,
               count(*) FILTER (WHERE state = 'cancelled') AS unsent,
               count(*) FILTER (WHERE state = 'pending') AS pending
          FROM outbox
         WHERE broadcast_id = %(id)s) s
 WHERE b.id = %(id)s AND b.lock_token = %(token)s AND b.state = 'sending' AND s.pending = 0
RETURNING b.id;

-- stop_broadcast --
-- A cancel, first on the broadcast's row: it waits for a batch being queued to commit, and
-- the batch after it then finds the broadcast cancelled.
UPDATE broadcasts
   SET state = 'cancelled', finished_at = %(now)s, lock_token = NULL, locked_until = NULL
 WHERE id = %(id)s AND state IN ('queued', 'fanning_out', 'sending')
RETURNING bot_id;

-- drop_broadcast_sends --
-- Then its sends not made yet (a statement of its own: it sees the batch committed above).
UPDATE outbox SET state = 'cancelled'
 WHERE broadcast_id = %(id)s AND state = 'pending';

-- count_broadcast_sends --
UPDATE broadcasts b
   SET sent = s.sent, failed = s.failed, unsent = s.unsent
  FROM (SELECT count(*) FILTER (WHERE state = 'sent') AS sent,
               count(*) FILTER (WHERE state = 'failed') AS failed,
               count(*) FILTER (WHERE state = 'cancelled') AS unsent
          FROM outbox
         WHERE broadcast_id = %(id)s) s
 WHERE b.id = %(id)s
RETURNING b.state, b.recipients, b.skipped, b.sent, b.failed, b.unsent;

-- broadcast_state --
SELECT state FROM broadcasts WHERE id = %(id)s;

-- rollup_state --
-- The roll-up's watermark under its row lock, the workspace's zone, and where counting would
-- begin from scratch (the first event, or the first person met).
SELECT now(), w.time_zone AS workspace_zone, r.zone, r.done_until,
       least((SELECT min(at) FROM stat_events),
             (SELECT min(first_seen_at) FROM bot_people)) AS first_at
  FROM workspace w
  LEFT JOIN (SELECT * FROM stat_rollup FOR UPDATE) r ON true;

-- rollup_clear --
DELETE FROM stat_hours;

-- rollup_restart --
INSERT INTO stat_rollup (zone, done_until) VALUES (%(zone)s, %(done_until)s)
ON CONFLICT (one) DO UPDATE SET zone = excluded.zone, done_until = excluded.done_until;

-- rollup_hours --
-- The hours from `from` to `until` (both hour starts in `zone`), counted per content and
-- campaign and in total (content and campaign -1); a recount replaces.
INSERT INTO stat_hours (hour, bot_id, kind, content_id, campaign_id, currency, events, amount)
SELECT hour, bot, kind, coalesce(content, -1), coalesce(campaign, -1), currency, count(*),
       sum(amount)
  FROM (SELECT date_trunc('hour', at, %(zone)s) AS hour, coalesce(bot_id, 0) AS bot, kind,
               coalesce(content_id, 0) AS content, coalesce(campaign_id, 0) AS campaign,
               coalesce(currency, '') AS currency, coalesce(amount, 0) AS amount
          FROM stat_events
         WHERE at >= %(from)s AND at < %(until)s) e
 GROUP BY GROUPING SETS ((hour, bot, kind, currency),
                         (hour, bot, kind, content, campaign, currency))
UNION ALL
SELECT date_trunc('hour', first_seen_at, %(zone)s), bot_id, 'new_person', -1, -1, '', count(*), 0
  FROM bot_people
 WHERE first_seen_at >= %(from)s AND first_seen_at < %(until)s
 GROUP BY 1, 2
ON CONFLICT (hour, bot_id, kind, content_id, campaign_id, currency) DO UPDATE
   SET events = excluded.events, amount = excluded.amount;

-- rollup_done --
UPDATE stat_rollup SET done_until = %(until)s;

-- prune_stat_events --
-- Only what is rolled up already, and older than the days kept.
DELETE FROM stat_events WHERE at < %(before)s;

-- record_star_payment --
-- A `successful_payment`, once per charge: the same payment in another update writes nothing.
-- A subscription's payment makes its record (the first) or moves its renewal date. billing's
-- ledger loop hears of a new row when this transaction commits.
WITH paid AS (
    INSERT INTO telegram_payments (bot_id, person_id, invoice_payload, currency, total_amount,
                                   telegram_payment_charge_id, provider_payment_charge_id,
                                   is_recurring, is_first_recurring,
                                   subscription_expiration_date, paid_at, received_at,
                                   available_at)
    VALUES (%(bot_id)s, %(person_id)s, %(payload)s, %(currency)s, %(total_amount)s,
            %(charge_id)s, %(provider_charge_id)s, %(is_recurring)s, %(is_first_recurring)s,
            %(expiration)s, %(paid_at)s, %(now)s, %(now)s)
    ON CONFLICT (kind, telegram_payment_charge_id) DO NOTHING
    RETURNING id
), subscription AS (
    INSERT INTO star_subscriptions (bot_id, person_id, invoice_payload, first_charge_id, state,
                                    renews_at, changed_at)
    SELECT %(bot_id)s, %(person_id)s, %(payload)s, %(charge_id)s, 'active', %(expiration)s,
           %(now)s
     WHERE %(is_recurring)s AND EXISTS (SELECT 1 FROM paid)
    ON CONFLICT (bot_id, person_id, invoice_payload) DO UPDATE
       SET renews_at = greatest(star_subscriptions.renews_at, excluded.renews_at),
           state = CASE WHEN star_subscriptions.state = 'failed' THEN 'active'
                        ELSE star_subscriptions.state END,
           changed_at = excluded.changed_at
    RETURNING id, xmax = 0 AS made
)
SELECT (SELECT id FROM paid) AS payment_id,
       (SELECT id FROM subscription) AS subscription_id,
       coalesce((SELECT made FROM subscription), false) AS subscription_made,
       (SELECT c.title FROM invoices i JOIN channels c ON c.id = i.channel_id
         WHERE i.order_reference = %(payload)s) AS title,
       CASE WHEN EXISTS (SELECT 1 FROM paid)
            THEN pg_notify('telegram_payments', '') END AS notified;

-- set_star_subscription_state --
-- Telegram's `subscription` update for the person's subscription through that invoice.
UPDATE star_subscriptions s
   SET state = %(state)s, changed_at = %(now)s
  FROM people p
 WHERE p.telegram_user_id = %(telegram_user_id)s AND s.person_id = p.id
   AND s.bot_id = %(bot_id)s AND s.invoice_payload = %(payload)s;

-- star_subscription_of --
-- The person's subscription by its id, through this bot, with its channel's title.
SELECT s.id, s.state, s.first_charge_id, s.renews_at, c.title
  FROM star_subscriptions s
  JOIN people p ON p.id = s.person_id
  LEFT JOIN invoices i ON i.order_reference = s.invoice_payload
  LEFT JOIN channels c ON c.id = i.channel_id
 WHERE s.id = %(id)s AND s.bot_id = %(bot_id)s AND p.telegram_user_id = %(telegram_user_id)s;

-- stars_to_stop --
-- The person's Stars subscriptions that renew a channel's access (a bundle's among them).
SELECT s.id, s.bot_id, s.first_charge_id
  FROM star_subscriptions s
  JOIN invoices i ON i.order_reference = s.invoice_payload
 WHERE s.person_id = %(person_id)s AND s.state = 'active'
   AND %(channel_id)s = ANY (coalesce(i.bundle_channel_ids, ARRAY[i.channel_id]))
 ORDER BY s.id;

-- cancel_star_subscription --
UPDATE star_subscriptions SET state = 'canceled', changed_at = %(now)s
 WHERE id = %(id)s AND state <> 'canceled';

-- record_star_refund --
-- Telegram's `refunded_payment`: kept for billing once per charge; the loop hears of it at
-- commit.
WITH refunded AS (
    INSERT INTO telegram_payments (bot_id, person_id, kind, invoice_payload, currency,
                                   total_amount, telegram_payment_charge_id,
                                   provider_payment_charge_id, paid_at, received_at,
                                   available_at)
    VALUES (%(bot_id)s, %(person_id)s, 'refund', %(payload)s, %(currency)s, %(total_amount)s,
            %(charge_id)s, %(provider_charge_id)s, %(paid_at)s, %(now)s, %(now)s)
    ON CONFLICT (kind, telegram_payment_charge_id) DO NOTHING
    RETURNING id
)
SELECT (SELECT id FROM refunded) AS refund_id,
       CASE WHEN EXISTS (SELECT 1 FROM refunded)
            THEN pg_notify('telegram_payments', '') END AS notified;

-- members_to_check --
-- A paid channel, its manager bot, and the people asked about (known to us), each with
-- whether they may be there: paying (active or grace) or whitelisted.
SELECT c.id AS channel_id, c.telegram_chat_id, c.title, c.manager_bot_id, b.username,
       p.id AS person_id, p.telegram_user_id,
       EXISTS (SELECT 1 FROM memberships m WHERE m.person_id = p.id AND m.channel_id = c.id
                  AND m.status IN ('active', 'grace')) AS paying,
       EXISTS (SELECT 1 FROM channel_whitelist w WHERE w.channel_id = c.id
                  AND w.telegram_user_id = p.telegram_user_id) AS whitelisted,
       (bp.person_id IS NOT NULL AND bp.blocked_at IS NULL) AS may_write,
       bp.language AS chosen_language, p.language_code, b.default_language AS bot_language
  FROM channels c
  LEFT JOIN bots b ON b.id = c.manager_bot_id
  JOIN people p ON p.telegram_user_id = ANY (%(user_ids)s)
  LEFT JOIN bot_people bp ON bp.bot_id = c.manager_bot_id AND bp.person_id = p.id
 WHERE c.id = %(channel_id)s AND c.is_paid
 ORDER BY p.telegram_user_id;

-- channel_member_status --
SELECT status FROM channel_members WHERE channel_id = %(channel_id)s AND person_id = %(person_id)s;

-- choose_language --
-- The person's language with this bot (`/language`), kept until they pick another.
UPDATE bot_people SET language = %(language)s
 WHERE bot_id = %(bot_id)s AND person_id = %(person_id)s;

-- bot_texts --
-- The texts owners wrote (migration 0044), of one bot or of all, with the version of each bot's
-- texts they make up: one statement, so the texts and their version are of one moment.
SELECT b.id AS bot_id, b.texts_version, t.key, t.language, t.text
  FROM bots b
  LEFT JOIN bot_texts t ON t.bot_id = b.id
 WHERE %(bot_id)s::bigint IS NULL OR b.id = %(bot_id)s::bigint
 ORDER BY b.id;
