-- The language a bot speaks to each person: the person's own choice (/language), else
-- Telegram's language for them when the bot has it, else the bot's default, set by the owner.
ALTER TABLE bots ADD COLUMN default_language text NOT NULL DEFAULT 'en'
    CHECK (default_language IN ('en', 'fa', 'ru', 'ar'));
ALTER TABLE bot_people ADD COLUMN language text
    CHECK (language IN ('en', 'fa', 'ru', 'ar'));
