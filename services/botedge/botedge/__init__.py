"""Telegram in and out: inbox, workers, outbox, senders and the forced-join gate."""
