-- "I have a coupon" under a pay link: the person's next message is the code.
ALTER TABLE conversations DROP CONSTRAINT conversations_step_check;
ALTER TABLE conversations ADD CONSTRAINT conversations_step_check
    CHECK (step IN ('ad', 'confirm', 'which_order', 'coupon'));
