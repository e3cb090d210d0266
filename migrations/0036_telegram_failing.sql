-- When Telegram began failing for a bot, as the bot's sender saw it: set when the bot's breaker
-- opens, cleared by the next call Telegram answers. The panel's dashboard says "Telegram
-- unreachable for @bot since ..." from it.
ALTER TABLE bots ADD COLUMN telegram_failing_since timestamptz;
