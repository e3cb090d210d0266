"""The owner's panel API (JWT) and the panel page."""
