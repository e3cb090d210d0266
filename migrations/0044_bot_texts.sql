-- The texts a bot's owner wrote in place of the bot's own (botedge.words: `msg(..., form=)`),
-- one per bot, message key and language. Workers keep them in memory: every change bumps the
-- bot's `texts_version`, which each claimed update carries, and announces the bot on
-- `bot_texts`, so that the next update and the next notice are written in the new words.
CREATE TABLE bot_texts (
    bot_id bigint NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    key text NOT NULL CHECK (key ~ '^[a-z_]+(\.[a-z_]+)*$'),
    language text NOT NULL CHECK (language IN ('en', 'fa', 'ru', 'ar')),
    text text NOT NULL CHECK (length(text) BETWEEN 1 AND 4096),
    updated_at timestamptz NOT NULL,
    updated_by bigint REFERENCES team_members (id) ON DELETE SET NULL,
    PRIMARY KEY (bot_id, key, language)
);

ALTER TABLE bots ADD COLUMN texts_version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION botedge_bot_texts_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changed bigint := COALESCE(NEW.bot_id, OLD.bot_id);
BEGIN
    UPDATE bots SET texts_version = texts_version + 1 WHERE id = changed;
    PERFORM pg_notify('bot_texts', changed::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER bot_texts_changed AFTER INSERT OR UPDATE OR DELETE ON bot_texts
    FOR EACH ROW EXECUTE FUNCTION botedge_bot_texts_changed();
