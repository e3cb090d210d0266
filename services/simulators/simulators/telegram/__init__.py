"""A Bot API server on loopback that answers in Telegram's shapes, for the demo and the tests."""
