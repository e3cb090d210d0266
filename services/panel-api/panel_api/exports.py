"""Lists as CSV files to download: the list's own filters and sort, every row, streamed from a
server-side cursor, so an export of any length holds one batch in memory."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from panel_api import store
from panel_api.access import Listing
from shared.web import runtime

# A column: a field of the row by its name, or a heading and how it is read from a row.
Column = str | tuple[str, Callable[[dict[str, Any]], Any]]

# A spreadsheet runs a cell that starts with one of these as a formula: a name such as
# "=HYPERLINK(...)" is written with a quote before it (OWASP's advice for CSV injection).
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat()
    if isinstance(value, int | dt.date):
        return str(value)
    text = str(value)
    return f"'{text}" if text.startswith(_FORMULA) else text


def person(part: str) -> Callable[[dict[str, Any]], Any]:
    """A part of the `person` object the lists join (username, first_name, last_name)."""
    return lambda row: (row["person"] or {}).get(part)


def download(
    request: Request,
    listing: Listing,
    sort: str,
    params: dict[str, Any],
    columns: Iterable[Column],
    name: str,
    today: dt.date,
) -> StreamingResponse:
    read = tuple(
        (column, _field(column)) if isinstance(column, str) else column for column in columns
    )

    async def lines() -> AsyncIterator[str]:
        # The byte-order mark makes spreadsheet programs read the file as UTF-8 (Persian names).
        yield "\ufeff" + _line([heading for heading, _ in read])
        async with store.connection(runtime(request).pool) as conn:
            batch: list[str] = []
            async for row in listing.every_row(conn, sort, params):
                batch.append(_line([cell(value(row)) for _, value in read]))
                if len(batch) == 200:
                    yield "".join(batch)
                    batch = []
            yield "".join(batch)

    filename = f"{name}-{today.isoformat()}.csv"
    return StreamingResponse(
        lines(),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Cache-Control": "no-store",
        },
    )


def _field(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: row[name]


def _line(values: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(values)
    return out.getvalue()
