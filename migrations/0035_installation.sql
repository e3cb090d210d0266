-- This installation's name, minted once: the panel's access tokens carry it as their issuer
-- and audience, so two installations that share a JWT secret by mistake refuse each other's.
CREATE TABLE installation (
    id   boolean PRIMARY KEY DEFAULT true CHECK (id),
    name uuid    NOT NULL DEFAULT gen_random_uuid()
);
INSERT INTO installation DEFAULT VALUES;
