-- A caller's key for the invoice it asked for (botedge: the update that asked). Asked again
-- after its answer was lost (a timeout, billing restarting), billing answers the same invoice,
-- not a second one.
ALTER TABLE invoices ADD COLUMN request_key text
    CONSTRAINT invoices_request_key_key UNIQUE
    CHECK (request_key ~ '^[A-Za-z0-9:_-]{1,64}$');

-- An update whose person was told "we are on it" while a dependency was down: told once, and
-- its outcome then comes as a new message rather than an edit they would not notice.
ALTER TABLE inbox ADD COLUMN told_waiting boolean NOT NULL DEFAULT false;

-- A TRON claim TronGrid could not be asked about: the advertiser is told once that it waits.
ALTER TABLE ad_order_events DROP CONSTRAINT ad_order_events_kind_check;
ALTER TABLE ad_order_events ADD CONSTRAINT ad_order_events_kind_check CHECK (kind IN (
    'approved', 'credited', 'part_paid', 'paid', 'claim_rejected', 'claim_waiting', 'reminder',
    'expired'));
