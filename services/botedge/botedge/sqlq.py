"""The bot edge's named SQL, parsed once."""

from __future__ import annotations

from shared import sqlfile

Q = sqlfile.load("botedge")
