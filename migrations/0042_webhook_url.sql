-- Where Telegram was last told to send each bot's updates: the api points every active
-- webhook bot whose address differs from PUBLIC_BASE_URL's (moved to another host or
-- proxy) at the new one when it starts. Unknown for bots pointed before: each is pointed once.
ALTER TABLE bots ADD COLUMN webhook_url text;
