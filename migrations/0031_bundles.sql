-- Bundles: a plan of kind `bundle` covers several paid channels of one currency, its own
-- channel among them; one payment extends the person's membership of each. An invoice copies
-- the channels when it is made, as it copies the price: a later edit changes later invoices.
CREATE TABLE plan_channels (
    plan_id    integer NOT NULL REFERENCES plans (id),
    channel_id integer NOT NULL REFERENCES channels (id),
    PRIMARY KEY (plan_id, channel_id)
);
-- The bot offers a bundle in each channel it covers.
CREATE INDEX plan_channels_by_channel ON plan_channels (channel_id, plan_id);

-- Each bundle's channels in ascending order, their titles in that order, and whether every one
-- of them is still paid (a bundle is sold only then).
CREATE VIEW bundle_channels AS
SELECT pc.plan_id,
       array_agg(pc.channel_id ORDER BY pc.channel_id) AS channel_ids,
       array_agg(c.title ORDER BY pc.channel_id) AS titles,
       bool_and(c.is_paid) AS all_paid
  FROM plan_channels pc
  JOIN channels c ON c.id = pc.channel_id
 GROUP BY pc.plan_id;

ALTER TABLE plans ADD CONSTRAINT plans_bundle_not_default CHECK (kind <> 'bundle' OR NOT is_default);

-- NULL for one channel's invoice; a bundle's: its channels in ascending order, the invoice's
-- own among them, so the locks are taken in that order and two bundles cannot deadlock.
ALTER TABLE invoices
    ADD COLUMN bundle_channel_ids integer[]
        CHECK (bundle_channel_ids IS NULL
               OR (cardinality(bundle_channel_ids) BETWEEN 2 AND 50
                   AND channel_id = ANY (bundle_channel_ids)
                   AND array_position(bundle_channel_ids, NULL) IS NULL));

-- A payment extends each membership it pays for once: per (payment, channel).
DROP INDEX membership_events_one_per_payment;
CREATE UNIQUE INDEX membership_events_one_per_payment_channel
    ON membership_events (payment_id, channel_id) WHERE payment_id IS NOT NULL;
