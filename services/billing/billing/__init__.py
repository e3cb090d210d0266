"""Payments, memberships, the expiry sweep and TRON verification."""
