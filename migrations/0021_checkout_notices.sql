-- A checkout that did not end in a payment tells the person, with a way to try again: a
-- gateway's decline (`checkout_declined`, once per invoice and status) or an invoice left to
-- expire unpaid (`checkout_lapsed`, once per invoice). Both are notices as expiry notices
-- are: no membership event behind them, a unique `notice_key` that sends each once.
ALTER TABLE access_events DROP CONSTRAINT access_events_kind_check;
ALTER TABLE access_events ADD CONSTRAINT access_events_kind_check
    CHECK (kind IN ('grant', 'reminder', 'revoke', 'expiry_notice', 'checkout_declined',
                    'checkout_lapsed'));
ALTER TABLE access_events DROP CONSTRAINT access_events_notice;
ALTER TABLE access_events ADD CONSTRAINT access_events_notice
    CHECK ((kind IN ('expiry_notice', 'checkout_declined', 'checkout_lapsed'))
               = (notice_key IS NOT NULL)
           AND (kind = 'expiry_notice') = (notice_hours IS NOT NULL));
