-- A worker's claim on an update is checked inside the statement that finishes it: a lost
-- claim fails that statement (SQLSTATE GH001), so the transaction's COMMIT can go with it in
-- one round trip and can never commit the work of a claim taken over.
CREATE FUNCTION botedge_claim_held(held boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT held THEN
        RAISE EXCEPTION 'the claim on this update was taken over' USING ERRCODE = 'GH001';
    END IF;
    RETURN true;
END
$$;
