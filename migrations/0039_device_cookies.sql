-- Sign-ins throttled by the browser too (OWASP's device cookies): a failure made with a
-- valid device cookie of the account is the device's, counted apart from strangers', so a
-- stranger's guesses cannot keep the owner's own browser out.
ALTER TABLE login_failures ADD COLUMN device text;
CREATE INDEX login_failures_by_device ON login_failures (device, at) WHERE device IS NOT NULL;
