-- A bot the owner removes stays for its history (people, inbox, payments name it) but is no
-- longer served or counted: status `removed`, and when. Adding its token again brings it back.
ALTER TABLE bots DROP CONSTRAINT bots_status_check;
ALTER TABLE bots ADD CONSTRAINT bots_status_check
    CHECK (status IN ('active', 'paused', 'removed'));
ALTER TABLE bots ADD COLUMN removed_at timestamptz;
ALTER TABLE bots ADD CONSTRAINT bots_removed_when
    CHECK ((status = 'removed') = (removed_at IS NOT NULL));
