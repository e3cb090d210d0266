-- Discount coupons: a percentage or a fixed amount off an invoice, until an expiry, up to a
-- total and a per-person number of uses, for some plans and some customers. panel-api writes
-- `coupons`; billing redeems one when it makes an invoice, under the coupon row's lock.
CREATE TABLE coupons (
    id               integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- As the owner wrote it; matched without regard to case.
    code             text        NOT NULL CHECK (code ~ '^[A-Za-z0-9_-]{3,32}$'),
    percent_off      integer     CHECK (percent_off BETWEEN 1 AND 100),
    -- Minor units of `currency`: only plans priced in it take the coupon.
    amount_off_minor bigint      CHECK (amount_off_minor > 0),
    currency         text        CHECK (currency ~ '^[A-Z]{3}$'),
    expires_at       timestamptz,
    -- NULL: no limit.
    max_redemptions  integer     CHECK (max_redemptions > 0),
    per_person       integer     NOT NULL DEFAULT 1 CHECK (per_person BETWEEN 1 AND 100),
    -- NULL: every plan.
    plan_ids         integer[]   CHECK (cardinality(plan_ids) BETWEEN 1 AND 100),
    -- new: nobody who ever had a membership of the plan's channel; lapsed: whose membership
    -- there has expired.
    customers        text        NOT NULL DEFAULT 'any'
                                 CHECK (customers IN ('any', 'new', 'lapsed', 'new_or_lapsed')),
    active           boolean     NOT NULL DEFAULT true,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz,
    CONSTRAINT coupons_one_discount CHECK ((percent_off IS NULL) <> (amount_off_minor IS NULL)),
    CONSTRAINT coupons_amount_has_currency CHECK ((amount_off_minor IS NULL) = (currency IS NULL))
);
CREATE UNIQUE INDEX coupons_code ON coupons (upper(code));

-- One row per invoice made with a coupon. `seq` is the person's use of it (1 up to the
-- coupon's `per_person`): the key on it is the per-person limit. An invoice that expires
-- unpaid releases its use.
CREATE TABLE coupon_redemptions (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    coupon_id   integer     NOT NULL REFERENCES coupons (id),
    person_id   integer     NOT NULL REFERENCES people (id),
    invoice_id  bigint      NOT NULL REFERENCES invoices (id),
    seq         integer     NOT NULL CHECK (seq BETWEEN 1 AND 100),
    redeemed_at timestamptz NOT NULL,
    released_at timestamptz,
    CONSTRAINT coupon_redemptions_invoice UNIQUE (invoice_id)
);
CREATE UNIQUE INDEX coupon_redemptions_person_use ON coupon_redemptions (coupon_id, person_id, seq)
    WHERE released_at IS NULL;
CREATE INDEX coupon_redemptions_by_coupon ON coupon_redemptions (coupon_id, id);

-- What the invoice was before the coupon: `amount_minor` stays what is to be paid, and what
-- billing's amount check compares against.
ALTER TABLE invoices
    ADD COLUMN list_price_minor bigint  CHECK (list_price_minor > 0),
    ADD COLUMN discount_minor   bigint  NOT NULL DEFAULT 0 CHECK (discount_minor >= 0),
    ADD COLUMN coupon_id        integer REFERENCES coupons (id),
    ADD CONSTRAINT invoices_discount_adds_up
        CHECK (discount_minor = 0 AND coupon_id IS NULL
               OR list_price_minor = amount_minor + discount_minor AND coupon_id IS NOT NULL);
